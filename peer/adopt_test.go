package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer/sched"
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
	w := newPushSwarm(ctx, t, 2<<20, 4)
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
		tr := treesOf(p.lib.Lookup(root[:]))
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.tree.Parent(0)
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
// its parent fetches and would pass on.
func TestPushOrphanLetsGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 1<<20, 2)
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
	if p, _ := pushShare(sums[1], a.ID()); p != 0 {
		t.Errorf("the child was pushed %d blocks by its orphaned parent, want 0 (it fetches them)", p)
	}
}

// FuzzDecodeAdopt: whatever an orphan sends, the request decodes to at
// least one and at most max blocks, all below the block count and of one
// stripe, or to an error; never a panic.
func FuzzDecodeAdopt(f *testing.F) {
	f.Add(wire.AppendWant(nil, []int{1, 5, 9}))
	f.Add(wire.AppendWant(nil, []int{1, 2}))
	f.Add(wire.AppendWant(nil, nil))
	f.Add(wire.AppendWant(nil, []int{1000}))
	f.Add([]byte{wire.TypeWant, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, in []byte) {
		const max, blocks, stripes = 8, 100, 4
		s, lacks, err := decodeAdopt(in, max, blocks, stripes)
		if err != nil {
			return
		}
		if len(lacks) == 0 || len(lacks) > max || s < 0 || s >= stripes {
			t.Fatalf("stripe %d, %d blocks", s, len(lacks))
		}
		for _, i := range lacks {
			if i < 0 || i >= blocks || i%stripes != s {
				t.Fatalf("block %d in a request of stripe %d", i, s)
			}
		}
	})
}

// TestDecodeAdopt checks decodeAdopt's answers to requests good and bad.
func TestDecodeAdopt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    []byte
		s     int
		lacks []int
		ok    bool
	}{
		{"one stripe", wire.AppendWant(nil, []int{1, 5, 9}), 1, []int{1, 5, 9}, true},
		{"two stripes", wire.AppendWant(nil, []int{1, 2}), 0, nil, false},
		{"empty", wire.AppendWant(nil, nil), 0, nil, false},
		{"out of range", wire.AppendWant(nil, []int{100}), 0, nil, false},
		{"too many", wire.AppendWant(nil, []int{0, 4, 8, 12, 16, 20, 24, 28, 32}), 0, nil, false},
		{"a have frame", wire.AppendHave(nil, []int{1}), 0, nil, false},
	} {
		s, lacks, err := decodeAdopt(tc.in, 8, 100, 4)
		if (err == nil) != tc.ok || (tc.ok && (s != tc.s || !slices.Equal(lacks, tc.lacks))) {
			t.Errorf("%s: stripe %d, blocks %v, %v", tc.name, s, lacks, err)
		}
	}
}

