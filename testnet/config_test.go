package testnet

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

func TestParseEnums(t *testing.T) {
	for _, s := range []string{"mock", "tcp"} {
		if v, err := ParseTransport(s); err != nil || v.String() != s {
			t.Errorf("transport %q: %v %v", s, v, err)
		}
	}
	for _, s := range []string{"transitstub", "none"} {
		if v, err := ParseLatency(s); err != nil || v.String() != s {
			t.Errorf("latency %q: %v %v", s, v, err)
		}
	}
	for _, s := range []string{"chord", "random"} {
		if v, err := ParseNeighbours(s); err != nil || v.String() != s {
			t.Errorf("neighbours %q: %v %v", s, v, err)
		}
	}
	if _, err := ParseTransport("udp"); !errors.Is(err, ErrConfig) {
		t.Errorf("transport udp: %v", err)
	}
	if _, err := ParseLatency("fast"); !errors.Is(err, ErrConfig) {
		t.Errorf("latency fast: %v", err)
	}
	if _, err := ParseNeighbours("all"); !errors.Is(err, ErrConfig) {
		t.Errorf("neighbours all: %v", err)
	}
}

// TestHoldingsPlan checks the initial holdings: the share each node gets, no
// duplicates, every unit held by a stable node (honest, there throughout),
// and nothing but the seed's file in the one-seed scenario.
func TestHoldingsPlan(t *testing.T) {
	for _, tc := range []struct {
		method        reconcile.Method
		hold          float64
		units, blocks int
		nodes         int
		liars         float64
		churn         Churn
	}{
		{reconcile.Complete, 0.3, 64, 64, 20, 0, Churn{}},
		{reconcile.Complete, 0.01, 100, 100, 5, 0, Churn{}}, // too few to cover: topped up
		{reconcile.Byers, 0.3, 128, 64, 20, 0, Churn{}},
		{reconcile.Complete, 1, 10, 10, 3, 0, Churn{}},
		{reconcile.Complete, 0.01, 100, 100, 10, 0.3, Churn{0.3, 0.1, 0.3}}, // few stable nodes
	} {
		cfg := Config{Nodes: tc.nodes, Hold: tc.hold, Method: tc.method, Liars: tc.liars, Churn: tc.churn}
		roles := planRoles(cfg, -1, rand.New(rand.NewPCG(3, 4)))
		plan := holdingsPlan(cfg, tc.units, tc.blocks, -1, roles, rand.New(rand.NewPCG(1, 2)))
		share := max(1, int(tc.hold*float64(tc.blocks)+0.5))
		covered := make([]bool, tc.units)
		for i, h := range plan {
			if len(h) < share || !slices.IsSorted(h) || len(slices.Compact(slices.Clone(h))) != len(h) {
				t.Errorf("%v hold %g: node %d holds %v (share %d)", tc.method, tc.hold, i, h, share)
			}
			if !roles[i].stable() {
				continue
			}
			for _, u := range h {
				covered[u] = true
			}
		}
		if slices.Contains(covered, false) {
			t.Errorf("%v hold %g: some unit held by no stable node", tc.method, tc.hold)
		}
	}
	for i, h := range holdingsPlan(Config{Nodes: 5}, 10, 10, 2, make([]role, 5), rand.New(rand.NewPCG(1, 2))) {
		if len(h) != 0 {
			t.Errorf("one-seed scenario: node %d starts with %v", i, h)
		}
	}
}

