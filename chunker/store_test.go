package chunker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker/internal/heldlog"
)

// block returns the bytes of block i of stream data.
func block(m *Manifest, data []byte, i int) []byte {
	off, n := m.BlockSpan(i)
	return data[off : off+int64(n)]
}

// checkStore checks that every held block reads back right and verifies, and that
// the count matches.
func checkStore(t *testing.T, s *Store, data []byte) {
	t.Helper()
	m := s.Manifest()
	n := 0
	var buf []byte
	for i := range m.BlockCount() {
		if !s.Has(i) {
			continue
		}
		n++
		var err error
		buf, err = s.ReadBlock(i, buf)
		if err != nil {
			t.Fatalf("ReadBlock(%d): %v", i, err)
		}
		if !bytes.Equal(buf, block(m, data, i)) {
			t.Fatalf("block %d reads back wrong", i)
		}
	}
	if n != s.HeldCount() || len(s.Held()) != n || len(s.Missing()) != m.BlockCount()-n {
		t.Fatalf("held count %d, Held %d, Missing %d, counted %d", s.HeldCount(), len(s.Held()), len(s.Missing()), n)
	}
}

func TestStoreRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int64
		opts  []StoreOption
	}{
		{"one file", []int64{10*MinBlockSize + 300}, nil},
		{"tree", []int64{100, 0, 3000, 1, 5000, 2048}, nil},
		{"batched", []int64{20*MinBlockSize + 1, 77}, []StoreOption{WithSyncEvery(7)}},
		{"empty", []int64{0}, nil},
		{"nothing", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, data := testManifest(t, MinBlockSize, tc.sizes...)
			dir := t.TempDir()
			s, err := CreateStore(context.Background(), dir, m, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			order := rand.New(rand.NewPCG(3, 4)).Perm(m.BlockCount())
			half := order[:len(order)/2]
			for _, i := range half {
				if err := s.PutBlock(i, block(m, data, i)); err != nil {
					t.Fatal(err)
				}
			}
			checkStore(t, s, data)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = OpenStore(context.Background(), dir, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if s.HeldCount() != len(half) {
				t.Fatalf("reopened with %d blocks, want %d", s.HeldCount(), len(half))
			}
			checkStore(t, s, data)
			for _, i := range order {
				if err := s.PutBlock(i, block(m, data, i)); err != nil {
					t.Fatal(err)
				}
			}
			if !s.Complete() {
				t.Fatal("not complete after every block")
			}
			s.Close()
			// The output files hold the original bytes, with their modes.
			var stream []byte
			for _, f := range m.Files() {
				b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
				if err != nil {
					t.Fatal(err)
				}
				info, _ := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path)))
				if info.Mode().Perm() != os.FileMode(f.Mode) {
					t.Errorf("%s: mode %v, want %#o", f.Path, info.Mode(), f.Mode)
				}
				stream = append(stream, b...)
			}
			if !bytes.Equal(stream, data) {
				t.Fatal("output files differ from the original")
			}
			s, err = OpenStore(context.Background(), dir, WithVerify())
			if err != nil || !s.Complete() {
				t.Fatalf("verified reopen: %v, complete %v", err, s != nil && s.Complete())
			}
			s.Close()
		})
	}
}