// TestAdoptee checks how a peer answers adoption requests: it adopts the
// first two orphans of a stripe (a seed one), sends the next ones on to
// those that asked before, two to each (a binary tree), adopts one that
// asks again (what it was given failed) up to four in all, sends no more
// orphans to a peer one complained of (it asked again after being sent on
// to it), cuts an adoptee two complained of, and refuses when it does not
// get the stripe itself; a seed asked by two orphans of a stripe stops
// pushing it to the stripe's root.
func TestAdoptee(t *testing.T) {
	dir := t.TempDir()
	m := manifestOf(t, writeRandomFile(t, dir, "data.bin", 64<<10, 3))
	c := emptyContent(t, m, filepath.Join(dir, "out"))
	p := newTestPeer(t)
	type ask struct {
		orphan lpeer.ID
		next   lpeer.ID // "": adopted
		bad    bool
	}
	check := func(name string, tr *pushTrees, asks []ask, adoptees []lpeer.ID) {
		for k, tc := range asks {
			next, _, _, err := tr.adoptee(tc.orphan, 0, []int{0})
			if (err != nil) != tc.bad || !tc.bad && next != tc.next {
				t.Errorf("%s: request %d, of %s: sent on to %q, %v; want %q (refused: %t)", name, k, tc.orphan, next, err, tc.next, tc.bad)
			}
		}
		tr.mu.Lock()
		got := slices.Clone(tr.tree.Adoptees(0))
		tr.mu.Unlock()
		if !slices.Equal(got, adoptees) {
			t.Errorf("%s: adoptees %v, want %v", name, got, adoptees)
		}
	}
	seed := newPushTrees(p.Service, c, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{"root"}}}, time.Second)
	check("seed", seed, []ask{
		{orphan: "s1"},
		{orphan: "s2", next: "s1"},
		{orphan: "s3", next: "s1"},
		{orphan: "s4", next: "s2"},
		{orphan: "s5", next: "s2"},
		{orphan: "s2"},             // again, s1 failed it: adopted
		{orphan: "s6", next: "s3"}, // s1 complained of: passed over
		{orphan: "s3"},             // again, s1 failed it: s1 is cut
		{orphan: "s1", bad: true},  // cut: adopted no more
		{orphan: "s4"},             // s2 failed it
		{orphan: "s5"},             // s2 cut
		{orphan: "s7", next: "s3"},
		{orphan: "s8", next: "s4"},
		{orphan: "s6"},             // again: s3 complained of once
		{orphan: "s7"},             // s3 cut
		{orphan: "s8", next: "s5"}, // again, at the seed's most: to an adoptee none complained of
	}, []lpeer.ID{"s4", "s5", "s6", "s7"})
	// Two orphans of the stripe asked the seed: their root is cut.
	seed.mu.Lock()
	kids := slices.Clone(seed.tree.Children(0))
	seed.mu.Unlock()
	if !slices.Equal(kids, []lpeer.ID{"s4", "s5", "s6", "s7"}) {
		t.Errorf("the seed pushes stripe 0 to %v, want its adoptees only (the root cut)", kids)
	}
	// A seed whose root still takes its pushes doubts a first orphan (a
	// liar its root banned): adopted apart, no orphan is sent on to it.
	rootUp := func() *pushTrees {
		tr := newPushTrees(p.Service, c, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{"root"}}}, time.Second)
		tr.outs["root"] = &pushOut{wake: make(chan struct{}, 1)}
		tr.tree.SetUp("root", true)
		return tr
	}
	banned := rootUp()
	check("seed, an orphan its root banned", banned, []ask{{orphan: "liar"}}, []lpeer.ID{"liar"})
	banned.mu.Lock()
	banned.tree.SetUp("root", false) // the root left
	banned.mu.Unlock()
	check("seed, its root left", banned, []ask{
		{orphan: "h1"},             // adopted: the doubted one is not counted
		{orphan: "h2", next: "h1"}, // not to the doubted one; the root is cut
		{orphan: "h3", next: "h1"},
		{orphan: "h4", next: "h2"},
		{orphan: "liar"}, // asks again: kept, apart
	}, []lpeer.ID{"liar", "h1"})
	// Two orphans that ask while the root takes pushes corroborate each
	// other (the root is cut), until the root's stream fails: it left,
	// so it was there for them (and banned them).
	twoBanned := rootUp()
	check("seed, two orphans its root banned", twoBanned, []ask{
		{orphan: "liar1"},                // doubted
		{orphan: "liar2", next: "liar1"}, // corroborates it
	}, []lpeer.ID{"liar1"})
	twoBanned.mu.Lock()
	twoBanned.tree.StreamFailed("root")
	twoBanned.mu.Unlock()
	check("seed, the root of two it doubted left", twoBanned, []ask{
		{orphan: "h1"}, // adopted: neither liar counts
		{orphan: "h2", next: "h1"},
		{orphan: "h3", next: "h1"},
		{orphan: "h4", next: "h2"},
	}, []lpeer.ID{"liar1", "h1"})
	phantom := rootUp()
	check("seed, a root that passes nothing on", phantom, []ask{
		{orphan: "o1"},             // doubted
		{orphan: "o2", next: "o1"}, // corroborates it: the root is cut
		{orphan: "o3", next: "o1"},
		{orphan: "o4", next: "o2"},
	}, []lpeer.ID{"o1"})
	for _, tc := range []struct {
		name string
		tr   *pushTrees
		want []lpeer.ID
	}{{"an orphan its root banned", banned, []lpeer.ID{"liar", "h1"}}, {"two orphans its root banned", twoBanned, []lpeer.ID{"liar1", "h1"}}, {"a root that passes nothing on", phantom, []lpeer.ID{"o1"}}} {
		tc.tr.mu.Lock()
		kids := slices.Clone(tc.tr.tree.Children(0))
		tc.tr.mu.Unlock()
		if !slices.Equal(kids, tc.want) {
			t.Errorf("seed, %s: pushes stripe 0 to %v, want %v (the root cut)", tc.name, kids, tc.want)
		}
	}
	tr := newPushTrees(p.Service, c, Stripes{Parents: []lpeer.ID{"par", "par"}}, time.Second)
	check("peer", tr, []ask{
		{orphan: "o1"},
		{orphan: "o2"},
		{orphan: "o3", next: "o1"},
		{orphan: "o4", next: "o1"},
		{orphan: "o5", next: "o2"},
		{orphan: "o6", next: "o2"},
		{orphan: "o7", next: "o3"},
		{orphan: "o3"},             // again, o1 failed it: adopted
		{orphan: "o5"},             // o2 failed it
		{orphan: "o7", next: "o5"}, // o3 failed it; at its most: to an adoptee none complained of
		{orphan: "o6"},             // o2 failed it: o2 is cut, o6 adopted
		{orphan: "o1"},             // an adoptee asking again: kept
		{orphan: "par", bad: true}, // its own parent
	}, []lpeer.ID{"o1", "o3", "o5", "o6"})
	// Stripe 1 is its own: a first orphan there is adopted.
	if next, adopted, _, err := tr.adoptee("o9", 1, []int{1}); next != "" || !adopted || err != nil {
		t.Errorf("stripe 1: sent on to %q, adopted %t, %v; want adopted", next, adopted, err)
	}
	// Its parent gone, it gets neither stripe: refused.
	tr.parentFailed("par", false)
	if _, _, _, err := tr.adoptee("o6", 0, []int{0}); !errors.Is(err, errNoStripe) {
		t.Errorf("without its parent: %v, want errNoStripe", err)
	}
}

