package stripes_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/reconcile-p2p/reconcile/peer/stripes"
)

// Three fetchers join two stripe trees of fanout 2 under seed 0: peer 1
// is stripe 0's root, peer 2 stripe 1's; each is a leaf of the other's
// stripe (peer 1 waited for peer 2, an inner node of stripe 1, to join),
// and peer 3, an inner node of stripe 0, takes the free place under peer
// 1. When peer 1 leaves, peer 3 becomes stripe 0's root, and peer 2, a
// leaf there, moves under it.
func ExamplePlacer() {
	p := stripes.NewPlacer(0, 2, 2)
	for _, id := range []int{1, 2, 3} {
		fmt.Println("join", id, p.Join(id))
	}
	fmt.Println("leave 1", p.Leave(1))
	// Output:
	// join 1 [{0 1 0 0}]
	// join 2 [{0 2 1 0} {1 2 0 0} {1 1 2 0}]
	// join 3 [{0 3 1 0} {1 3 2 0}]
	// leave 1 [{1 1 0 2} {0 3 0 1} {0 2 3 1}]
}

// TestPlacerInvariants joins and leaves fetchers at random, and checks
// after each step that the moves, applied in order, give the Placer's
// trees, and that these are trees: every inner node hangs from the seed,
// no node has more than twice fanout children, leaves have none, each
// stripe's root is one of its inner nodes, no private fetcher
// (JoinPrivate) hangs under another, and a fetcher lacks a parent only in
// a stripe with no free place it may take.
func TestPlacerInvariants(t *testing.T) {
	// private: one join in that many is of a fetcher others cannot dial
	// (0: none).
	for _, tc := range []struct{ k, fanout, n, private int }{{1, 1, 20, 0}, {2, 2, 30, 0}, {4, 0, 60, 0}, {8, 3, 120, 0}, {16, 0, 300, 0}, {1, 2, 20, 3}, {4, 0, 60, 2}, {8, 0, 120, 3}} {
		t.Run(fmt.Sprintf("k%d-f%d-p%d", tc.k, tc.fanout, tc.private), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.k), uint64(tc.n)))
			const seed = -1
			p := stripes.NewPlacer(seed, tc.k, tc.fanout)
			fanout := tc.fanout
			if fanout <= 0 {
				fanout = tc.k
			}
			mirror := map[[2]int]int{} // {child, stripe} -> parent
			var in []int
			next := 1
			for step := range 4 * tc.n {
				var moves []stripes.Move[int]
				if len(in) == 0 || rng.IntN(4) != 0 {
					in = append(in, next)
					if tc.private > 0 && rng.IntN(tc.private) == 0 {
						moves = p.JoinPrivate(next) // under no other private fetcher
					} else {
						moves = p.Join(next)
					}
					next++
				} else {
					j := rng.IntN(len(in))
					id := in[j]
					in = append(in[:j], in[j+1:]...)
					moves = p.Leave(id)
					for s := range tc.k {
						delete(mirror, [2]int{id, s})
					}
				}
				for _, m := range moves {
					key := [2]int{m.Child, m.Stripe}
					if got := mirror[key]; got != m.Old && m.Parent != 0 {
						t.Fatalf("step %d: move %+v, but the child's parent was %d", step, m, got)
					}
					if m.Parent == 0 {
						delete(mirror, key)
					} else {
						mirror[key] = m.Parent
					}
				}
				checkPlacer(t, p, in, mirror, seed, tc.k, fanout, step)
			}
		})
	}
}

