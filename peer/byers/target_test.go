package byers_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/byers"
)

// encoded returns content of 5 blocks of 1 KiB (the last one 904 bytes), its
// full coded set in 3 generations of 2 source and 4 coded blocks, and an
// empty set of it made from its header.
func encoded(t *testing.T, seed uint64) (*chunker.Manifest, *memStore, *byers.Set, *byers.Set) {
	t.Helper()
	m, src := newContent(t, 5000, 1024, seed)
	full, err := byers.Encode(context.Background(), m, src, byers.Params{K: 2, N: 4})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := byers.DecodeHeader(full.Header(), m)
	if err != nil {
		t.Fatal(err)
	}
	return m, src, full, empty
}

// TestTargetDecodes: a fetcher given only parity blocks decodes every
// generation into its store.
func TestTargetDecodes(t *testing.T) {
	m, src, full, empty := encoded(t, 1)
	st := emptyStore(m)
	tg, err := byers.NewTarget(context.Background(), empty, m, st)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Count() != 12 || tg.BlockSize() != 1024 || len(tg.Held()) != 0 {
		t.Fatalf("count %d, block size %d, held %v", tg.Count(), tg.BlockSize(), tg.Held())
	}
	for i := 11; i >= 0; i-- {
		if i%4 < 2 {
			continue // a source block
		}
		b, _ := full.Get(i)
		if err := tg.Put(i, b); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if !st.complete() || tg.Err() != nil {
		t.Fatalf("store complete %v, err %v", st.complete(), tg.Err())
	}
	for i := range m.BlockCount() {
		if !bytes.Equal(st.blocks[i], src.blocks[i]) {
			t.Errorf("block %d decoded wrong", i)
		}
	}
	for i := range 12 {
		if !tg.Has(i) {
			t.Errorf("coded block %d of a decoded generation still needed", i)
		}
	}
	if len(tg.Held()) != 6 {
		t.Errorf("held %v, want the 6 parity blocks", tg.Held())
	}
}

func TestTargetPutErrors(t *testing.T) {
	m, _, full, empty := encoded(t, 1)
	tg, err := byers.NewTarget(context.Background(), empty, m, emptyStore(m))
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := full.Get(2)
	flipped := bytes.Clone(b2)
	flipped[0] ^= 1
	for _, tc := range []struct {
		name string
		i    int
		data []byte
		err  error
	}{
		{"index -1", -1, b2, byers.ErrMalformed},
		{"index 12", 12, b2, byers.ErrMalformed},
		{"flipped bit", 2, flipped, byers.ErrBadBlock},
		{"short", 2, b2[:1000], byers.ErrBadBlock},
		{"another block's bytes", 3, b2, byers.ErrBadBlock},
		{"good", 2, b2, nil},
		{"again", 2, b2, nil},
	} {
		if err := tg.Put(tc.i, tc.data); !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}
	if held := tg.Held(); len(held) != 1 || held[0] != 2 || tg.Err() != nil {
		t.Errorf("held %v, err %v", held, tg.Err())
	}
}

// TestTargetMismatch: coded blocks that match lying hashes decode into
// blocks the manifest refuses.
func TestTargetMismatch(t *testing.T) {
	m, _, _, _ := encoded(t, 1)
	_, _, other, _ := encoded(t, 2) // other content of the same size
	lie, err := byers.DecodeHeader(other.Header(), m)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := byers.NewTarget(context.Background(), lie, m, emptyStore(m))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := other.Get(2)
	if err := tg.Put(2, b); err != nil {
		t.Fatal(err)
	}
	b, _ = other.Get(3)
	if err := tg.Put(3, b); !errors.Is(err, byers.ErrMismatch) || !errors.Is(err, chunker.ErrBadBlock) {
		t.Fatalf("decode of lying hashes: %v", err)
	}
	if !errors.Is(tg.Err(), byers.ErrMismatch) {
		t.Errorf("Err() = %v", tg.Err())
	}
}

// TestTargetResume: generations whole in the store need no coded block, and
// those the set holds K coded blocks of are decoded at once.
func TestTargetResume(t *testing.T) {
	m, src, full, _ := encoded(t, 1)
	st := emptyStore(m)
	st.blocks[0], st.blocks[1] = src.blocks[0], src.blocks[1] // generation 0 whole
	part, err := full.Share([]int{6, 7})                      // generation 1's parity
	if err != nil {
		t.Fatal(err)
	}
	tg, err := byers.NewTarget(context.Background(), part, m, st)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Has(2) || !st.Has(3) || st.Has(4) {
		t.Fatalf("generation 1 not decoded at once: %v %v %v", st.Has(2), st.Has(3), st.Has(4))
	}
	for i := range 8 {
		if !tg.Has(i) {
			t.Errorf("coded block %d of a whole generation still needed", i)
		}
	}
	if tg.Has(8) {
		t.Error("coded block 8 not needed")
	}
	if _, err := byers.NewTarget(context.Background(), part, bigManifest(t), st); !errors.Is(err, byers.ErrMalformed) {
		t.Errorf("target of another content: %v", err)
	}
}

// TestTargetShared: a shared set keeps a received block equal to its
// origin's as the origin's slice.
func TestTargetShared(t *testing.T) {
	m, _, full, _ := encoded(t, 1)
	part, err := full.Share(nil)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := byers.NewTarget(context.Background(), part, m, emptyStore(m))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := full.Get(5)
	if err := tg.Put(5, bytes.Clone(b)); err != nil {
		t.Fatal(err)
	}
	got, ok := part.Get(5)
	if !ok || &got[0] != &b[0] {
		t.Error("the received block is not the origin's slice")
	}
}
