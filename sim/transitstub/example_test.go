package transitstub_test

import (
	"fmt"

	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// Generate the paper's network and route between two routers.
func ExampleGenerate() {
	t, err := ts.Generate(ts.Paper(), 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Routers(), "routers, connected:", t.Connected())
	paths, _ := ts.NewPaths(t, ts.DefaultBandwidth, 0)
	r := paths.Route(0, 4000)
	fmt.Println("route has a delay:", r.DelayMS > 0, "bottleneck ≤ access link:", r.BottleneckBps <= ts.DefaultBandwidth.Access)
	// Output:
	// 5050 routers, connected: true
	// route has a delay: true bottleneck ≤ access link: true
}

// Build a Chord ring of 200 peers and look a peer up hop by hop.
func ExampleOverlay_Lookup() {
	net, err := ts.NewNetwork(ts.Paper(), ts.DefaultBandwidth, 200, ts.ChordConfig{}, 1)
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