func checkPlacer(t *testing.T, p *stripes.Placer[int], in []int, mirror map[[2]int]int, seed, k, fanout, step int) {
	t.Helper()
	if p.Len() != len(in) {
		t.Fatalf("step %d: %d placed, want %d", step, p.Len(), len(in))
	}
	for s := range k {
		// free reports whether a place id may take is free in stripe s:
		// under a rooted inner node with room, not id's descendant, and
		// not private when id is.
		free := func(id int) bool {
			for _, c := range in {
				if c == id || p.Inner(c) != s || len(p.Children(c, s)) >= 2*fanout || p.Parent(c, s) == 0 || p.Private(c) && p.Private(id) {
					continue
				}
				x := c
				for hops := 0; x != seed && x != 0 && x != id && hops <= len(in); hops++ {
					x = p.Parent(x, s)
				}
				if x != id {
					return true
				}
			}
			return false
		}
		for _, id := range in {
			kids := p.Children(id, s)
			inner := p.Inner(id) == s
			if len(kids) > 2*fanout || !inner && len(kids) > 0 {
				t.Fatalf("step %d: stripe %d: peer %d (inner %t) has children %v", step, s, id, inner, kids)
			}
			for _, c := range kids {
				if p.Parent(c, s) != id {
					t.Fatalf("step %d: stripe %d: %d lists child %d, whose parent is %d", step, s, id, c, p.Parent(c, s))
				}
				if p.Private(id) && p.Private(c) {
					t.Fatalf("step %d: stripe %d: private %d under private %d", step, s, c, id)
				}
			}
		}
		for _, id := range in {
			par := p.Parent(id, s)
			if got := mirror[[2]int{id, s}]; got != par {
				t.Fatalf("step %d: stripe %d: peer %d's parent is %d, the moves say %d", step, s, id, par, got)
			}
			if p.Inner(id) == s && par == 0 && !p.Private(id) {
				t.Fatalf("step %d: stripe %d: inner node %d has no parent", step, s, id)
			}
			if par == 0 && free(id) {
				t.Fatalf("step %d: stripe %d: peer %d waits while a place is free", step, s, id)
			}
			// Its chain reaches the seed.
			hops, x := 0, id
			for x != seed && x != 0 && hops <= len(in) {
				x, hops = p.Parent(x, s), hops+1
			}
			if par != 0 && x != seed {
				t.Fatalf("step %d: stripe %d: peer %d does not hang from the seed", step, s, id)
			}
		}
		if roots := p.Children(seed, s); len(roots) > 1 || len(roots) == 1 && p.Inner(roots[0]) != s {
			t.Fatalf("step %d: stripe %d: roots %v", step, s, roots)
		}
	}
}

// TestPlacerDepth joins n fetchers at once: none waits once every
// stripe has an inner node, the trees are as shallow as a full
// fanout-ary tree of the stripe's inner nodes allows, plus one for the
// leaves, and the leaves that spilled over a fanout are spread.
func TestPlacerDepth(t *testing.T) {
	for _, tc := range []struct{ k, n, depth int }{{16, 200, 3}, {8, 200, 4}, {4, 1000, 6}, {16, 1000, 4}} {
		const seed = -1
		p := stripes.NewPlacer(seed, tc.k, 0)
		for id := 1; id <= tc.n; id++ {
			p.Join(id)
		}
		for s := range tc.k {
			for id := 1; id <= tc.n; id++ {
				d, x := 0, id
				for x != seed {
					x, d = p.Parent(x, s), d+1
					if d > tc.n {
						t.Fatalf("k %d: stripe %d: peer %d: a cycle", tc.k, s, id)
					}
				}
				if kids := len(p.Children(id, s)); kids > p.Stripes()+1 {
					t.Fatalf("k %d, n %d: stripe %d: peer %d has %d children (the fanout is %d, and one spilled is spread)", tc.k, tc.n, s, id, kids, p.Stripes())
				}
				if d > tc.depth || p.Parent(id, s) == 0 {
					t.Fatalf("k %d, n %d: stripe %d: peer %d at depth %d (at most %d), parent %d", tc.k, tc.n, s, id, d, tc.depth, p.Parent(id, s))
				}
			}
		}
	}
}

// BenchmarkPlacerJoin joins 1,000 fetchers to 8 stripe trees one at a
// time, as a seed places a swarm that starts at once: ns/join is the
// seed's time per join.
func BenchmarkPlacerJoin(b *testing.B) {
	const n = 1000
	for b.Loop() {
		p := stripes.NewPlacer(-1, 8, 0)
		for id := 1; id <= n; id++ {
			p.Join(id)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/join")
}
