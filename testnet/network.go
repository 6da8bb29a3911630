package testnet

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"

	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// overlay is who may talk to whom, and the latency of each pair.
type overlay struct {
	// out lists each node's own neighbours (whom it starts fetching from).
	out [][]int
	// pairs are the undirected neighbour pairs, a < b, with their latency.
	pairs []pair
}

type pair struct {
	a, b    int
	latency time.Duration
}

// buildOverlay picks the neighbours of every node and the latency of every
// neighbour pair.
func buildOverlay(cfg Config, net *ts.Network, rng *rand.Rand) overlay {
	n := cfg.Nodes
	o := overlay{out: make([][]int, n)}
	for i := range n {
		var nb []int
		switch cfg.Neighbours {
		case NeighboursRandom:
			for _, j := range rng.Perm(n - 1)[:cfg.Degree] {
				if j >= i {
					j++
				}
				nb = append(nb, j)
			}
		default:
			seen := map[int]bool{i: true}
			for _, l := range [][]int32{net.Overlay.Fingers(i), net.Overlay.SuccessorList(i)} {
				for _, j := range l {
					if !seen[int(j)] {
						seen[int(j)] = true
						nb = append(nb, int(j))
					}
				}
			}
			if cfg.Degree > 0 && len(nb) > cfg.Degree {
				nb = nb[:cfg.Degree]
			}
		}
		o.out[i] = nb
	}
	seen := map[[2]int]bool{}
	for i, nb := range o.out {
		for _, j := range nb {
			k := [2]int{min(i, j), max(i, j)}
			if seen[k] {
				continue
			}
			seen[k] = true
			var lat time.Duration
			if cfg.Latency == LatencyTransitStub {
				lat = time.Duration(net.Overlay.Route(k[0], k[1]).DelayMS) * time.Millisecond
			}
			o.pairs = append(o.pairs, pair{a: k[0], b: k[1], latency: lat})
		}
	}
	slices.SortFunc(o.pairs, func(x, y pair) int {
		if x.a != y.a {
			return x.a - y.a
		}
		return x.b - y.b
	})
	return o
}

// fabric makes the hosts of one run and joins neighbours.
type fabric interface {
	// host returns node i's host.
	host(i int) host.Host
	// link lets the two nodes of p connect and connects them.
	link(ctx context.Context, p pair, bandwidth float64) error
	// unlink closes the connections of the two nodes of p and keeps them
	// from connecting again (until link).
	unlink(p pair) error
	// allow lets the pair connect, without connecting them (the first
	// stream dials): for the pairs a seed places in its joined trees.
	allow(p pair, bandwidth float64) error
	// spare returns a host connected to nobody (for the Byers coder).
	spare() (host.Host, error)
	close() error
}

// mockFabric is go-libp2p's in-process mock network.
type mockFabric struct {
	mn    mocknet.Mocknet
	hosts []host.Host
}

func newMockFabric(n int) (*mockFabric, error) {
	f := &mockFabric{mn: mocknet.New()}
	for range n {
		h, err := f.mn.GenPeer()
		if err != nil {
			f.close()
			return nil, fmt.Errorf("testnet: mock host: %w", err)
		}
		f.hosts = append(f.hosts, h)
	}
	return f, nil
}

func (f *mockFabric) host(i int) host.Host { return f.hosts[i] }

func (f *mockFabric) link(_ context.Context, p pair, bandwidth float64) error {
	a, b := f.hosts[p.a].ID(), f.hosts[p.b].ID()
	l, err := f.mn.LinkPeers(a, b)
	if err != nil {
		return fmt.Errorf("testnet: link: %w", err)
	}
	// Options are copied when a link is made: set them on the link itself.
	// The latency is the shaper's (see shaper), not the mock network's.
	l.SetOptions(mocknet.LinkOptions{Bandwidth: bandwidth})
	if _, err := f.mn.ConnectPeers(a, b); err != nil {
		return fmt.Errorf("testnet: connect: %w", err)
	}
	return nil
}

func (f *mockFabric) allow(p pair, bandwidth float64) error {
	l, err := f.mn.LinkPeers(f.hosts[p.a].ID(), f.hosts[p.b].ID())
	if err != nil {
		return fmt.Errorf("testnet: link: %w", err)
	}
	l.SetOptions(mocknet.LinkOptions{Bandwidth: bandwidth})
	return nil
}

func (f *mockFabric) unlink(p pair) error {
	a, b := f.hosts[p.a].ID(), f.hosts[p.b].ID()
	err := f.mn.UnlinkPeers(a, b)
	_ = f.mn.DisconnectPeers(a, b)
	_ = f.mn.DisconnectPeers(b, a)
	if err != nil {
		return fmt.Errorf("testnet: unlink: %w", err)
	}
	return nil
}

