package hostkit

import (
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
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