func TestStoreBadInput(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 5*MinBlockSize+5)
	dir := t.TempDir()
	s, err := CreateStore(context.Background(), dir, m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutBlock(1, block(m, data, 1)); err != nil {
		t.Fatal(err)
	}
	wrong := bytes.Clone(block(m, data, 2))
	wrong[7] ^= 1
	for _, tc := range []struct {
		name string
		i    int
		data []byte
		want error
	}{
		{"wrong bytes", 2, wrong, ErrBadBlock},
		{"another block's bytes", 3, block(m, data, 2), ErrBadBlock},
		{"short", 5, block(m, data, 5)[:4], ErrBadBlock},
		{"negative index", -1, block(m, data, 0), ErrBadIndex},
		{"index past the end", 6, block(m, data, 0), ErrBadIndex},
		{"wrong bytes for a held block", 1, wrong, ErrBadBlock},
	} {
		if err := s.PutBlock(tc.i, tc.data); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	// Nothing was lost or added, and the held block still reads back right.
	if s.HeldCount() != 1 || !s.Has(1) {
		t.Fatalf("held %v after bad puts", s.Held())
	}
	checkStore(t, s, data)
	if _, err := s.ReadBlock(2, nil); !errors.Is(err, ErrNotHeld) {
		t.Errorf("ReadBlock of a missing block: %v", err)
	}
	if _, err := s.ReadBlock(99, nil); !errors.Is(err, ErrBadIndex) {
		t.Errorf("ReadBlock(99): %v", err)
	}
	// Idempotent put.
	if err := s.PutBlock(1, block(m, data, 1)); err != nil || s.HeldCount() != 1 {
		t.Fatalf("second put: %v, held %d", err, s.HeldCount())
	}
}

func TestOpenOrCreateStore(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 3000)
	other, _ := testManifest(t, MinBlockSize, 3001)
	dir := t.TempDir()
	s, err := OpenOrCreateStore(context.Background(), dir, m)
	if err != nil {
		t.Fatal(err)
	}
	s.PutBlock(0, block(m, data, 0))
	s.Close()
	snap := snapshot(t, dir)
	if _, err := OpenOrCreateStore(context.Background(), dir, other); !errors.Is(err, ErrManifestMismatch) {
		t.Fatalf("other manifest: err = %v, want ErrManifestMismatch", err)
	}
	if _, err := CreateStore(context.Background(), dir, m); !errors.Is(err, ErrExists) {
		t.Fatalf("create over a store: err = %v, want ErrExists", err)
	}
	if got := snapshot(t, dir); got != snap {
		t.Fatalf("a refused open changed the folder:\n%s\nwas\n%s", got, snap)
	}
	s, err = OpenOrCreateStore(context.Background(), dir, m)
	if err != nil || s.HeldCount() != 1 || !s.Has(0) {
		t.Fatalf("resume: %v", err)
	}
	s.Close()
	if _, err := OpenStore(context.Background(), t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty folder: %v", err)
	}
	if _, err := OpenStore(context.Background(), filepath.Join(dir, "nope")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing folder: %v", err)
	}
}

// snapshot lists every file under dir with its size and hash.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var out bytes.Buffer
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			fmt.Fprintf(&out, "%s %d %x %v\n", p, info.Size(), HashBlock(b), info.Mode())
		}
		return nil
	})
	return out.String()
}

func TestCreateStoreKeepsExistingFiles(t *testing.T) {
	m, _ := testManifest(t, MinBlockSize, 10, 20)
	dir := t.TempDir()
	mine := filepath.Join(dir, "tree", "f001.bin")
	os.MkdirAll(filepath.Dir(mine), 0o755)
	os.WriteFile(mine, []byte("precious"), 0o644)
	if _, err := CreateStore(context.Background(), dir, m); !errors.Is(err, ErrExists) {
		t.Fatalf("err = %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "precious" {
		t.Fatal("an existing file was overwritten")
	}
	if _, err := os.Stat(filepath.Join(dir, MetaDir)); err == nil {
		t.Fatal("a refused create left metadata behind")
	}
}

// TestStoreEscape checks that output files cannot leave the store folder through a
// symbolic link planted in it.
func TestStoreEscape(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 2000)
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "tree")); err != nil {
		t.Fatal(err)
	}
	s, err := CreateStore(context.Background(), dir, m)
	if err == nil {
		err = s.PutBlock(0, block(m, data, 0))
		s.Close()
	}
	if err == nil {
		t.Fatal("store wrote through a symlink out of its folder")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files appeared outside the store: %v", entries)
	}
}

