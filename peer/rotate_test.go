package peer

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/swarm"
)

// TestRotateIdleSource: a fetch at its source limit whose only source has
// nothing to offer gives that place to a spare peer (here the seed, which
// arrives once the limit is reached) instead of waiting on the idle source
// until it gives up.
func TestRotateIdleSource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, src := seedFile(t, dir, 256<<10, 16<<10)
	m := seed.lib.Lookup(tk.Root[:]).Man
	// A peer serving the content with none of its blocks.
	empty := filepath.Join(dir, "empty")
	prefill(t, src, m, empty, func(int) bool { return false })
	idle := newTestPeer(t)
	st, err := openStoreForTest(empty)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idle.Serve(st); err != nil {
		t.Fatal(err)
	}
	p := newTestPeer(t, WithMaxSources(1))
	out := filepath.Join(dir, "out")
	type result struct {
		sum *Summary
		err error
	}
	res := make(chan result, 1)
	go func() {
		// The no-peer timeout is far longer than a rotation: the fetch
		// would fail with ErrNoPeers only if it kept the idle source.
		s, err := p.Fetch(ctx, Ticket{Root: tk.Root}, out, WithPeers(idle.Addrs()...), WithNoPeerTimeout(30*time.Second))
		res <- result{s, err}
	}()
	// Once the fetch runs with the idle peer as its one source, tell it of
	// the seed, as a peer reconciling with it would.
	for {
		f := p.lib.Lookup(tk.Root[:])
		if f != nil {
			running := swarm.FetchOf(f)
			if running != nil {
				n := running.Sources()
				if n == 1 {
					break
				}
			}
		}
		select {
		case r := <-res:
			t.Fatalf("fetch ended early: %v", r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := p.Host().Connect(ctx, seed.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	p.lib.Lookup(tk.Root[:]).OfferSource(seed.ID())
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
	for _, ps := range r.sum.Peers {
		if ps.Peer == seed.ID().String() && ps.Blocks != m.BlockCount() {
			t.Errorf("the seed sent %d of %d blocks", ps.Blocks, m.BlockCount())
		}
	}
}
