package samplefile

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// TestWriteAndPrefill: the same seed writes the same bytes, another seed
// others; a prefilled store holds exactly the blocks asked for.
func TestWriteAndPrefill(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for _, f := range []struct {
		path string
		seed uint64
	}{{a, 1}, {b, 1}, {c, 2}} {
		if err := Write(f.path, 10000, f.seed); err != nil {
			t.Fatal(err)
		}
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	dc, _ := os.ReadFile(c)
	if len(da) != 10000 || !bytes.Equal(da, db) || bytes.Equal(da, dc) {
		t.Fatalf("sizes %d %d %d; same seed equal %v, other seed equal %v", len(da), len(db), len(dc), bytes.Equal(da, db), bytes.Equal(da, dc))
	}
	m, err := chunker.ChunkPath(context.Background(), a, 1024)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Prefill(a, m, filepath.Join(dir, "store"), 2, 5)
	if err != nil || n != 3 {
		t.Fatalf("Prefill: %d blocks, %v; want 3", n, err)
	}
}
