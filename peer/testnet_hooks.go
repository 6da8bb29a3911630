package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// Hooks for package testnet, which starts hundreds of peers at once. Fetch
// connects first and serves its content only then, so a peer asked by a
// neighbour that has not yet reached that point would be dropped as one that
// "does not serve the content"; Prepare serves first and Run downloads later.
// Prepare also lets a Byers peer start with a share of the coded blocks, as
// peers do in the paper's setting.

// A Prepared fetch serves its content (the blocks, or coded blocks, it starts
// with) from Prepare on; Run downloads the rest.
type Prepared struct {
	p  *Peer
	c  *content
	t  target
	bt *byersTarget
}

// Prepare serves the store s (any subset of its blocks held; the peer takes
// ownership of it) and returns a fetch of the rest that starts on Run.
//
// method is reconcile.Complete, CCBF, Bitfield or IBLT (the store's blocks are
// served with all four, and Run may use any of them), or reconcile.Byers: then
// header is a Byers seed's coded header and shared that seed's coded blocks
// (see CodedBlocks); the peer starts with the coded blocks listed in held
// (generations held whole are decoded at once), and keeps every coded block it
// receives as shared's slice of the same bytes instead of a copy: peers of one
// process then share one copy, as a testnet of hundreds of peers needs.
// shared's slices must not be modified.
func (p *Peer) Prepare(s *chunker.Store, method reconcile.Method, header []byte, held []int, shared func(i int) ([]byte, bool)) (*Prepared, error) {
	m := s.Manifest()
	c, err := newContent(m, s)
	if err != nil {
		return nil, err
	}
	pf := &Prepared{p: p, c: c, t: blockTarget{c, method}}
	switch {
	case isBlockMethod(method):
	case method == reconcile.Byers:
		cb, err := decodeCodedHeader(header, m)
		if err != nil {
			return nil, err
		}
		if shared == nil {
			return nil, errors.New("peer: Prepare: byers needs the shared coded blocks")
		}
		c.coded = cb
		bt := &byersTarget{c: c, cb: cb, perGen: make([]int, cb.gens.Count()), decoded: make([]bool, cb.gens.Count())}
		for _, i := range held {
			b, ok := shared(i)
			if i < 0 || i >= cb.count() || cb.data[i] != nil || !ok {
				return nil, fmt.Errorf("%w: coded block %d of %d", ErrMalformed, i, cb.count())
			}
			cb.data[i] = b
			cb.n++
			g, _ := cb.gens.Locate(i)
			bt.perGen[g]++
		}
		k := cb.gens.Code().K()
		for g := range bt.decoded {
			whole := true
			for i := g * k; i < min((g+1)*k, m.BlockCount()); i++ {
				whole = whole && s.Has(i)
			}
			bt.decoded[g] = whole
			if !whole && bt.perGen[g] >= k {
				if err := bt.decode(g); err != nil {
					return nil, err
				}
			}
		}
		pf.t, pf.bt = sharedTarget{bt, shared, make([]bool, cb.gens.Count())}, bt
	default:
		return nil, fmt.Errorf("peer: method %v: %w", method, reconcile.ErrMethod)
	}
	if err := p.add(c); err != nil {
		return nil, err
	}
	return pf, nil
}

// sharedTarget is a Byers target that keeps received coded blocks as the
// shared slices of the same bytes.
type sharedTarget struct {
	*byersTarget
	shared func(i int) ([]byte, bool)
	// decoding marks the generations waiting for a decode slot (under mu).
	decoding []bool
}

// has reports whether coded block i is held or no longer needed: its
// generation is decoded or has K coded blocks and waits for a decode slot.
func (t sharedTarget) has(i int) bool {
	if t.byersTarget.has(i) {
		return true
	}
	gen, _ := t.cb.gens.Locate(i)
	t.mu.Lock()
	defer t.mu.Unlock()
	return gen >= 0 && gen < len(t.decoding) && t.decoding[gen]
}

func (t sharedTarget) put(i int, data []byte) error {
	b, ok := t.shared(i)
	if !ok || !bytes.Equal(b, data) {
		return t.byersTarget.put(i, data)
	}
	// The shared block passed its hash when its seed coded it; equal bytes
	// pass it too.
	t.cb.mu.Lock()
	if t.cb.data[i] != nil {
		t.cb.mu.Unlock()
		return nil
	}
	t.cb.data[i] = b
	t.cb.n++
	t.cb.mu.Unlock()
	gen, _ := t.cb.gens.Locate(i)
	t.mu.Lock()
	t.perGen[gen]++
	if t.decoded[gen] || t.perGen[gen] < t.cb.gens.Code().K() || t.decoding[gen] {
		t.mu.Unlock()
		return nil
	}
	t.decoding[gen] = true
	t.mu.Unlock()
	// Hundreds of peers in one process share its cores: more decodes at once
	// than cores only hold more memory. The slot is awaited without the lock,
	// so the fetch goes on meanwhile.
	sharedDecodes <- struct{}{}
	defer func() { <-sharedDecodes }()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.decoding[gen] = false
	if t.decoded[gen] {
		return nil
	}
	return t.decode(gen)
}

// sharedDecodes bounds the concurrent decodes of sharedTargets.
var sharedDecodes = make(chan struct{}, runtime.GOMAXPROCS(0))

// Run downloads the blocks the prepared content lacks from srcs (peers this
// peer is connected to), from every peer that reconciles with it meanwhile
// and from the peers they name, as Fetch does. The content stays served
// afterwards.
func (pf *Prepared) Run(ctx context.Context, srcs []lpeer.ID, opts ...FetchOption) (*Summary, error) {
	fc := fetchConfig{method: pf.t.method(), noPeer: 10 * time.Second}
	for _, o := range opts {
		if err := o(&fc); err != nil {
			return nil, err
		}
	}
	t := pf.t
	switch bt, ok := t.(blockTarget); {
	case ok && isBlockMethod(fc.method):
		// The blocks of a store are served with every block method; the
		// fetch may use any of them.
		bt.m = fc.method
		t = bt
	case fc.method != t.method():
		return nil, fmt.Errorf("peer: prepared for %v, not %v: %w", t.method(), fc.method, reconcile.ErrMethod)
	}
	start := time.Now()
	f := newFetch(pf.p, pf.c, t, fc)
	sum, err := f.run(ctx, srcs)
	sum.Out = pf.c.store.Dir()
	sum.Seconds = time.Since(start).Seconds()
	if pf.bt != nil {
		pf.bt.mu.Lock()
		sum.DecodeSeconds = pf.bt.decodeTime.Seconds()
		pf.bt.mu.Unlock()
	}
	if serr := pf.c.store.Sync(); serr != nil && err == nil && !errors.Is(serr, chunker.ErrClosed) {
		err = fmt.Errorf("peer: sync %s: %w", pf.c.store.Dir(), serr)
	}
	return sum, err
}

// CodedBlocks returns the coded header and the coded blocks this peer serves
// for root with the Byers baseline (a seed made with WithByers, or a Byers
// fetch), or ok false if it serves none. get returns a coded block's bytes,
// which must not be modified.
func (p *Peer) CodedBlocks(root chunker.ID) (header []byte, get func(i int) ([]byte, bool), ok bool) {
	p.mu.Lock()
	c := p.contents[root]
	p.mu.Unlock()
	if c == nil || c.coded == nil {
		return nil, nil, false
	}
	return c.coded.encodeHashes(), c.coded.get, true
}
