package testnet

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"
	ma "github.com/multiformats/go-multiaddr"

	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/testnet/natmodel"
)

// natRun is a run's NATs and relays (Config.NAT, package natmodel): the
// model, the circuits of the relayed pairs, and the relays: relay k is
// access link n+k of the run's links, sits on a random transit router and
// has a peer id of its own (it runs no peer: only its links and limits
// are modelled).
type natRun struct {
	m        *natmodel.Model
	circuits *natmodel.Circuits
	n        int
	addrs    []ma.Multiaddr       // each relay's circuit address (natmodel.CircuitAddr)
	legs     map[[2]int]relayLegs // the relayed pairs, by (smaller, larger) node
	// relayedBlocks counts the relayed bytes of block streams.
	relayedBlocks atomic.Int64
	// host returns node i's host, to cut a pair's connections.
	host func(i int) host.Host
	// fig are the model's figures of the overlay's pairs (the
	// unreachable ones too).
	fig *natmodel.Figures
}

// relayLegs are a relayed pair's relay and the latency from each of its
// nodes (smaller first) to it, as described (not scaled).
type relayLegs struct {
	relay int
	lat   [2]time.Duration
}

// newNATRun draws the NATs of cfg.NAT (nil when no peer is behind one);
// hosts are the nodes'. Its pairs' paths are known at once (direct, for
// the planner of stripe trees); apply puts them on the overlay.
func newNATRun(cfg Config, hosts func(i int) host.Host) (*natRun, error) {
	if !cfg.NAT.On() {
		return nil, nil
	}
	m, err := natmodel.New(cfg.NAT, cfg.Nodes, cfg.Seed)
	if err != nil {
		return nil, err
	}
	r := &natRun{m: m, circuits: natmodel.NewCircuits(m), n: cfg.Nodes, legs: map[[2]int]relayLegs{}, host: hosts}
	if r.addrs, err = natmodel.RelayAddrs(cfg.NAT.Relays, cfg.Seed); err != nil {
		return nil, err
	}
	return r, nil
}

// direct says whether nodes a and b reach each other directly (without
// NATs, always); the planner of stripe trees puts no tree edge through a
// relay while a direct one is free (a relay's limits reset a push stream).
func (r *natRun) direct(a, b int) bool {
	if r == nil {
		return true
	}
	p := r.m.Path(a, b)
	return p == natmodel.Direct || p == natmodel.Punched
}

// apply drops from ov the pairs that cannot talk, and sets the latency of
// a relayed pair to that of its path through its relay, and returns the
// run's figures (nil without NATs).
func (r *natRun) apply(cfg Config, net *ts.Network, ov *overlay) *natmodel.Figures {
	if r == nil {
		return nil
	}
	m := r.m
	r.tellPrivate()
	// The relays sit on random transit routers (servers, not homes).
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x72656c6179))
	transit := 0
	for transit < net.Topology.Routers() && net.Topology.IsTransit(transit) {
		transit++
	}
	routers := make([]int, cfg.NAT.Relays)
	for k := range routers {
		routers[k] = rng.IntN(max(transit, 1))
	}
	latency := func(node, relay int) time.Duration {
		if cfg.Latency != LatencyTransitStub {
			return 0
		}
		return time.Duration(net.Overlay.Paths().Route(net.Overlay.Router(node), routers[relay]).DelayMS) * time.Millisecond
	}
	ps := make([][2]int, len(ov.pairs))
	for k, p := range ov.pairs {
		ps[k] = [2]int{p.a, p.b}
	}
	fig := m.Figures(ps)
	r.fig = &fig
	kept := ov.pairs[:0]
	for _, p := range ov.pairs {
		switch m.Path(p.a, p.b) {
		case natmodel.Unreachable:
			ov.out[p.a] = slices.DeleteFunc(ov.out[p.a], func(j int) bool { return j == p.b })
			ov.out[p.b] = slices.DeleteFunc(ov.out[p.b], func(j int) bool { return j == p.a })
			continue
		case natmodel.Relayed:
			k := m.Relay(p.a, p.b)
			l := relayLegs{relay: k, lat: [2]time.Duration{latency(p.a, k), latency(p.b, k)}}
			r.legs[[2]int{p.a, p.b}] = l
			p.latency = l.lat[0] + l.lat[1]
		}
		kept = append(kept, p)
	}
	ov.pairs = kept
	return r.fig
}

// accessRates returns the access links of the nodes followed by the
// relays': each relay has the peers' Up and Down (with Classes, the
// largest of each).
func (r *natRun) accessRates(cfg Config, up, down []float64) ([]float64, []float64) {
	if r == nil {
		return up, down
	}
	up, down = slices.Clone(up), slices.Clone(down)
	ru, rd := cfg.Up, cfg.Down
	for _, c := range cfg.Classes {
		ru, rd = max(ru, c.Up), max(rd, c.Down)
	}
	for range cfg.NAT.Relays {
		up, down = append(up, ru), append(down, rd)
	}
	return up, down
}

// relayOf returns, for node self, the circuit address of the relay of its
// pair with each remote peer (nil for a direct pair or a peer outside the
// run), for natmodel.MarkNetwork.
func (r *natRun) relayOf(self int, index map[lpeer.ID]int) func(lpeer.ID) ma.Multiaddr {
	return func(remote lpeer.ID) ma.Multiaddr {
		j, ok := index[remote]
		if !ok {
			return nil
		}
		if l, ok := r.legs[[2]int{min(self, j), max(self, j)}]; ok {
			return r.addrs[l.relay]
		}
		return nil
	}
}

// cut ends the circuit of nodes a and b and closes their connections, as
// a relay resets both ends of a circuit over its limit; they may connect
// again (a new circuit).
func (r *natRun) cut(a, b int) {
	r.circuits.Close(a, b)
	ha, hb := r.host(a), r.host(b)
	_ = ha.Network().ClosePeer(hb.ID())
	_ = hb.Network().ClosePeer(ha.ID())
}

// finish fills in what the relays carried.
func (r *natRun) finish(blockBytes int64) {
	if r == nil {
		return
	}
	f := r.fig
	f.Circuits = r.circuits.Stats()
	f.RelayedBlockBytes = r.relayedBlocks.Load()
	if blockBytes > 0 {
		f.RelayedShare = float64(f.Circuits.Bytes) / float64(blockBytes)
	}
}

// tellPrivate has each NATed node's host find itself unreachable, as
// AutoNAT would (event.EvtLocalReachabilityChanged, kept for the service
// that subscribes later): such a fetcher joins a seed's trees saying so,
// and is placed under none like it (wire.Hello.Private). The emitters stay open for the run: closed, the bus
// would forget the verdict.
func (r *natRun) tellPrivate() {
	for i := range r.n {
		if !r.m.NATed(i) {
			continue
		}
		em, err := r.host(i).EventBus().Emitter(new(event.EvtLocalReachabilityChanged), eventbus.Stateful)
		if err != nil {
			continue // a host without the event: taken for reachable
		}
		_ = em.Emit(event.EvtLocalReachabilityChanged{Reachability: network.ReachabilityPrivate})
	}
}
