package chunker

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
)

// TestView: a view of version 2 over a store of version 1 holds the blocks
// the two share (all but those around the edit), reads them from the store
// of version 1 with version 2's indices, and closing it leaves that store open.
func TestView(t *testing.T) {
	old := randBytes(30, 2<<20)
	data := insertAt(old, 1<<20, randBytes(31, 100))
	m1 := chunkBytes(t, "f", old, smallCDC)
	m2 := chunkBytes(t, "f", data, smallCDC)
	s1, err := CreateFileStore(ctxb(), filepath.Join(t.TempDir(), "v1"), m1)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	fill(t, s1, old, all)
	v, err := NewView(m2, s1)
	if err != nil {
		t.Fatal(err)
	}
	if miss := len(v.Missing()); miss == 0 || miss > 3 || !v.IsView() || !v.ReadOnly() {
		t.Fatalf("view: %d missing of %d, view %v, read-only %v", miss, m2.BlockCount(), v.IsView(), v.ReadOnly())
	}
	for _, i := range v.Held() {
		got, err := v.ReadBlock(i, nil)
		if err != nil || !bytes.Equal(got, block(m2, data, i)) {
			t.Fatalf("block %d read through the view: %v", i, err)
		}
	}
	if _, err := v.ReadBlock(v.Missing()[0], nil); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a block the view lacks: %v, want ErrNotHeld", err)
	}
	if err := v.PutBlock(v.Missing()[0], block(m2, data, v.Missing()[0])); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("PutBlock on a view: %v, want ErrReadOnly", err)
	}
	if _, err := NewView(m1, v); err == nil {
		t.Fatal("a view of a view was made")
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.ReadBlock(0, nil); err != nil {
		t.Fatalf("the store under a closed view: %v", err)
	}
}
