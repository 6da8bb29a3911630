package peer

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer/sched"
	"github.com/reconcile-p2p/reconcile/peer/swarm"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// TestPushAdopt: a root that pushes a corrupt block loses its two
// children, each the parent of a leaf. Both ask their grandparent, the
// seed, to adopt them: the seed adopts the first and sends the second on
// to it, which adopts it in turn. The stripe comes down the repaired tree
// (the repair time is too long to matter), and every fetcher ends
// byte-identical.
func TestPushAdopt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The seed serves slowly, so that the fetches still run once the
	// orphans are adopted (on a loaded machine a fetch of the seed at
	// full pace could end first, and its adopter then had nothing left to
	// push to the second orphan).
	w := newPushSwarm(ctx, t, 2<<20, 4, WithServeRate(1<<20))
	a, b, la, lb := w.peers[0], w.peers[1], w.peers[2], w.peers[3]
	h := connectedPeer(ctx, t, a)
	if err := h.Host().Connect(ctx, b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	root, s := w.man.ID(), w.seed.ID()
	places := []Stripes{
		{Parents: []lpeer.ID{h.ID()}, Grandparents: []lpeer.ID{s}, Children: [][]lpeer.ID{{la.ID()}}},
		{Parents: []lpeer.ID{h.ID()}, Grandparents: []lpeer.ID{s}, Children: [][]lpeer.ID{{lb.ID()}}},
		{Parents: []lpeer.ID{a.ID()}, Grandparents: []lpeer.ID{h.ID()}},
		{Parents: []lpeer.ID{b.ID()}, Grandparents: []lpeer.ID{h.ID()}},
	}
	for j, st := range places {
		st.RepairAfter = time.Minute
		if err := w.peers[j].Push(root, st); err != nil {
			t.Fatal(err)
		}
	}
	// The seed's only child is h, which fetches nothing: the seed takes its
	// place before the fetches start, to adopt as soon as a and b ask.
	if err := w.seed.Push(root, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{h.ID()}}}); err != nil {
		t.Fatal(err)
	}
	// Once a's and b's fetches run, h pushes each a corrupt block 0.
	pushed := make(chan error, 2)
	for _, p := range []*Peer{a, b} {
		go func() { pushed <- w.pushCorrupt(ctx, h, p, 0) }()
	}
	sums := w.fetchAll(ctx, t, Stripes{})
	for range 2 {
		if err := <-pushed; err != nil {
			t.Fatal(err)
		}
	}
	parent := func(p *Peer) lpeer.ID {
		tr := swarm.TreesOf(p.lib.Lookup(root[:]))
		tr.Lock()
		defer tr.Unlock()
		return tr.Tree().Parent(0)
	}
	// The first to ask is the seed's adoptee, the other its own.
	first, second, j := a, b, 1
	if parent(b) == s {
		first, second, j = b, a, 0
	}
	if parent(first) != s || parent(second) != first.ID() {
		t.Fatalf("after the root's corrupt push: parents %v and %v, want the seed and %v", parent(first), parent(second), first.ID())
	}
	for _, tc := range []struct {
		sum  *Summary
		from lpeer.ID
		name string
	}{{sums[j], first.ID(), "the second orphan"}, {sums[2], a.ID(), "a's leaf"}, {sums[3], b.ID(), "b's leaf"}} {
		if p, _ := pushShare(tc.sum, tc.from); p == 0 {
			t.Errorf("%s: no block pushed by its parent %v", tc.name, tc.from)
		}
	}
	if r := sums[0].Rejected + sums[1].Rejected; r != 2 {
		t.Errorf("a and b rejected %d blocks, want 1 each", r)
	}
}

