package hostkit

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/libp2p/go-libp2p/p2p/host/observedaddrs"
	circuitproto "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/proto"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// Reach chooses the reachability parts of go-libp2p that New puts into its
// host. The zero Reach enables none of them (a host that only dials and is
// dialled directly); DefaultReach enables all, as the command line tool
// does.
type Reach struct {
	// AutoNAT runs AutoNAT v2 (and v1) so the host learns whether its
	// addresses are reachable from outside.
	AutoNAT bool
	// AutoNATService answers other peers' AutoNAT (v1) dial-back requests;
	// public helper nodes (reconcile relay) run it.
	AutoNATService bool
	// PortMap asks the home router for a port mapping (UPnP, NAT-PMP).
	PortMap bool
	// RelayClient lets the host dial and accept circuit relay v2
	// connections, and with Relays (or relays learned later) runs AutoRelay,
	// which reserves a slot on a relay once the host finds it is not reachable
	// and advertises the relay address (/p2p/RELAY/p2p-circuit/p2p/SELF).
	RelayClient bool
	// HolePunch runs DCUtR: two peers that met through a relay try to open a
	// direct connection (simultaneous open) and move the blocks over it.
	HolePunch bool
	// Relays are static relays for AutoRelay (from flags or tickets).
	Relays []lpeer.AddrInfo
	// DHTRelays makes AutoRelay also take relays found through the DHT
	// (Config.Discovery with a DHT): peers of the DHT's routing table that
	// offer the circuit relay v2 hop protocol, such as `reconcile relay`
	// nodes, which are DHT servers. A host behind NAT then needs no Relays:
	// joining the DHT through a bootstrap peer is enough.
	DHTRelays bool
	// Reachability forces what AutoNAT would find: network.ReachabilityPrivate
	// makes the host reserve relay slots at once (useful when the operator
	// knows it is behind NAT, and in testbeds); Unknown leaves it to AutoNAT.
	Reachability network.Reachability
	// ObserversNeeded, if positive, sets how many distinct peers must report the
	// same external address before the host advertises it (libp2p's default
	// is 4). It is process-wide (go-libp2p keeps it in a package variable);
	// testbeds with few peers set 1.
	ObserversNeeded int
	// TreatAsPublic are address ranges go-libp2p is to take for public
	// internet addresses although they are reserved (it never advertises,
	// hole-punches from or relays through addresses it thinks private).
	// Process-wide (go-libp2p's manet keeps its ranges in package
	// variables). Only for testbeds whose "internet" uses a benchmark range
	// such as 198.18.0.0/15; never in production.
	TreatAsPublic []netip.Prefix
}

// DefaultReach is every reachability part on, with no static relay and
// relays found through the DHT.
func DefaultReach() Reach {
	return Reach{AutoNAT: true, PortMap: true, RelayClient: true, HolePunch: true, DHTRelays: true}
}

// reachOptions are the libp2p options for r, AutoRelay taking its relays
// from src.
func reachOptions(r Reach, src *relaySource, punches *punchLog) []libp2p.Option {
	if r.ObserversNeeded > 0 {
		observedaddrs.ActivationThresh = r.ObserversNeeded
	}
	treatAsPublic(r.TreatAsPublic)
	var opts []libp2p.Option
	if r.AutoNAT {
		opts = append(opts, libp2p.EnableAutoNATv2())
	}
	if r.AutoNATService {
		opts = append(opts, libp2p.EnableNATService())
	}
	if r.PortMap {
		opts = append(opts, libp2p.NATPortMap())
	}
	if r.RelayClient {
		opts = append(opts, libp2p.EnableRelay())
		if len(r.Relays) > 0 || r.DHTRelays {
			want := len(r.Relays)
			if r.DHTRelays {
				want = max(want, 2)
			}
			// Reserve on the first candidate at once (libp2p waits up to
			// 3 minutes for 4 of them), and ask the source again soon
			// after a relay is lost.
			opts = append(opts, libp2p.EnableAutoRelayWithPeerSource(src.peers,
				autorelay.WithBootDelay(0), autorelay.WithMinCandidates(1), autorelay.WithNumRelays(want),
				autorelay.WithBackoff(10*time.Second), autorelay.WithMinInterval(relaySourceEvery)))
		}
	} else {
		opts = append(opts, libp2p.DisableRelay())
	}
	if r.HolePunch {
		opts = append(opts, libp2p.EnableHolePunching(holepunch.WithTracer(punches)))
	}
	switch r.Reachability {
	case network.ReachabilityPrivate:
		opts = append(opts, libp2p.ForceReachabilityPrivate())
	case network.ReachabilityPublic:
		opts = append(opts, libp2p.ForceReachabilityPublic())
	}
	return opts
}

// relaySourceEvery is the least time between two calls of the relay source
// by AutoRelay; relaySourceWindow is how long one call keeps looking in the
// DHT's routing table for relays (every relayPoll).
const (
	relaySourceEvery  = 10 * time.Second
	relaySourceWindow = time.Minute
	relayPoll         = 500 * time.Millisecond
)

// relaySource is AutoRelay's peer source: the static relays, then, with a
// DHT, the peers of its routing table that offer the relay hop protocol.
type relaySource struct {
	clk    clock.Clock
	static []lpeer.AddrInfo
	dht    bool

	mu   sync.Mutex
	kd   *dht.IpfsDHT
	log  *slog.Logger
	told map[lpeer.ID]bool // DHT relays logged once
}

