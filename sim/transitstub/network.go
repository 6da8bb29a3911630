package transitstub

import "github.com/reconcile-p2p/reconcile/sim/transitstub/topology"

// Network is the simulated world: a topology, its path cache and a Chord overlay.
type Network struct {
	Topology *topology.Topology
	Paths    *topology.Paths
	Overlay  *Overlay
}

// rowBudget bounds the memory NewNetwork's path cache spends on full rows.
const rowBudget = 512 << 20

// NewNetwork generates a topology from p, attaches peers Chord peers to random
// routers and returns the three layers. Everything derives from seed. The path
// cache keeps as many full shortest-path rows as fit in 512 MiB.
func NewNetwork(p topology.Params, bw topology.Bandwidth, peers int, chord ChordConfig, seed uint64) (*Network, error) {
	t, err := topology.Generate(p, seed)
	if err != nil {
		return nil, err
	}
	paths, err := topology.NewPaths(t, bw, max(16, rowBudget/(8*t.Routers())))
	if err != nil {
		return nil, err
	}
	o, err := NewOverlay(paths, peers, chord, seed)
	if err != nil {
		return nil, err
	}
	return &Network{Topology: t, Paths: paths, Overlay: o}, nil
}