// TestPushOrphanLetsGo: an inner peer whose parent pushes a corrupt block
// and that no peer adopts (its grandparent serves nothing) lets its child
// go: the child's push stream is reset, so it fetches the stripe itself at
// once instead of waiting (a repair time longer than the test) for what
// its parent fetches and would pass on. While it asks to be adopted it
// still passes on what it fetches, so the child may be pushed a few
// blocks before it is let go; the seed serves slowly (1 MiB in about
// 0.25 s), so that a slow ask under load takes only a few.
func TestPushOrphanLetsGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 1<<20, 2, WithServeRate(4<<20))
	a, la := w.peers[0], w.peers[1]
	h, q := connectedPeer(ctx, t, a), connectedPeer(ctx, t, a)
	root := w.man.ID()
	repair := 5 * time.Minute
	if err := a.Push(root, Stripes{Parents: []lpeer.ID{h.ID()}, Grandparents: []lpeer.ID{q.ID()}, Children: [][]lpeer.ID{{la.ID()}}, RepairAfter: repair}); err != nil {
		t.Fatal(err)
	}
	if err := la.Push(root, Stripes{Parents: []lpeer.ID{a.ID()}, Grandparents: []lpeer.ID{h.ID()}, RepairAfter: repair}); err != nil {
		t.Fatal(err)
	}
	pushed := make(chan error, 1)
	go func() { pushed <- w.pushCorrupt(ctx, h, a, 0) }()
	sums := w.fetchAll(ctx, t, Stripes{})
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
	// Not let go, the child would be pushed every block (it pulls none
	// for the repair time).
	if p, _ := pushShare(sums[1], a.ID()); p > sums[1].Blocks/4 {
		t.Errorf("the child was pushed %d of %d blocks by its orphaned parent, want it let go (it fetches them)", p, sums[1].Blocks)
	}
}

// TestServeAdoptHostile sends adoption requests over real streams: a
// content without trees refuses with an error frame, a request naming
// blocks of two stripes or none is malformed (no answer, the stream
// ends, its sender banned), a peer whose own parent is gone refuses, and
// one that gets the stripe adopts.
func TestServeAdoptHostile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 64<<10, 1)
	a, root := w.peers[0], w.man.ID()
	// ask sends req from a new peer (one that sent a malformed request is
	// banned).
	ask := func(req []byte) (answer []byte, err error) {
		s, _ := openRaw(ctx, t, connectedPeer(ctx, t, a), a, ProtoAdopt, wire.Hello{Root: root[:]}.Append(nil), req)
		defer s.Reset()
		_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
		return wire.NewReader(s).Next(1 << 10)
	}
	isErr := func(f []byte) bool {
		return len(f) > 0 && f[0] != wire.TypeHave && f[0] != wire.TypePeers && wire.DecodeError(f) != nil
	}
	if f, err := ask(wire.AppendWant(nil, []int{0})); err != nil || !isErr(f) {
		t.Errorf("no trees: answered %q, %v; want an error frame", f, err)
	}
	if err := a.Push(root, Stripes{Parents: []lpeer.ID{w.seed.ID(), w.seed.ID()}}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{wire.AppendWant(nil, []int{0, 1}), wire.AppendWant(nil, nil), wire.AppendHave(nil, []int{0}), {0xff}} {
		if f, err := ask(bad); err == nil {
			t.Errorf("request %x: answered %q, want the stream ended", bad, f)
		}
	}
	if f, err := ask(wire.AppendWant(nil, []int{1, 3})); err != nil || len(f) == 0 || f[0] != wire.TypeHave {
		t.Errorf("a good request: answered %q, %v; want adopted (an empty have frame)", f, err)
	}
	swarm.TreesOf(a.lib.Lookup(root[:])).ParentFailed(w.seed.ID(), false)
	if f, err := ask(wire.AppendWant(nil, []int{0})); err != nil || !isErr(f) {
		t.Errorf("its parent gone: answered %q, %v; want an error frame", f, err)
	}
}

