package sched

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/internal/testkit"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestNeighbourTally: the tally of the watchers' filters never counts fewer
// watchers holding a block than do (filters of different parameters, and
// blocks announced after the filter), counts exactly with roomy filters,
// and forgets a watcher's filter when its watch ends (not when an older
// watch of the same peer ends).
func TestNeighbourTally(t *testing.T) {
	const n, watchers = 256, 12
	u, err := reconcile.NewUniverse(n)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name  string
		m     int // counters of the filters (0: each sized for its set)
		exact bool
	}{{"roomy", 1 << 14, true}, {"sized for their sets", 0, false}, {"loaded", 64, false}} {
		t.Run(tc.name, func(t *testing.T) {
			tally := NewNeighbourTally[string](u)
			holders := make([]int, n)
			sets := make([][]bool, watchers)
			filters := make([]*cbfalgebra.CBF, watchers)
			for w := range watchers {
				set := reconcile.NewSet(n)
				sets[w] = make([]bool, n)
				for i := range n {
					if rng.IntN(3) == 0 {
						set.Add(i)
					}
				}
				cfg := reconcile.Config{M: tc.m}
				if tc.m > 0 {
					cfg.K = 3
				}
				c := heldFilter(t, u, cfg, set.Indices())
				for _, i := range set.Indices() {
					sets[w][i] = true
					holders[i]++
				}
				filters[w] = c
				tally.Set(string(fmt.Sprint("w", w)), c)
			}
			// Blocks announced later, some of them held already.
			for w := range watchers {
				var idx []int
				for range 20 {
					i := rng.IntN(n)
					idx = append(idx, i)
					if !sets[w][i] {
						sets[w][i] = true
						holders[i]++
					}
				}
				tally.Have(string(fmt.Sprint("w", w)), idx)
			}
			off, offEach := 0, 0
			for i := range n {
				got, each := tally.Count(i), tally.Holders(i, watchers)
				if got < holders[i] || each < holders[i] {
					t.Fatalf("block %d: counted %d holders (%d by each filter), %d hold it", i, got, each, holders[i])
				}
				if each > got {
					t.Fatalf("block %d: %d filters hold it, above the sum's %d", i, each, got)
				}
				if got != holders[i] {
					off++
				}
				if h := min(holders[i], 2); tally.Holders(i, 2) < h {
					t.Fatalf("block %d: counted fewer than %d holders, stopping at 2", i, h)
				}
				if each != holders[i] {
					offEach++
				}
			}
			if tc.exact && off+offEach > 0 {
				t.Errorf("%d (by each filter %d) of %d blocks counted above their holders with roomy filters", off, offEach, n)
			}
			t.Logf("%d of %d blocks counted above their holders, %d by each filter", off, n, offEach)
			// An older watch of w0 ending leaves the newer filter; its own
			// end takes it out.
			w0 := string("w0")
			tally.Drop(w0, filters[1])
			if tally.Count(0) < holders[0] {
				t.Fatal("dropping another filter took w0's out")
			}
			before := tally.Count(5)
			tally.Drop(w0, filters[0])
			want := holders[5]
			if sets[0][5] {
				want--
			}
			if got := tally.Count(5); got < want || got > before {
				t.Fatalf("after w0 left, block 5 counted %d (before %d, holders now %d)", got, before, want)
			}
		})
	}
}

// heldFilter is testkit.HeldFilter.
var heldFilter = testkit.HeldFilter

// watchFilter returns the CBF of the blocks idx of u that a watcher sends
// (sized for all of u's blocks, as a watch sizes it).
func watchFilter(t testing.TB, u *reconcile.Universe, idx []int) *cbfalgebra.CBF {
	t.Helper()
	p, err := reconcile.Config{Method: reconcile.Complete}.Params(u.Blocks())
	if err != nil {
		t.Fatal(err)
	}
	return heldFilter(t, u, reconcile.Config{M: p.M, K: p.K}, idx)
}

// BenchmarkNeighbourTally reads a block's count from 24 watchers' filters of
// 1024 blocks, each holding half: from their sum (count, the rarity of
// BlockRarestFilters) and filter by filter (holders, which othersHold
// reads), with no early end.
func BenchmarkNeighbourTally(b *testing.B) {
	const n, watchers = 1024, 24
	u, err := reconcile.NewUniverse(n)
	if err != nil {
		b.Fatal(err)
	}
	tally := NewNeighbourTally[string](u)
	rng := rand.New(rand.NewPCG(3, 4))
	for w := range watchers {
		var idx []int
		for i := range n {
			if rng.IntN(2) == 0 {
				idx = append(idx, i)
			}
		}
		tally.Set(string(fmt.Sprint("w", w)), watchFilter(b, u, idx))
	}
	b.Run("count", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			tally.Count(i % n)
		}
	})
	b.Run("holders", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			tally.Holders(i%n, watchers+1)
		}
	})
}
