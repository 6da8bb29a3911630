package chunker

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestReadPiece: any piece of a held block, across the files a block
// spans, reads as that slice of the block; a block not held, a piece
// outside its block and a store read whole are errors.
func TestReadPiece(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 100, 0, 3000, 1, 5000, 2048, 3*MinBlockSize+7)
	s, err := CreateStore(context.Background(), t.TempDir(), m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Pieces() {
		t.Fatal("a fetched store is read whole")
	}
	for i := 1; i < m.BlockCount(); i++ { // block 0 stays missing
		if err := s.PutBlock(i, block(m, data, i)); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		i := 1 + rng.IntN(m.BlockCount()-1)
		n := m.BlockLen(i)
		off := rng.IntN(n)
		k := rng.IntN(n - off + 1)
		got := make([]byte, k)
		if err := s.ReadPiece(i, off, got); err != nil {
			t.Fatalf("block %d bytes %d+%d: %v", i, off, k, err)
		}
		if want := block(m, data, i)[off : off+k]; !bytes.Equal(got, want) {
			t.Fatalf("block %d bytes %d+%d: not the block's", i, off, k)
		}
	}
	for _, tc := range []struct {
		name   string
		i, off int
		n      int
		want   error
	}{
		{"not held", 0, 0, 10, ErrNotHeld},
		{"past the block", 1, m.BlockLen(1) - 5, 10, ErrBadIndex},
		{"negative offset", 1, -1, 10, ErrBadIndex},
		{"no such block", m.BlockCount(), 0, 1, ErrBadIndex},
	} {
		if err := s.ReadPiece(tc.i, tc.off, make([]byte, tc.n)); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	view, err := NewView(m, s)
	if err != nil {
		t.Fatal(err)
	}
	if view.Pieces() || !errors.Is(view.ReadPiece(1, 0, make([]byte, 1)), ErrNoPieces) {
		t.Error("a view reads pieces")
	}
}