func (f *mockFabric) spare() (host.Host, error) { return f.mn.GenPeer() }

func (f *mockFabric) close() error { return f.mn.Close() }

// tcpFabric is real libp2p hosts on loopback TCP, with a gater that keeps the
// overlay.
type tcpFabric struct {
	hosts []host.Host
	gate  *gate
}

func newTCPFabric(n int) (*tcpFabric, error) {
	f := &tcpFabric{gate: &gate{allowed: map[[2]lpeer.ID]bool{}}}
	for range n {
		h, err := f.newHost(true)
		if err != nil {
			f.close()
			return nil, err
		}
		f.hosts = append(f.hosts, h)
	}
	return f, nil
}

func (f *tcpFabric) newHost(gated bool) (host.Host, error) {
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		return nil, fmt.Errorf("testnet: key: %w", err)
	}
	id, err := lpeer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("testnet: key: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(key),
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.DisableMetrics(),
		libp2p.DisableRelay(),
	}
	if gated {
		opts = append(opts, libp2p.ConnectionGater(&selfGate{g: f.gate, self: id}))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("testnet: tcp host: %w", err)
	}
	return h, nil
}

func (f *tcpFabric) host(i int) host.Host { return f.hosts[i] }

func (f *tcpFabric) link(ctx context.Context, p pair, _ float64) error {
	a, b := f.hosts[p.a], f.hosts[p.b]
	f.gate.allow(a.ID(), b.ID())
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second) // libp2p's dial: real time
	defer cancel()
	if err := a.Connect(cctx, lpeer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		return fmt.Errorf("testnet: connect: %w", err)
	}
	return nil
}

func (f *tcpFabric) allow(p pair, _ float64) error {
	f.gate.allow(f.hosts[p.a].ID(), f.hosts[p.b].ID())
	return nil
}

func (f *tcpFabric) unlink(p pair) error {
	a, b := f.hosts[p.a], f.hosts[p.b]
	f.gate.disallow(a.ID(), b.ID())
	_ = a.Network().ClosePeer(b.ID())
	_ = b.Network().ClosePeer(a.ID())
	return nil
}

func (f *tcpFabric) spare() (host.Host, error) {
	h, err := f.newHost(false)
	if err != nil {
		return nil, err
	}
	f.hosts = append(f.hosts, h)
	return h, nil
}

func (f *tcpFabric) close() error {
	var first error
	for _, h := range f.hosts {
		if err := h.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// gate holds the neighbour pairs allowed to connect.
type gate struct {
	mu      sync.RWMutex
	allowed map[[2]lpeer.ID]bool
}

func (g *gate) allow(a, b lpeer.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.allowed[[2]lpeer.ID{a, b}] = true
	g.allowed[[2]lpeer.ID{b, a}] = true
}

func (g *gate) disallow(a, b lpeer.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.allowed, [2]lpeer.ID{a, b})
	delete(g.allowed, [2]lpeer.ID{b, a})
}

func (g *gate) ok(a, b lpeer.ID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.allowed[[2]lpeer.ID{a, b}]
}

// selfGate is one host's connection gater: only neighbours may connect.
type selfGate struct {
	g    *gate
	self lpeer.ID
}

func (s *selfGate) InterceptPeerDial(p lpeer.ID) bool                 { return s.g.ok(s.self, p) }
func (s *selfGate) InterceptAddrDial(p lpeer.ID, _ ma.Multiaddr) bool { return s.g.ok(s.self, p) }
func (s *selfGate) InterceptAccept(network.ConnMultiaddrs) bool       { return true }
func (s *selfGate) InterceptSecured(_ network.Direction, p lpeer.ID, _ network.ConnMultiaddrs) bool {
	return s.g.ok(s.self, p)
}
func (s *selfGate) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }

// delays returns the least latency of a path of neighbour links from node
// from to each node (Dijkstra over the pairs; math.MaxInt64 for a node no
// path reaches).
func (o overlay) delays(from int) []time.Duration {
	n := len(o.out)
	adj := make([][]pair, n)
	for _, p := range o.pairs {
		adj[p.a] = append(adj[p.a], p)
		adj[p.b] = append(adj[p.b], p)
	}
	d := make([]time.Duration, n)
	for i := range d {
		d[i] = math.MaxInt64
	}
	d[from] = 0
	done := make([]bool, n)
	for {
		u := -1
		for i := range d {
			if !done[i] && d[i] != math.MaxInt64 && (u < 0 || d[i] < d[u]) {
				u = i
			}
		}
		if u < 0 {
			return d
		}
		done[u] = true
		for _, p := range adj[u] {
			v := p.a + p.b - u
			d[v] = min(d[v], d[u]+p.latency)
		}
	}
}