// TestPushSeedSpares: a seed asked to catch a child up leaves to other
// peers the blocks that swarm.SpareHolders or more of its watchers hold (by the
// tally of their filters): it pushes the child none of them, and the child
// fetches them from the peer that holds them at once, rather than hold
// them for pushes that will not come (the repair time is longer than the
// test). With fewer watchers holding them, the seed pushes them all.
func TestPushSeedSpares(t *testing.T) {
	for _, watchers := range []int{0, swarm.SpareHolders - 1, swarm.SpareHolders} {
		t.Run(fmt.Sprint(watchers, " watchers"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			w := newPushSwarm(ctx, t, 512<<10, 2)
			a, c := w.peers[0], w.peers[1]
			root := w.man.ID()
			repair := 5 * time.Minute
			if err := a.Push(root, Stripes{Parents: []lpeer.ID{w.seed.ID()}, RepairAfter: repair}); err != nil {
				t.Fatal(err)
			}
			w.fetchFromSeed(ctx, t, a, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{a.ID()}}})
			// Watchers of the seed that hold every block, and no other: a's
			// watch of the seed, which ends with its fetch, must be gone
			// from the tally first (else it counts as one more holder).
			sc := w.seed.lib.Lookup(root[:])
			waitWatchers(ctx, t, sc.Tally, 0)
			for j := range watchers {
				sc.Tally.Set(lpeer.ID(fmt.Sprint("watcher", j)), watchFilter(t, sc.Tally.U, seq(0, w.man.BlockCount())))
			}
			// c takes the seed as its parent after the seed pushed every
			// block: it asks to be caught up as its fetch starts.
			if err := c.Push(root, Stripes{Parents: []lpeer.ID{w.seed.ID()}, RepairAfter: repair}); err != nil {
				t.Fatal(err)
			}
			sum, err := c.FetchServed(ctx, root, WithSources(w.seed.ID(), a.ID()))
			if err != nil {
				t.Fatal(err)
			}
			sameFile(t, w.src, filepath.Join(w.dirs[1], "data.bin"))
			pushed, _ := pushShare(sum, w.seed.ID())
			want := sum.Blocks
			if watchers >= swarm.SpareHolders {
				want = 0
			}
			if pushed != want {
				t.Errorf("the seed pushed %d of %d blocks, want %d", pushed, sum.Blocks, want)
				for _, ps := range sum.Peers {
					t.Logf("%+v", ps)
				}
			}
		})
	}
}

// waitWatchers waits until tally keeps the filters of n watchers.
func waitWatchers(ctx context.Context, t *testing.T, tally *sched.NeighbourTally[lpeer.ID], n int) {
	t.Helper()
	for {
		got := tally.Watchers()
		if got == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the tally keeps %d watchers' filters, want %d", got, n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestPushAdoptersParent: a parent names its own parent in its answer to a
// child's catch-up (or adoption) request, and the child, when that parent
// fails, asks the one named to adopt it rather than its planned
// grandparent: here the seed, which adopts it and pushes it the stripe.
// (Asking the planned grandparent, which does not serve the content, the
// child would fetch the stripe by pulls.)
func TestPushAdoptersParent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 1<<20, 3)
	p, c, leaf := w.peers[0], w.peers[1], w.peers[2]
	q := connectedPeer(ctx, t, c) // the planned grandparent: serves nothing
	root, s := w.man.ID(), w.seed.ID()
	repair := 5 * time.Minute
	// p fetches nothing and is pushed nothing: it pushes c nothing.
	for _, tc := range []struct {
		p  *Peer
		st Stripes
	}{
		{w.seed, Stripes{Parents: []lpeer.ID{""}}},
		{p, Stripes{Parents: []lpeer.ID{s}, Children: [][]lpeer.ID{{c.ID()}}}},
		{c, Stripes{Parents: []lpeer.ID{p.ID()}, Grandparents: []lpeer.ID{q.ID()}, Children: [][]lpeer.ID{{leaf.ID()}}}},
		{leaf, Stripes{Parents: []lpeer.ID{c.ID()}, Grandparents: []lpeer.ID{p.ID()}}},
	} {
		tc.st.RepairAfter = repair
		if err := tc.p.Push(root, tc.st); err != nil {
			t.Fatal(err)
		}
	}
	wait := w.startFetch(ctx, c)
	ct := swarm.TreesOf(c.lib.Lookup(root[:]))
	// c's catch-up, as its fetch starts, asks p, which names the seed.
	grand := func() lpeer.ID {
		ct.Lock()
		defer ct.Unlock()
		return ct.Tree().Grand(0)
	}
	for grand() != s {
		select {
		case <-ctx.Done():
			t.Fatalf("c's grandparent is %v, want the seed, which p named", grand())
		case <-time.After(time.Millisecond):
		}
	}
	ct.ParentFailed(p.ID(), false)
	sum, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, w.src, filepath.Join(w.dirs[1], "data.bin"))
	// All of them, but for any the fetch may ask in the moment between
	// p's failure and the adoption (it fetches every block otherwise).
	if pushed, _ := pushShare(sum, s); 2*pushed < sum.Blocks {
		t.Errorf("the seed pushed c %d of %d blocks, want most: it adopted c", pushed, sum.Blocks)
	}
}
