package testnet

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/peer/stripes"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// stripesOf returns node i's place in the stripe trees (peer.Stripes):
// its parent, grandparent and children in each tree, by their peer ids.
// The seed's parents are none; a stripe's root takes it from the seed.
func stripesOf(trees *stripes.Trees, seed, i int, ids []lpeer.ID, repair time.Duration) peer.Stripes {
	k := len(trees.Roots)
	st := peer.Stripes{Parents: make([]lpeer.ID, k), Children: make([][]lpeer.ID, k), Grandparents: make([]lpeer.ID, k), RepairAfter: repair}
	for s, root := range trees.Roots {
		if i == seed {
			st.Children[s] = []lpeer.ID{ids[root]}
			continue
		}
		if p := parentIn(trees, s, i, seed); p >= 0 {
			st.Parents[s] = ids[p]
			if g := parentIn(trees, s, p, seed); g >= 0 {
				st.Grandparents[s] = ids[g]
			}
		}
		for _, c := range trees.Kids[s][i] {
			st.Children[s] = append(st.Children[s], ids[c])
		}
	}
	return st
}

// parentIn returns node n's parent in stripe s's tree: the seed for the
// stripe's root, -1 for none (the seed, or a node not in the tree).
func parentIn(trees *stripes.Trees, s, n, seed int) int {
	switch {
	case n == seed:
		return -1
	case trees.Roots[s] == n:
		return seed
	}
	for p, kids := range trees.Kids[s] {
		if slices.Contains(kids, int32(n)) {
			return p
		}
	}
	return -1
}

// buildTrees deals the fetchers of a one-seed run into cfg.Trees stripe
// trees, each fetcher placed under the parent it would hear from first
// (the pairs' transit-stub latencies, a block's time on the seed's uplink
// per child ahead of it), and adds their parent-child pairs to ov's, and
// those adoption may need (each stripe's inner nodes with each other and
// with the seed), so that they are linked and shaped as the overlay's
// are. The late joiners (roles) are leaves only: they are not there when
// the trees are drawn, and an inner node absent would cut its subtree off
// until it joins. It fails only where the planner refuses its input.
// relayedDelayMS is what buildTrees adds to the delay of a pair that does
// not reach each other directly (NATs whose punch failed), so that the
// planner puts a child under a parent through a relay only where no direct
// parent has a free place.
const relayedDelayMS = 1e6

func buildTrees(cfg Config, net *ts.Network, ov *overlay, seed int, up []float64, blockSize int, roles []role, rng *rand.Rand, direct func(a, b int) bool) (*stripes.Trees, error) {
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
		caps = slices.Clone(up)
	}
	for i, r := range roles {
		if r.lateAt > 0 {
			if caps == nil {
				caps = make([]float64, cfg.Nodes)
				for j := range caps {
					caps[j] = 1
				}
			}
			caps[i] = 0
		}
	}
	delay := func(a, b int) float64 {
		d := float64(latency(a, b)) / float64(time.Millisecond)
		if direct != nil && !direct(a, b) {
			d += relayedDelayMS // through a relay: only where nothing direct is free
		}
		return d
	}
	plan := func() (*stripes.Trees, error) {
		return stripes.Plan(stripes.Config{Peers: cfg.Nodes, Stripes: cfg.Trees, Order: order, Up: caps, Seed: seed, Delay: delay, BlockMS: blockMS})
	}
	trees, err := plan()
	// A stripe's root takes the seed's pushes: one the seed reaches only
	// through a relay (whose limits reset the push stream) trades its place
	// in the order with the next fetcher the seed reaches directly.
	for tries := 0; err == nil && direct != nil && tries < cfg.Trees; tries++ {
		i := slices.IndexFunc(order, func(a int) bool { return slices.Contains(trees.Roots, a) && !direct(seed, a) })
		if i < 0 {
			break
		}
		j := i + 1
		for j < len(order) && (!direct(seed, order[j]) || slices.Contains(trees.Roots, order[j])) {
			j++
		}
		if j == len(order) {
			break
		}
		order[i], order[j] = order[j], order[i]
		trees, err = plan()
	}
	if err != nil {
		return nil, err
	}
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
		// An inner node that loses its parent asks its grandparent to
		// adopt it, is sent on to other orphans of the stripe, and asks
		// its adopter's parent when the adopter fails in turn (peer's
		// adoption): the stripe's inner nodes are linked with each other
		// and with the seed.
		var inner []int
		for p, kids := range trees.Kids[s] {
			if len(kids) > 0 && p != seed {
				inner = append(inner, p)
			}
		}
		for a, c := range inner {
			add(seed, c)
			for _, d := range inner[:a] {
				add(c, d)
			}
		}
	}
	slices.SortFunc(ov.pairs, func(x, y pair) int { return cmp.Or(x.a-y.a, x.b-y.b) })
	return trees, nil
}
