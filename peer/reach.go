package peer

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/libp2p/go-libp2p/p2p/host/observedaddrs"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Reach chooses the reachability parts of go-libp2p that New puts into its
// host (see the package doc, "Reachability"). The zero Reach enables none
// of them (a host that only dials and is dialled directly); DefaultReach
// enables all, as the command line tool does.
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
	Relays []AddrInfo
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

// DefaultReach is every reachability part on, with no static relay.
func DefaultReach() Reach {
	return Reach{AutoNAT: true, PortMap: true, RelayClient: true, HolePunch: true}
}

// WithReach sets the reachability parts of the host New builds (New only).
// Default: the zero Reach (none).
func WithReach(r Reach) Option {
	return func(c *config) error {
		if r.HolePunch && !r.RelayClient {
			return errors.New("peer: hole punching needs the relay client (peers meet through a relay first)")
		}
		c.ext().reach = r
		c.hostOpts = true
		return nil
	}
}

// reachOptions are the libp2p options for r, replacing New's DisableRelay.
func reachOptions(r Reach) []libp2p.Option {
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
		if len(r.Relays) > 0 {
			opts = append(opts, libp2p.EnableAutoRelayWithStaticRelays(r.Relays,
				autorelay.WithBootDelay(0), autorelay.WithMinCandidates(1), autorelay.WithNumRelays(len(r.Relays)),
				autorelay.WithBackoff(10*time.Second)))
		}
	} else {
		opts = append(opts, libp2p.DisableRelay())
	}
	if r.HolePunch {
		opts = append(opts, libp2p.EnableHolePunching())
	}
	switch r.Reachability {
	case network.ReachabilityPrivate:
		opts = append(opts, libp2p.ForceReachabilityPrivate())
	case network.ReachabilityPublic:
		opts = append(opts, libp2p.ForceReachabilityPublic())
	}
	return opts
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
