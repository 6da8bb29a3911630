package testnet

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// stripesOf returns node i's place in the stripe trees (peer.Stripes):
// its parent and children in each tree, by their peer ids. The seed's
// parents are none; a stripe's root takes it from the seed.
func stripesOf(trees *ts.StripeTrees, seed, i int, ids []lpeer.ID, repair time.Duration) peer.Stripes {
	k := len(trees.Roots)
	st := peer.Stripes{Parents: make([]lpeer.ID, k), Children: make([][]lpeer.ID, k), RepairAfter: repair}
	for s, root := range trees.Roots {
		if i == seed {
			st.Children[s] = []lpeer.ID{ids[root]}
			continue
		}
		if root == i {
			st.Parents[s] = ids[seed]
		}
		for p, kids := range trees.Kids[s] {
			for _, c := range kids {
				if int(c) == i {
					st.Parents[s] = ids[p]
				}
				if p == i {
					st.Children[s] = append(st.Children[s], ids[c])
				}
			}
		}
	}
	return st
}

// buildTrees deals the fetchers of a one-seed run into cfg.Trees stripe
// trees, each fetcher placed under the parent it would hear from first
// (the pairs' transit-stub latencies, a block's time on the seed's uplink
// per child ahead of it), and adds their parent-child pairs to ov's, so
// that they are linked and shaped as the overlay's are.
func buildTrees(cfg Config, net *ts.Network, ov *overlay, seed int, up []float64, blockSize int, rng *rand.Rand) *ts.StripeTrees {
	var order []int
	for _, a := range rng.Perm(cfg.Nodes) {
		if a != seed {
			order = append(order, a)
		}
	}
	latency := func(a, b int) time.Duration {
		if cfg.Latency != LatencyTransitStub {
			return 0
		}
		return time.Duration(net.Overlay.Route(a, b).DelayMS) * time.Millisecond
	}
	blockMS := 0.0
	if seed >= 0 && up[seed] > 0 {
		blockMS = 1000 * float64(blockSize) / up[seed]
	}
	var caps []float64
	if len(cfg.Classes) > 0 {
		caps = up
	}
	trees := ts.NewStripeTrees(cfg.Nodes, cfg.Trees, order, caps, seed,
		func(a, b int) float64 { return float64(latency(a, b)) / float64(time.Millisecond) }, blockMS)
	have := map[[2]int]bool{}
	for _, p := range ov.pairs {
		have[[2]int{p.a, p.b}] = true
	}
	add := func(a, b int) {
		k := [2]int{min(a, b), max(a, b)}
		if !have[k] {
			have[k] = true
			ov.pairs = append(ov.pairs, pair{a: k[0], b: k[1], latency: latency(k[0], k[1])})
		}
	}
	for s, root := range trees.Roots {
		add(seed, root)
		for p, kids := range trees.Kids[s] {
			for _, c := range kids {
				add(p, int(c))
			}
		}
	}
	slices.SortFunc(ov.pairs, func(x, y pair) int { return cmp.Or(x.a-y.a, x.b-y.b) })
	return trees
}