// setDHT gives the source the running DHT (StartDiscovery).
func (rs *relaySource) setDHT(kd *dht.IpfsDHT, log *slog.Logger) {
	rs.mu.Lock()
	rs.kd, rs.log = kd, log
	rs.mu.Unlock()
}

// peers is an autorelay.PeerSource: it sends at most num candidates, the
// static relays first, then relays found through the DHT as they turn up
// in its routing table, for relaySourceWindow at most.
func (rs *relaySource) peers(ctx context.Context, num int) <-chan lpeer.AddrInfo {
	out := make(chan lpeer.AddrInfo, max(num, 0))
	go func() {
		defer close(out)
		sent := make(map[lpeer.ID]bool)
		send := func(ai lpeer.AddrInfo) bool {
			if sent[ai.ID] {
				return true
			}
			if len(sent) >= num {
				return false
			}
			sent[ai.ID] = true
			select {
			case out <- ai:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for _, ai := range rs.static {
			if !send(ai) {
				return
			}
		}
		if !rs.dht {
			return
		}
		window := rs.clk.NewTimer(relaySourceWindow)
		defer window.Stop()
		poll := rs.clk.NewTicker(relayPoll)
		defer poll.Stop()
		for {
			for _, ai := range rs.fromDHT() {
				if !sent[ai.ID] {
					rs.note(ai.ID)
				}
				if !send(ai) {
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-window.Chan():
				return
			case <-poll.Chan():
			}
		}
	}()
	return out
}

// fromDHT are the peers of the DHT's routing table that offer the relay hop
// protocol, with their direct addresses.
func (rs *relaySource) fromDHT() []lpeer.AddrInfo {
	rs.mu.Lock()
	kd := rs.kd
	rs.mu.Unlock()
	if kd == nil {
		return nil
	}
	return relaysIn(kd.Host(), kd.RoutingTable().ListPeers())
}

// relaysIn are those of ids that offer the circuit relay v2 hop protocol
// (as identify told h), with their direct addresses.
func relaysIn(h host.Host, ids []lpeer.ID) []lpeer.AddrInfo {
	var out []lpeer.AddrInfo
	for _, id := range ids {
		if id == h.ID() {
			continue
		}
		if ps, err := h.Peerstore().SupportsProtocols(id, circuitproto.ProtoIDv2Hop); err != nil || len(ps) == 0 {
			continue
		}
		var addrs []ma.Multiaddr
		for _, a := range h.Peerstore().Addrs(id) {
			if !IsRelayed(a) {
				addrs = append(addrs, a)
			}
		}
		if len(addrs) > 0 {
			out = append(out, lpeer.AddrInfo{ID: id, Addrs: addrs})
		}
	}
	return out
}

// note logs, once per relay, that the DHT offered it.
func (rs *relaySource) note(id lpeer.ID) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.told == nil {
		rs.told = make(map[lpeer.ID]bool)
	}
	if rs.told[id] || rs.log == nil || len(rs.told) > 64 {
		return
	}
	rs.told[id] = true
	rs.log.Info("relay candidate found through the DHT", "relay", id)
}

// logRelayAddrs logs the host's relay addresses each time AutoRelay changes
// them, until the host closes.
func (h *Host) logRelayAddrs() {
	_ = h.onEvent(new(event.EvtAutoRelayAddrsUpdated), func(e any) {
		h.log.Info("relay addresses", "addrs", e.(event.EvtAutoRelayAddrsUpdated).RelayAddrs)
	})
}

// onEvent calls fn with each event of evtType's type the host's event bus
// emits, on one goroutine, until the host closes.
func (h *Host) onEvent(evtType any, fn func(e any)) error {
	sub, err := h.EventBus().Subscribe(evtType)
	if err != nil {
		return err
	}
	go func() {
		defer sub.Close()
		for {
			select {
			case <-h.ctx.Done():
				return
			case e, ok := <-sub.Out():
				if !ok {
					return
				}
				fn(e)
			}
		}
	}()
	return nil
}

var treatMu sync.Mutex

// treatAsPublic removes the ranges within any of ps from manet's private
// and unroutable IPv4 ranges.
func treatAsPublic(ps []netip.Prefix) {
	if len(ps) == 0 {
		return
	}
	treatMu.Lock()
	defer treatMu.Unlock()
	within := func(n *net.IPNet) bool {
		a, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			return false
		}
		ones, _ := n.Mask.Size()
		for _, p := range ps {
			if p.Contains(a.Unmap()) && ones >= p.Bits() {
				return true
			}
		}
		return false
	}
	keep := func(nets []*net.IPNet) []*net.IPNet {
		out := make([]*net.IPNet, 0, len(nets))
		for _, n := range nets {
			if !within(n) {
				out = append(out, n)
			}
		}
		return out
	}
	manet.Private4 = keep(manet.Private4)
	manet.Unroutable4 = keep(manet.Unroutable4)
}

// Check reports whether r is a Reach a host can have: hole punching needs
// the relay client (peers meet through a relay first).
func (r Reach) Check() error {
	if r.HolePunch && !r.RelayClient {
		return errors.New("hostkit: hole punching needs the relay client (peers meet through a relay first)")
	}
	return nil
}
