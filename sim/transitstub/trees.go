package transitstub

import (
	"math/rand/v2"

	"github.com/reconcile-p2p/reconcile/peer/stripes"
	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// The stripe trees (SwarmConfig.Trees) are a push protocol that needs no
// knowledge of which blocks other peers hold, after SplitStream (Castro et
// al., 2003), planned by package stripes: the file's blocks are dealt into
// k stripes (block b to stripe b mod k), each with its own tree over the
// fetchers, taken in a random order; every fetcher is an inner node of one
// tree (or two) and a leaf of the others, so it uploads at most about one
// copy of the file, as T* needs. The trees are breadth first, or with
// TreesByDelay each fetcher is under the parent it would hear from first.
//
// The seed sends each block once, in order, to its stripe's root; every
// node passes each block it gets on to its children, as soon as it is
// in, in the order they were placed. No block is sent twice; a block
// reaches the deepest leaf after about log_k(N) hops, each a one-way delay
// plus up to k block times on the sender's uplink.
//
// Who is where must be known to all (a membership list, here drawn at the
// start), and nothing repairs a tree: with churn or liars the pushes would
// have to be followed by reconciliations, which this model does not time.

// treeModel runs the stripe trees on RunSwarm's peers and clock.
type treeModel struct {
	sim      *Sim
	peers    []swarmPeer
	u        int
	blockLen int
	noDelay  bool
	blockMS  float64 // a block's time on the seed's uplink
	res      *SwarmResult
	route    func(a, b int) topology.Route
	transfer func(x, y int, route topology.Route, b int, now float64, arrived func()) float64
	complete func(a int)
	seedOut  *seedOut
	seed     int
	trees    *stripes.Trees
}

// plan deals the n peers' fetchers, in an order drawn from rng, into k
// stripe trees: in proportion to the upload capacities caps (nil: all
// alike), breadth first or, byDelay, each under the parent it would hear
// from first.
func (m *treeModel) plan(n, k int, rng *rand.Rand, caps []float64, byDelay bool) error {
	var order []int
	for _, a := range rng.Perm(n) {
		if a != m.seed {
			order = append(order, a)
		}
	}
	var delay func(a, b int) float64
	if byDelay {
		delay = func(a, b int) float64 { return float64(m.delay(a, b)) }
	}
	trees, err := stripes.Plan(stripes.Config{Peers: n, Stripes: k, Order: order, Up: caps, Seed: m.seed, Delay: delay, BlockMS: m.blockMS})
	if err != nil {
		return err
	}
	m.trees = trees
	return nil
}

// delay is the one-way delay from a to b in ms (0 with NoDelay).
func (m *treeModel) delay(a, b int) int32 {
	if m.noDelay {
		return 0
	}
	return m.route(a, b).DelayMS
}

// start sends every block from the seed to its stripe's root, in order.
func (m *treeModel) start() {
	for b := range m.u {
		m.push(m.seed, m.trees.Root(b), b)
	}
}

// push sends block b from a to y.
func (m *treeModel) push(a, y, b int) {
	r := m.route(a, y)
	if m.noDelay {
		r.DelayMS = 0
	}
	m.res.BlocksSent++
	m.res.Bytes[reconcile.MsgBlocks.String()] += int64(m.blockLen)
	done := m.transfer(a, y, r, m.blockLen, m.sim.Now(), func() { m.arrived(y, b) })
	if a == m.seed {
		m.seedOut.sent(done)
	}
}

// arrived stores block b at y and passes it on to y's children in b's
// stripe.
func (m *treeModel) arrived(y, b int) {
	q := &m.peers[y]
	if !q.set.Add(b) {
		m.res.RedundantBlocks++
		return
	}
	if q.set.Len() == m.u {
		m.complete(y)
	}
	for _, c := range m.trees.Children(b, y) {
		m.push(y, int(c), b)
	}
}
