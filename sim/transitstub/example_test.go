package transitstub_test

import (
	"fmt"

	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// Build a Chord ring of 200 peers and look a peer up hop by hop.
func ExampleOverlay_Lookup() {
	net, err := ts.NewNetwork(topology.Paper(), topology.DefaultBandwidth, 200, ts.ChordConfig{}, 1)
	if err != nil {
		panic(err)
	}
	o := net.Overlay
	l := o.Lookup(0, o.ID(123))
	fmt.Println("owner:", l.Owner, "hops:", l.Hops == len(l.Path)-1)
	// Output:
	// owner: 123 hops: true
}

// Drive the event engine: events run in time order on one goroutine.
func ExampleSim() {
	var s ts.Sim
	s.At(20, func() { fmt.Println("t =", s.Now(), "blocks arrive") })
	s.At(5, func() {
		fmt.Println("t =", s.Now(), "filter sent")
		s.After(10, func() { fmt.Println("t =", s.Now(), "filter received") })
	})
	s.Run(100)
	// Output:
	// t = 5 filter sent
	// t = 15 filter received
	// t = 20 blocks arrive
}

// The fluid lower bound for issue 15's swarm: 16 MiB from one seed to 199
// peers, every access link 20 Mbit/s up and 100 Mbit/s down. The seed's
// upload binds: no schedule finishes before F/u_s.
func ExampleFluidBound() {
	const peers = 199
	up, down := make([]float64, peers), make([]float64, peers)
	for i := range up {
		up[i], down[i] = 20e6/8, 100e6/8 // bytes per second
	}
	fmt.Printf("T* = %.2f s\n", ts.FluidBound(16<<20, 20e6/8, up, down))
	// Output:
	// T* = 6.71 s
}

// Model issue 15's swarm as package peer's fetches run it (SwarmConfig.Watch):
// one seed, 16 MiB in 256 KiB blocks, every peer 20 Mbit/s up and 100 Mbit/s
// down, on the transit-stub delays, and again with control messages that
// cost nothing (FreeControl), the best that announcing blocks faster could
// give. Costs of zero leave the reconciliations' compute out.
func ExampleRunSwarm_watch() {
	net, err := ts.NewNetwork(topology.Paper(), topology.DefaultBandwidth, 200, ts.ChordConfig{}, 1)
	if err != nil {
		panic(err)
	}
	f := ts.PaperFilter()
	f.BlockBytes = 256 << 10
	for _, free := range []bool{false, true} {
		r, err := ts.RunSwarm(net, ts.SwarmConfig{Filter: f, Blocks: 64, OneSeed: true, Up: 20e6 / 8, Down: 100e6 / 8,
			Watch: true, Parallel: 16, MaxBlocks: 16, RarestFirst: true, FreeControl: free, Seed: 1}, &ts.Costs{})
		if err != nil {
			panic(err)
		}
		fmt.Printf("free control %v: %d of %d completed, T* %.2f s, median %.1fx T*, no block twice: %v\n",
			free, r.Completed, r.Fetchers, r.TStarMS/1000, r.MedianTStar, r.RedundantBlocks == 0)
	}
	// Output:
	// free control false: 199 of 199 completed, T* 6.71 s, median 2.2x T*, no block twice: true
	// free control true: 199 of 199 completed, T* 6.71 s, median 1.8x T*, no block twice: true
}

// ExampleRunSwarm_central sets two push schedules beside T* on the watch
// model's swarm: the central schedule, which knows every peer's blocks at
// once, and pushes down stripe trees, which need no such knowledge.
func ExampleRunSwarm_central() {
	net, err := ts.NewNetwork(topology.Paper(), topology.DefaultBandwidth, 200, ts.ChordConfig{}, 1)
	if err != nil {
		panic(err)
	}
	f := ts.PaperFilter()
	f.BlockBytes = 256 << 10
	for _, cfg := range []ts.SwarmConfig{
		{Central: &ts.CentralSchedule{}},
		{Trees: 8, TreesByDelay: true},
	} {
		cfg.Filter, cfg.Blocks, cfg.OneSeed, cfg.Up, cfg.Down, cfg.Seed = f, 64, true, 20e6/8, 100e6/8, 1
		r, err := ts.RunSwarm(net, cfg, &ts.Costs{})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %d of %d completed, median %.2fx T*, max %.1fx, no block twice: %v\n",
			r.Model, r.Completed, r.Fetchers, r.MedianTStar, r.MaxTStar, r.RedundantBlocks == 0)
	}
	// Output:
	// central: 199 of 199 completed, median 1.32x T*, max 1.4x, no block twice: true
	// trees-8+by-delay: 199 of 199 completed, median 1.37x T*, max 1.5x, no block twice: true
}