func TestStoreTornLog(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 8*MinBlockSize)
	dir := t.TempDir()
	s, _ := CreateStore(context.Background(), dir, m)
	for i := range 4 {
		s.PutBlock(i, block(m, data, i))
	}
	s.Close()
	logPath := filepath.Join(s.StateDir(), heldFile)
	orig, _ := os.ReadFile(logPath)
	for _, tc := range []struct {
		name string
		log  []byte
		want int
	}{
		{"intact", orig, 4},
		{"torn last record", orig[:len(orig)-5], 3},
		{"garbage tail", append(bytes.Clone(orig), bytes.Repeat([]byte{0xab}, 40)...), 4},
		{"zeroed tail", append(bytes.Clone(orig), make([]byte, 32)...), 4},
		{"garbage record inside", func() []byte {
			b := bytes.Clone(orig)
			copy(b[heldlog.HeaderSize+heldlog.RecordSize:], bytes.Repeat([]byte{0x5a}, heldlog.RecordSize))
			return b
		}(), 3},
		{"record for another manifest", func() []byte {
			b := bytes.Clone(orig)
			return heldlog.AppendRecord(b, heldlog.Seed(ID{1}), 6, heldlog.Held)
		}(), 4},
		{"index out of range", heldlog.AppendRecord(bytes.Clone(orig), heldlog.Seed(m.ID()), 100, heldlog.Held), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(logPath, tc.log, 0o644)
			s, err := OpenStore(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.HeldCount() != tc.want {
				t.Fatalf("held %v, want %d blocks", s.Held(), tc.want)
			}
			checkStore(t, s, data)
			// New records still land on record boundaries.
			if err := s.PutBlock(7, block(m, data, 7)); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s2, err := OpenStore(context.Background(), dir)
			if err != nil || !s2.Has(7) || s2.HeldCount() != tc.want+1 {
				t.Fatalf("after a put: %v, held %v", err, s2.Held())
			}
			s2.Close()
		})
	}
	os.WriteFile(logPath, orig[:10], 0o644)
	if _, err := OpenStore(context.Background(), dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("torn header: %v", err)
	}
	os.WriteFile(logPath, heldlog.Header(ID{1}), 0o644)
	if _, err := OpenStore(context.Background(), dir); !errors.Is(err, ErrManifestMismatch) {
		t.Fatalf("held log of another manifest: %v", err)
	}
	s, err := OpenStore(context.Background(), dir, WithVerify())
	if err != nil || s.HeldCount() != 8-3 {
		// Blocks 0..3 and 7 were written in the loop's first rounds; 4..6 never.
		t.Fatalf("verify rebuild: %v, held %v", err, s.Held())
	}
	s.Close()
}