// TestAdopteeLacks: a peer asked by a child to catch it up pushes the
// blocks of the request it has passed on, and names in elsewhere those it
// has not gained yet that two or more of its watchers hold (the child
// fetches them rather than wait); one it lacks that no one holds, and one
// it stored but has not passed on yet, it pushes as it passes them on. An
// orphan it adopts is named none: it waits for its adopter's pushes.
func TestAdopteeLacks(t *testing.T) {
	dir := t.TempDir()
	src := writeRandomFile(t, dir, "data.bin", 16*16<<10, 5) // 16 blocks, 2 stripes
	m := manifestOf(t, src)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	c := emptyContent(t, m, filepath.Join(dir, "out"))
	p := newTestPeer(t)
	tr := newPushTrees(p.Service, c, Stripes{Parents: []lpeer.ID{"par", "par"}, Children: [][]lpeer.ID{{"kid"}}}, time.Second)
	// It passed on block 0 and stored block 6; two watchers hold blocks
	// 0, 2 and 6, one holds block 4, none block 8.
	for _, i := range []int{0, 6} {
		if err := c.Store.PutBlock(i, data[i*16<<10:(i+1)*16<<10]); err != nil {
			t.Fatal(err)
		}
	}
	tr.tree.Know(0)
	for _, w := range []string{"w1", "w2"} {
		c.Tally.Set(lpeer.ID(w), watchFilter(t, c.Tally.U, []int{0, 2, 6}))
	}
	c.Tally.Set("w3", watchFilter(t, c.Tally.U, []int{4}))
	for _, tc := range []struct {
		name      string
		id        lpeer.ID
		adopted   bool
		elsewhere []int
	}{
		{"an orphan", "orphan", true, nil},
		{"a child catching up", "kid", false, []int{2}},
	} {
		next, adopted, elsewhere, err := tr.adoptee(tc.id, 0, []int{0, 2, 4, 6, 8})
		if next != "" || adopted != tc.adopted || err != nil {
			t.Fatalf("%s: sent on to %q, adopted %t, %v; want %t", tc.name, next, adopted, err, tc.adopted)
		}
		tr.mu.Lock()
		queued := slices.Clone(tr.outs[tc.id].q)
		tr.mu.Unlock()
		if !slices.Equal(elsewhere, tc.elsewhere) || !slices.Equal(queued, []int{0}) {
			t.Errorf("%s: elsewhere %v, queued %v; want %v and [0]", tc.name, elsewhere, queued, tc.elsewhere)
		}
	}
}