// TestBuildOverlay checks the neighbour graph: no self-links, sorted unique
// pairs covering every node's neighbours, latencies from the underlay.
func TestBuildOverlay(t *testing.T) {
	for _, cfg := range []Config{
		{Nodes: 30, Neighbours: NeighboursChord, Successors: 4},
		{Nodes: 30, Neighbours: NeighboursChord, Successors: 4, Degree: 3},
		{Nodes: 30, Neighbours: NeighboursRandom, Degree: 5},
		{Nodes: 30, Neighbours: NeighboursRandom, Degree: 5, Latency: LatencyNone},
	} {
		cfg.Topology, cfg.Dir = topology.Small(), "x"
		cfg = cfg.withDefaults()
		net, err := ts.NewNetwork(cfg.Topology, topology.DefaultBandwidth, cfg.Nodes, ts.ChordConfig{Successors: cfg.Successors}, 3)
		if err != nil {
			t.Fatal(err)
		}
		o := buildOverlay(cfg, net, rand.New(rand.NewPCG(3, 4)))
		pairs := map[[2]int]pair{}
		for k, p := range o.pairs {
			if p.a >= p.b || (k > 0 && (o.pairs[k-1].a > p.a || o.pairs[k-1].a == p.a && o.pairs[k-1].b >= p.b)) {
				t.Fatalf("%v: pairs not sorted and unique at %d: %v", cfg.Neighbours, k, p)
			}
			pairs[[2]int{p.a, p.b}] = p
			want := net.Overlay.Route(p.a, p.b).DelayMS
			if cfg.Latency == LatencyNone {
				want = 0
			}
			if p.latency.Milliseconds() != int64(want) {
				t.Errorf("%v: pair %v latency %v, want %d ms", cfg.Neighbours, p, p.latency, want)
			}
		}
		for i, nb := range o.out {
			if len(nb) == 0 || (cfg.Degree > 0 && len(nb) > cfg.Degree) ||
				(cfg.Neighbours == NeighboursRandom && len(nb) != cfg.Degree) {
				t.Errorf("%v degree %d: node %d has %d neighbours", cfg.Neighbours, cfg.Degree, i, len(nb))
			}
			for _, j := range nb {
				if j == i {
					t.Errorf("node %d is its own neighbour", i)
				}
				if _, ok := pairs[[2]int{min(i, j), max(i, j)}]; !ok {
					t.Errorf("neighbours %d-%d have no pair", i, j)
				}
			}
			if len(slices.Compact(slices.Sorted(slices.Values(nb)))) != len(nb) {
				t.Errorf("node %d lists a neighbour twice: %v", i, nb)
			}
		}
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.5, 5}, {0.95, 10}, {1, 10}, {0.1, 1}, {0.11, 2}} {
		if got := quantile(xs, tc.q); got != tc.want {
			t.Errorf("quantile(%g) = %g, want %g", tc.q, got, tc.want)
		}
	}
	if quantile(nil, 0.5) != 0 || mean(nil) != 0 || mean(xs) != 5.5 {
		t.Error("empty quantile or mean")
	}
}

// TestAccessRates: one class per node from Up/Down or Classes, the seed's
// upload from SeedUp.
func TestAccessRates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	up, down := Config{Nodes: 4, Up: 1, Down: 2, SeedUp: 5}.accessRates(2, rng)
	if !slices.Equal(up, []float64{1, 1, 5, 1}) || !slices.Equal(down, []float64{2, 2, 2, 2}) {
		t.Errorf("uniform: up %v down %v", up, down)
	}
	up, down = Config{Nodes: 10, Classes: []ts.AccessClass{{Share: 0.3, Down: 10, Up: 1}, {Share: 0.7, Down: 20, Up: 2}}}.accessRates(-1, rng)
	n := 0
	for i := range up {
		if up[i] == 1 && down[i] == 10 {
			n++
		} else if up[i] != 2 || down[i] != 20 {
			t.Errorf("node %d: up %g down %g", i, up[i], down[i])
		}
	}
	if n != 3 {
		t.Errorf("%d nodes in the 0.3 class, want 3", n)
	}
}

// TestAutoTimeScale: the scale grows with the bytes and blocks to move and
// the sources of a fetch, and shrinks with the time the network needs for
// them and with the cores; 1 without a bound (no access links) or when the
// machine keeps pace anyway.
func TestAutoTimeScale(t *testing.T) {
	const goal = 199 * 16 << 20 // the 200-peer goal run's bytes
	for _, tc := range []struct {
		nodes         int
		bytes, blocks int64
		sources       float64
		tstar         float64
		cores         int
		want          float64
	}{
		{200, goal, 199 * 64, 8, 6.71, 2, 4},    // 256 KiB blocks, 8 sources
		{200, goal, 199 * 64, 16, 6.71, 2, 6},   // the default 16 sources
		{200, goal, 199 * 256, 16, 6.71, 2, 15}, // 64 KiB blocks
		{200, goal, 199 * 64, 16, 6.71, 16, 1},  // a machine with the cores
		{20, 19 << 20, 19 * 16, 8, 0.13, 2, 1},  // a small run (the churn tests')
		{200, goal, 199 * 64, 16, 0, 2, 1},      // no bound: nothing to keep pace with
		{200, goal, 199 * 64, 16, 6.71, 0, 1},
	} {
		if got := AutoTimeScale(tc.nodes, tc.bytes, tc.blocks, tc.sources, tc.tstar, tc.cores); got != tc.want {
			t.Errorf("AutoTimeScale(%d, %d, %d, %g, %g, %d) = %g, want %g", tc.nodes, tc.bytes, tc.blocks, tc.sources, tc.tstar, tc.cores, got, tc.want)
		}
	}
}