func TestStoreDamagedFiles(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 3*MinBlockSize, 3*MinBlockSize)
	dir := t.TempDir()
	s, _ := CreateStore(context.Background(), dir, m)
	for i := range m.BlockCount() {
		s.PutBlock(i, block(m, data, i))
	}
	s.Close()
	f0 := filepath.Join(dir, "tree", "f000.bin")
	f1 := filepath.Join(dir, "tree", "f001.bin")
	os.Chmod(f0, 0o644)
	os.Chmod(f1, 0o644)

	// Bytes changed behind the store's back: Verify finds and drops them.
	fh, _ := os.OpenFile(f1, os.O_WRONLY, 0)
	fh.WriteAt([]byte("oops"), 100)
	fh.Close()
	s, err := OpenStore(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.Corrupt) != "[3]" || rep.Held != 5 || rep.Missing != 1 || s.Has(3) {
		t.Fatalf("report %+v", rep)
	}
	s.Close()
	s, _ = OpenStore(context.Background(), dir)
	if s.Has(3) || s.HeldCount() != 5 {
		t.Fatalf("the dropped block came back: %v", s.Held())
	}
	s.Close()

	// A file truncated behind the store's back: its blocks are dropped on open.
	os.Truncate(f0, 10)
	s, err = OpenStore(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.Held()) != "[4 5]" {
		t.Fatalf("held %v after truncation, want [4 5]", s.Held())
	}
	checkStore(t, s, data)
	s.Close()
	// And a deleted file is recreated.
	os.Remove(f1)
	s, err = OpenStore(context.Background(), dir)
	if err != nil || s.HeldCount() != 0 {
		t.Fatalf("after delete: %v, held %v", err, s.Held())
	}
	for i := range m.BlockCount() {
		if err := s.PutBlock(i, block(m, data, i)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = OpenStore(context.Background(), dir, WithVerify())
	if err != nil || !s.Complete() {
		t.Fatalf("repaired store: %v", err)
	}
	s.Close()
}

func TestSeedStore(t *testing.T) {
	dir := t.TempDir()
	root := writeTree(t, dir, "seed", map[string][]byte{"a": randBytes(1, 5000), "b/c": randBytes(2, 100), "d": nil})
	m, err := ChunkPath(context.Background(), root, MinBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, dir)
	s, err := SeedStore(context.Background(), root, m, WithVerify())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Complete() || !s.ReadOnly() {
		t.Fatal("seed store is not complete and read-only")
	}
	var stream []byte
	for i := range m.BlockCount() {
		b, err := s.ReadBlock(i, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyBlock(m, i, b); err != nil {
			t.Fatal(err)
		}
		stream = append(stream, b...)
	}
	if err := s.PutBlock(0, stream[:MinBlockSize]); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("PutBlock on a seed store: %v, want ErrReadOnly", err)
	}
	rep, err := s.Verify(context.Background())
	if err != nil || rep.Held != m.BlockCount() || len(rep.Corrupt) != 0 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	s.Close()
	if got := snapshot(t, dir); got != snap {
		t.Fatal("seeding changed the files")
	}
	// A changed size is caught at once, changed bytes with WithVerify.
	os.WriteFile(filepath.Join(root, "b", "c"), randBytes(3, 100), 0o644)
	if _, err := SeedStore(context.Background(), root, m, WithVerify()); !errors.Is(err, ErrBadBlock) {
		t.Fatalf("changed bytes: %v", err)
	}
	os.WriteFile(filepath.Join(root, "b", "c"), randBytes(3, 101), 0o644)
	if _, err := SeedStore(context.Background(), root, m); !errors.Is(err, ErrManifestMismatch) {
		t.Fatalf("changed size: %v", err)
	}
	if _, err := SeedStore(context.Background(), filepath.Join(dir, "elsewhere"), m); !errors.Is(err, ErrManifestMismatch) {
		t.Fatalf("wrong root: %v", err)
	}
}

// TestStoreConcurrent puts blocks from several goroutines while others read held
// blocks (run with -race).
func TestStoreConcurrent(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 64*MinBlockSize+100, 5*MinBlockSize)
	for _, every := range []int{1, 5} {
		s, err := CreateStore(context.Background(), t.TempDir(), m, WithSyncEvery(every))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, i := range rand.New(rand.NewPCG(uint64(w), 0)).Perm(m.BlockCount()) {
					if err := s.PutBlock(i, block(m, data, i)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var buf []byte
				for k := 0; !s.Complete(); k++ {
					i := k % m.BlockCount()
					if !s.Has(i) {
						continue
					}
					var err error
					if buf, err = s.ReadBlock(i, buf); err != nil || !bytes.Equal(buf, block(m, data, i)) {
						errs <- fmt.Errorf("read %d: %v", i, err)
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
		if !s.Complete() {
			t.Fatal("not complete")
		}
		s.Close()
	}
}

func TestStoreClosed(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 3000)
	s, _ := CreateStore(context.Background(), t.TempDir(), m)
	s.PutBlock(0, block(m, data, 0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.PutBlock(1, block(m, data, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("PutBlock after Close: %v", err)
	}
	if _, err := s.ReadBlock(0, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadBlock after Close: %v", err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

// TestWithSyncBytes checks that a group given in bytes becomes whole blocks (at
// least one, at most the content's), that the last of WithSyncEvery and
// WithSyncBytes wins, and that the blocks of a group are recorded together.
func TestWithSyncBytes(t *testing.T) {
	m, data := testManifest(t, 2*MinBlockSize, 20*MinBlockSize) // 10 blocks
	for _, tc := range []struct {
		name string
		opts []StoreOption
		want int
	}{
		{"three blocks", []StoreOption{WithSyncBytes(6 * MinBlockSize)}, 3},
		{"rounds down", []StoreOption{WithSyncBytes(7*MinBlockSize - 1)}, 3},
		{"under a block", []StoreOption{WithSyncBytes(MinBlockSize)}, 1},
		{"more than the content", []StoreOption{WithSyncBytes(1 << 40)}, 10},
		{"blocks after bytes", []StoreOption{WithSyncBytes(6 * MinBlockSize), WithSyncEvery(5)}, 5},
		{"bytes after blocks", []StoreOption{WithSyncEvery(5), WithSyncBytes(4 * MinBlockSize)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := CreateStore(context.Background(), t.TempDir(), m, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.cfg.syncEvery != tc.want {
				t.Fatalf("blocks per fsync: got %d, want %d", s.cfg.syncEvery, tc.want)
			}
			for i := range tc.want {
				if err := s.PutBlock(i, block(m, data, i)); err != nil {
					t.Fatal(err)
				}
				s.mu.RLock()
				pending := len(s.pending)
				s.mu.RUnlock()
				if want := (i + 1) % tc.want; pending != want {
					t.Fatalf("after %d blocks: %d pending, want %d", i+1, pending, want)
				}
			}
		})
	}
	if _, err := CreateStore(context.Background(), t.TempDir(), m, WithSyncBytes(0)); err == nil {
		t.Fatal("WithSyncBytes(0): no error")
	}
}
