package chunker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// A complete store may have opened a file read-only (its final mode can be
// read-only, which only a non-root user sees as EPERM, so the handle is planted
// here); after Verify drops a corrupt block of it, putting the block again
// reopens the file for writing instead of failing on the read-only handle.
func TestStorePutAfterReadOnlyHandle(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 3*MinBlockSize)
	dir := t.TempDir()
	s, err := CreateStore(context.Background(), dir, m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range m.BlockCount() {
		if err := s.PutBlock(i, block(m, data, i)); err != nil {
			t.Fatal(err)
		}
	}
	name := filepath.Join(dir, filepath.FromSlash(m.Files()[0].Path))
	// Damage block 1 through another handle, and plant a read-only handle.
	fh, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteAt([]byte{^data[MinBlockSize+5]}, MinBlockSize+5)
	fh.Close()
	ro, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	if old := s.files[0]; old != nil {
		old.Close()
	} else {
		s.nopen++
	}
	s.files[0], s.rdonly[0] = ro, true
	s.mu.Unlock()
	rep, err := s.Verify(context.Background())
	if err != nil || len(rep.Corrupt) != 1 || rep.Corrupt[0] != 1 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if err := s.PutBlock(1, block(m, data, 1)); err != nil {
		t.Fatalf("put after a read-only handle: %v", err)
	}
	checkStore(t, s, data)
	if !s.Complete() {
		t.Fatal("store not complete again")
	}
}

// Once Close has closed the files, a put or read still in flight opens no new
// file handle (it would never be closed).
func TestStoreNoFileOpenedAfterClose(t *testing.T) {
	m, _ := testManifest(t, MinBlockSize, 2*MinBlockSize)
	s, err := CreateStore(context.Background(), t.TempDir(), m)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.file(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("file after Close: %v, want ErrClosed", err)
	}
	if s.files[0] != nil {
		t.Fatal("a file handle was opened after Close")
	}
}

// A store keeps about maxOpen output files open, however many files its tree
// has (a tree of more files than the process may open used to fail), while
// puts, reads and syncs from several goroutines go on.
func TestStoreBoundsOpenFiles(t *testing.T) {
	sizes := make([]int64, 40)
	for i := range sizes {
		sizes[i] = int64(300 + 97*i)
	}
	m, data := testManifest(t, MinBlockSize, sizes...)
	dir := t.TempDir()
	s, err := CreateStore(context.Background(), dir, m, WithSyncEvery(3))
	if err != nil {
		t.Fatal(err)
	}
	s.maxOpen = 4
	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := w; i < m.BlockCount(); i += workers {
				if err := s.PutBlock(i, block(m, data, i)); err != nil {
					errs <- err
					return
				}
				var err error
				if buf, err = s.ReadBlock(i, buf); err != nil || !bytes.Equal(buf, block(m, data, i)) {
					errs <- fmt.Errorf("read back block %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.mu.Lock()
	open, refs := 0, 0
	for k, f := range s.files {
		if f != nil {
			open++
		}
		refs += int(s.refs[k].Load())
	}
	nopen := s.nopen
	s.mu.Unlock()
	if open != nopen || open > s.maxOpen || refs != 0 {
		t.Fatalf("%d files open (counted %d, limit %d), %d references left", open, nopen, s.maxOpen, refs)
	}
	checkStore(t, s, data)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStore(context.Background(), dir, WithVerify())
	if err != nil || !s.Complete() {
		t.Fatalf("reopen with verify: %v, complete %v", err, s != nil && s.Complete())
	}
	s.Close()
}
