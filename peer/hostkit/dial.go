package hostkit

import (
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
)

// TCPFirst is the dial ranker of the hosts New makes (unless
// Config.DialRanker says otherwise): libp2p's default ranking (happy
// eyeballs between IPv4 and IPv6, private addresses first), but with a
// peer's TCP addresses ahead of its QUIC ones, which are dialed only if no
// TCP dial has succeeded after quicAfterTCP. libp2p's own ranking does the
// opposite, and a fetch then moves its blocks over quic-go, which reaches a
// fraction of TCP's throughput here (about 0.3 times on loopback, see
// package peer's BenchmarkDialRanker and BenchmarkTransports). A peer with
// QUIC addresses only is dialed over QUIC at once.
func TCPFirst(addrs []ma.Multiaddr) []network.AddrDelay {
	isTCP := func(a ma.Multiaddr) bool {
		_, err := a.ValueForProtocol(ma.P_TCP)
		return err == nil
	}
	var tcp, other []ma.Multiaddr
	for _, a := range addrs {
		if isTCP(a) {
			tcp = append(tcp, a)
		} else {
			other = append(other, a)
		}
	}
	if len(tcp) == 0 || len(other) == 0 {
		return swarm.DefaultDialRanker(slices.Clone(addrs))
	}
	res := swarm.DefaultDialRanker(tcp)
	var last time.Duration
	for _, r := range res {
		last = max(last, r.Delay)
	}
	for _, r := range swarm.DefaultDialRanker(other) {
		r.Delay += last + quicAfterTCP
		res = append(res, r)
	}
	return res
}

// quicAfterTCP is how long the QUIC dials of a peer wait for its TCP dials.
const quicAfterTCP = 250 * time.Millisecond

// relayDials are the addresses of the relays a host knows (static ones, and
// those its relay source handed to AutoRelay). A relay is dialed over QUIC
// first, TCP only quicAfterTCP later, the reverse of other peers (TCPFirst):
// the connection to the relay tells the host, through identify, the address
// its NAT gave it on that transport, and DCUtR offers a peer only observed
// addresses. Across NATs that answer unsolicited TCP with a reset, only a
// QUIC hole punch gets through (docs/nat-testbed.md); across NATs that drop
// unsolicited packets, both do. (The swarm keeps one connection per dial:
// the second transport's dial is cancelled once the first connects, so the
// host cannot simply hold both.)
type relayDials struct {
	mu    sync.Mutex
	addrs map[string]bool // the relays' addresses, without /p2p
}

// add notes the addresses of relay ai.
func (r *relayDials) add(ai lpeer.AddrInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.addrs == nil {
		r.addrs = make(map[string]bool)
	}
	for _, a := range ai.Addrs {
		if len(r.addrs) < maxPeers*4 {
			r.addrs[bareAddr(a)] = true
		}
	}
}

// isRelay reports whether one of addrs is a known relay's.
func (r *relayDials) isRelay(addrs []ma.Multiaddr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range addrs {
		if r.addrs[bareAddr(a)] {
			return true
		}
	}
	return false
}

// ranker dials a known relay's addresses QUIC first (QUICFirst), and
// others' as next says.
func (r *relayDials) ranker(next network.DialRanker) network.DialRanker {
	return func(addrs []ma.Multiaddr) []network.AddrDelay {
		if r.isRelay(addrs) {
			return QUICFirst(addrs)
		}
		return next(addrs)
	}
}

// QUICFirst is TCPFirst with the transports swapped: a peer's QUIC
// addresses first, its TCP ones quicAfterTCP later (or at once when it has
// no QUIC address).
func QUICFirst(addrs []ma.Multiaddr) []network.AddrDelay {
	var quic, other []ma.Multiaddr
	for _, a := range addrs {
		if TransportOf(a) == "quic" {
			quic = append(quic, a)
		} else {
			other = append(other, a)
		}
	}
	if len(quic) == 0 || len(other) == 0 {
		return swarm.DefaultDialRanker(slices.Clone(addrs))
	}
	res := swarm.DefaultDialRanker(quic)
	var last time.Duration
	for _, r := range res {
		last = max(last, r.Delay)
	}
	for _, r := range swarm.DefaultDialRanker(other) {
		r.Delay += last + quicAfterTCP
		res = append(res, r)
	}
	return res
}

// bareAddr is a's string without its /p2p part.
func bareAddr(a ma.Multiaddr) string {
	bare, _ := ma.SplitFunc(a, func(c ma.Component) bool { return c.Protocol().Code == ma.P_P2P })
	return bare.String()
}
