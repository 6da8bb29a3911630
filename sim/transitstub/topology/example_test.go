package topology_test

import (
	"fmt"

	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// Generate the paper's network and route between two routers.
func ExampleGenerate() {
	t, err := topology.Generate(topology.Paper(), 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Routers(), "routers, connected:", t.Connected())
	paths, _ := topology.NewPaths(t, topology.DefaultBandwidth, 0)
	r := paths.Route(0, 4000)
	fmt.Println("route has a delay:", r.DelayMS > 0, "bottleneck ≤ access link:", r.BottleneckBps <= topology.DefaultBandwidth.Access)
	// Output:
	// 5050 routers, connected: true
	// route has a delay: true bottleneck ≤ access link: true
}
