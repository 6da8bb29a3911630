package byers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/erasure"
	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// A Store holds the blocks of a content (a *chunker.Store does).
type Store interface {
	// Has reports whether block i is held.
	Has(i int) bool
	// PutBlock verifies block i against the manifest and stores it; a block
	// that fails verification is an error wrapping chunker.ErrBadBlock.
	PutBlock(i int, data []byte) error
}

// A Target fetches the coded blocks of a set and decodes each generation into
// a store as soon as it holds K of them. Its erasure.Collector gathers the
// blocks and decodes outside every lock the callers of Put need, in one of
// the set's decode slots. Its methods are safe for concurrent use.
type Target struct {
	ctx   context.Context // ends decodes waiting for a slot
	set   *Set
	man   *chunker.Manifest
	store Store
	coll  *erasure.Collector

	mu         sync.Mutex
	decodeTime time.Duration
	failed     error // the first decode that failed
}

// NewTarget returns the fetch of the coded blocks of set into st, the store
// of content m: generations whole in the store need no coded block, and those
// with K coded blocks held in set are decoded before it returns. ctx ends the
// decodes that wait for a slot.
func NewTarget(ctx context.Context, set *Set, m *chunker.Manifest, st Store) (*Target, error) {
	if !set.Fits(m) {
		return nil, fmt.Errorf("%w: the coded set is not of this content", ErrMalformed)
	}
	t := &Target{ctx: ctx, set: set, man: m, store: st, coll: erasure.NewCollector(set.gens, erasure.WithDecodeSlots(set.decodes))}
	k := set.gens.Code().K()
	for gen := range set.gens.Count() {
		whole := true
		for i := gen * k; i < min((gen+1)*k, m.BlockCount()); i++ {
			whole = whole && st.Has(i)
		}
		if whole {
			t.coll.SetDecoded(gen)
		}
	}
	var ready []int
	for _, i := range set.Held() {
		b, _ := set.Get(i)
		gen, ok, err := t.coll.Add(i, b)
		if err != nil {
			return nil, fmt.Errorf("byers: %w", err)
		}
		if ok {
			ready = append(ready, gen)
		}
	}
	for _, gen := range ready {
		if err := t.decode(gen); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Count is the number of coded blocks of the content.
func (t *Target) Count() int { return t.set.Count() }

// BlockSize is the size of every coded block.
func (t *Target) BlockSize() int { return t.set.BlockSize() }

// Held lists the coded blocks held.
func (t *Target) Held() []int { return t.set.Held() }

// Has reports whether coded block i is held or no longer needed: its
// generation is decoded or being decoded.
func (t *Target) Has(i int) bool { return t.set.Has(i) || !t.coll.Needed(i) }

// Put checks coded block i against its hash (ErrBadBlock if it fails;
// ErrMalformed if i is out of range) and keeps it; when its generation then
// holds K coded blocks, Put decodes it and stores its source blocks (an error
// from the decode or the store is the fetch's failure, ErrMismatch if a
// decoded block does not match the manifest).
func (t *Target) Put(i int, data []byte) error {
	if i < 0 || i >= t.set.Count() {
		return fmt.Errorf("%w: coded block %d of %d", ErrMalformed, i, t.set.Count())
	}
	var keep []byte
	if o := t.set.origin; o != nil {
		if b, ok := o.Get(i); ok && bytes.Equal(b, data) {
			// The origin's block passed its hash when it was coded; equal
			// bytes pass it too.
			keep = b
		}
	}
	if keep == nil {
		h := chunker.HashBlock(data)
		if len(data) != t.BlockSize() || !bytes.Equal(h[:], t.set.hash(i)) {
			return fmt.Errorf("%w: coded block %d", ErrBadBlock, i)
		}
		keep = bytes.Clone(data)
	}
	t.set.mu.Lock()
	if t.set.data[i] != nil {
		t.set.mu.Unlock()
		return nil
	}
	t.set.data[i] = keep
	t.set.n++
	t.set.mu.Unlock()
	gen, ready, err := t.coll.Add(i, keep)
	if err != nil || !ready {
		return err
	}
	return t.decode(gen)
}

// decode decodes generation gen, claimed from the collector, and stores its
// source blocks. It holds no lock of the target's while it decodes.
func (t *Target) decode(gen int) error {
	t0 := clock.Real().Now()
	src, err := t.coll.Decode(t.ctx, gen)
	d := clock.Real().Since(t0)
	if err == nil {
		err = t.storeGen(gen, src)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.decodeTime += d
	if err != nil && t.failed == nil {
		t.failed = err
	}
	return err
}

// storeGen writes the source blocks src of generation gen into the store.
func (t *Target) storeGen(gen int, src [][]byte) error {
	first := gen * t.set.gens.Code().K()
	for j, b := range src {
		i := first + j
		if i >= t.man.BlockCount() {
			break
		}
		if t.store.Has(i) {
			continue
		}
		if err := t.store.PutBlock(i, b[:t.man.BlockLen(i)]); err != nil {
			if errors.Is(err, chunker.ErrBadBlock) {
				return fmt.Errorf("%w: decoded block %d: %w", ErrMismatch, i, err)
			}
			return err
		}
	}
	return nil
}

// DecodeTime is the time spent decoding so far.
func (t *Target) DecodeTime() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.decodeTime
}

// Err is the first decode (or store) error, if any.
func (t *Target) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