// TestAdopteeBounded: orphans without end (as many identities as a
// hostile peer makes) are sent on or refused, and what the adopter keeps of
// them stays bounded.
func TestAdopteeBounded(t *testing.T) {
	dir := t.TempDir()
	m := manifestOf(t, writeRandomFile(t, dir, "data.bin", 64<<10, 3))
	c := emptyContent(t, m, filepath.Join(dir, "out"))
	p := newTestPeer(t)
	seed := newPushTrees(p.Service, c, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{"root"}}}, time.Second)
	sentOn, refused := 0, 0
	for k := range 3 * maxPushChildren {
		next, _, _, err := seed.adoptee(lpeer.ID(fmt.Sprint("orphan", k)), 0, []int{0})
		switch {
		case err != nil:
			refused++
		case next != "":
			sentOn++
		}
	}
	seed.mu.Lock()
	defer seed.mu.Unlock()
	if line, sentOn, fwds := seed.tree.Kept(0); line > maxPushChildren || sentOn > maxPushChildren || fwds > maxPushChildren {
		t.Errorf("kept %d in line, %d sent on, %d forwarders; want at most %d each", line, sentOn, fwds, maxPushChildren)
	}
	if sentOn != 2*maxPushChildren || refused != 3*maxPushChildren-1-sentOn {
		t.Errorf("%d sent on, %d refused; want %d sent on (two to each in line), the rest refused", sentOn, refused, 2*maxPushChildren)
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
		h := connectedPeer(ctx, t, a)
		s, err := h.Host().NewStream(ctx, a.ID(), ProtoAdopt)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Reset()
		bw := bufio.NewWriter(s)
		for _, f := range [][]byte{wire.Hello{Root: root[:]}.Append(nil), req} {
			if err := wire.WriteFrame(bw, f); err != nil {
				t.Fatal(err)
			}
		}
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
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
	treesOf(a.lib.Lookup(root[:])).parentFailed(w.seed.ID(), false)
	if f, err := ask(wire.AppendWant(nil, []int{0})); err != nil || !isErr(f) {
		t.Errorf("its parent gone: answered %q, %v; want an error frame", f, err)
	}
}

// TestPushSeedSpares: a seed asked to catch a child up leaves to other
// peers the blocks that spareHolders or more of its watchers hold (by the
// tally of their filters): it pushes the child none of them, and the child
// fetches them from the peer that holds them at once, rather than hold
// them for pushes that will not come (the repair time is longer than the
// test). With fewer watchers holding them, the seed pushes them all.
func TestPushSeedSpares(t *testing.T) {
	for _, watchers := range []int{0, spareHolders - 1, spareHolders} {
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
			if watchers >= spareHolders {
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
	ct := treesOf(c.lib.Lookup(root[:]))
	// c's catch-up, as its fetch starts, asks p, which names the seed.
	grand := func() lpeer.ID {
		ct.mu.Lock()
		defer ct.mu.Unlock()
		return ct.tree.Grand(0)
	}
	for grand() != s {
		select {
		case <-ctx.Done():
			t.Fatalf("c's grandparent is %v, want the seed, which p named", grand())
		case <-time.After(time.Millisecond):
		}
	}
	ct.parentFailed(p.ID(), false)
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
