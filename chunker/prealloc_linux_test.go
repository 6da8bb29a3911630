//go:build linux

package chunker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// smallDisk mounts a tmpfs of size bytes in a new folder and returns the
// folder (unmounted at the end of the test); it skips the test where it
// cannot (not root).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mount a %s tmpfs: %v (needs root)", size, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestCreateStoreNoSpace: a store whose files do not fit on the disk fails
// as it is created, with ErrNoSpace, not when its blocks are written; one
// that fits has its files' space reserved and takes every block.
func TestCreateStoreNoSpace(t *testing.T) {
	disk := smallDisk(t, "1m")
	ctx := context.Background()

	big, _ := testManifest(t, 64<<10, 256<<10, 2<<20)
	_, err := CreateStore(ctx, filepath.Join(disk, "big"), big)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("CreateStore of 2.25 MiB on a 1 MiB disk: %v, want ErrNoSpace", err)
	}
	t.Log(err)
	if err := os.RemoveAll(filepath.Join(disk, "big")); err != nil {
		t.Fatal(err)
	}

	m, data := testManifest(t, 64<<10, 100<<10, 300<<10)
	dir := filepath.Join(disk, "fits")
	s, err := CreateStore(ctx, dir, m)
	if err != nil {
		t.Fatalf("CreateStore of 400 KiB on a 1 MiB disk: %v", err)
	}
	defer s.Close()
	for k, f := range m.Files() {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, f.Path), &st); err != nil {
			t.Fatal(err)
		}
		if st.Blocks*512 < f.Size {
			t.Errorf("file %d: %d bytes reserved of %d", k, st.Blocks*512, f.Size)
		}
	}
	bs := m.BlockSize()
	for i := range m.BlockCount() {
		if err := s.PutBlock(i, data[i*bs:min((i+1)*bs, len(data))]); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	if !s.Complete() {
		t.Error("the store that fits is not complete")
	}
}
