package chunker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// changeFile overwrites bytes of the file at off and gives it a new
// modification time (set explicitly: the test does not depend on the
// file system's time granularity).
func changeFile(t *testing.T, name string, off int64, b []byte, mtime time.Time) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(name, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// TestCheckSources: a seed store notices that a source file changed: the
// blocks that no longer match are dropped (not held, not read), those that
// match again are held again, a read after a change re-hashes the file at
// once (never returning changed bytes), and a truncated file loses its
// blocks.
func TestCheckSources(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bs := MinBlockSize
	a, b := randBytes(1, 8*bs), randBytes(2, 3*bs) // blocks 0-7 and 8-10
	root := writeTree(t, dir, "seed", map[string][]byte{"a": a, "b": b})
	m, err := ChunkPath(ctx, root, bs)
	if err != nil {
		t.Fatal(err)
	}
	s, err := SeedStore(ctx, root, m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(wantFiles []string, wantDropped, wantRestored []int) {
		t.Helper()
		ch, err := s.CheckSources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ch.Files, wantFiles) || !slices.Equal(ch.Dropped, wantDropped) || !slices.Equal(ch.Restored, wantRestored) {
			t.Fatalf("CheckSources = %+v; want files %v, dropped %v, restored %v", ch, wantFiles, wantDropped, wantRestored)
		}
	}
	check(nil, nil, nil)
	when := time.Now().Add(-time.Hour)

	// Block 2 changes: dropped, no longer held nor read.
	fa := filepath.Join(root, "a")
	changeFile(t, fa, int64(2*bs+10), []byte("changed"), when)
	check([]string{"seed/a"}, []int{2}, nil)
	if s.Has(2) || s.HeldCount() != 10 || slices.Contains(s.Held(), 2) {
		t.Fatalf("block 2 still held: %v", s.Held())
	}
	if _, err := s.ReadBlock(2, nil); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("ReadBlock of a dropped block: %v", err)
	}
	check(nil, nil, nil) // nothing new

	// Its bytes come back: held again.
	changeFile(t, fa, int64(2*bs+10), a[2*bs+10:2*bs+17], when.Add(time.Minute))
	check([]string{"seed/a"}, nil, []int{2})
	if !s.Has(2) || s.HeldCount() != 11 {
		t.Fatal("block 2 not held again")
	}

	// Blocks 5 and 6 change and 5 is read before a check: ReadBlock sees
	// the file changed, re-hashes it and drops both at once; block 4 of the
	// same file still matches and is read.
	changeFile(t, fa, int64(6*bs-1), []byte("xy"), when.Add(2*time.Minute))
	if _, err := s.ReadBlock(5, nil); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("ReadBlock of a changed block: %v", err)
	}
	if s.Has(5) || s.Has(6) {
		t.Fatal("the changed blocks are still held after a read")
	}
	if got, err := s.ReadBlock(4, nil); err != nil || !slices.Equal(got, a[4*bs:5*bs]) {
		t.Fatalf("ReadBlock of an unchanged block of a changed file: %v", err)
	}
	check([]string{"seed/a"}, []int{5, 6}, nil)

	// b is cut to one block: the two past its new end go.
	if err := os.Truncate(filepath.Join(root, "b"), int64(bs)); err != nil {
		t.Fatal(err)
	}
	check([]string{"seed/b"}, []int{9, 10}, nil)
	if s.HeldCount() != 7 {
		t.Fatalf("held %v, want all but 5, 6, 9 and 10", s.Held())
	}
}

// TestCheckSourcesNotSeed: a store that is not a seed store has no sources
// to check.
func TestCheckSourcesNotSeed(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 3*MinBlockSize)
	s, err := CreateStore(context.Background(), t.TempDir(), m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fill(t, s, data, all)
	if ch, err := s.CheckSources(context.Background()); err != nil || ch.Changed() {
		t.Fatalf("CheckSources of a fetch's store = %+v, %v", ch, err)
	}
}
