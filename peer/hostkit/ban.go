package hostkit

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// AddrBanFor is how long the address a banned peer connected from is
// refused before any handshake (Host.Ban), from the ban and again from each
// of the banned peer's later attempts from it. It is short so that an
// honest peer behind the same address (a NAT) is kept out only while the
// banned one keeps trying, and for AddrBanFor after.
const AddrBanFor = 10 * time.Second

// maxAddrBans bounds the addresses refused at once; past it, new ones are
// not added until old ones expire (the peer-id ban still holds).
const maxAddrBans = 4096

// connGate is the connection gater of a Host: it refuses the connections of
// banned peers (the check of SetBanned) once they are authenticated, and
// the connections from the addresses banned peers connected from before
// any handshake (Ban).
type connGate struct {
	clk    clock.Clock
	banned *atomic.Pointer[func(lpeer.ID) bool] // the banGate's check
	// shared reports whether ip is one of the host's own addresses (peers
	// on this machine share it), or another peer, not id and not banned,
	// is connected from it now (set once the host is up).
	shared func(ip netip.Addr, id lpeer.ID) bool

	mu    sync.Mutex
	addrs map[netip.Addr]time.Time // refused until

	// refusedAccepts and refusedSecured count the connections refused
	// before and after their handshake.
	refusedAccepts, refusedSecured atomic.Int64
}

func (g *connGate) isBanned(id lpeer.ID) bool {
	f := g.banned.Load()
	return f != nil && (*f)(id)
}

// banAddr refuses the address of a, from which banned peer id connected,
// for AddrBanFor: unless a is relayed (the relay's address is not the
// peer's), is one of the host's own (every peer on this machine has it),
// or another peer not banned is connected from the same address now (a
// NAT: the others are not to be refused for it).
func (g *connGate) banAddr(a ma.Multiaddr, id lpeer.ID) {
	ip, ok := addrIP(a)
	if !ok || (g.shared != nil && g.shared(ip, id)) {
		return
	}
	until := g.clk.Now().Add(AddrBanFor)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.addrs == nil {
		g.addrs = make(map[netip.Addr]time.Time)
	}
	if _, ok := g.addrs[ip]; !ok && len(g.addrs) >= maxAddrBans {
		now := g.clk.Now()
		for k, u := range g.addrs {
			if !u.After(now) {
				delete(g.addrs, k)
			}
		}
		if len(g.addrs) >= maxAddrBans {
			return
		}
	}
	g.addrs[ip] = until
}

// addrRefused reports whether connections from a are refused now.
func (g *connGate) addrRefused(a ma.Multiaddr) bool {
	ip, ok := addrIP(a)
	if !ok {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.addrs[ip]
	if !ok {
		return false
	}
	if !until.After(g.clk.Now()) {
		delete(g.addrs, ip)
		return false
	}
	return true
}

// addrIP is the IP address of a direct connection's multiaddr; false for a
// relayed one, or one without an IP.
func addrIP(a ma.Multiaddr) (netip.Addr, bool) {
	if a == nil || IsRelayed(a) {
		return netip.Addr{}, false
	}
	ip, err := manet.ToIP(a)
	if err != nil {
		return netip.Addr{}, false
	}
	addr, ok := netip.AddrFromSlice(ip)
	return addr.Unmap(), ok
}

// InterceptPeerDial refuses to dial a banned peer.
func (g *connGate) InterceptPeerDial(id lpeer.ID) bool { return !g.isBanned(id) }

// InterceptAddrDial allows every address of a peer that may be dialled.
func (g *connGate) InterceptAddrDial(lpeer.ID, ma.Multiaddr) bool { return true }

// InterceptAccept refuses, before any handshake, a connection from an
// address a banned peer connected from lately (banAddr).
func (g *connGate) InterceptAccept(c network.ConnMultiaddrs) bool {
	if g.addrRefused(c.RemoteMultiaddr()) {
		g.refusedAccepts.Add(1)
		return false
	}
	return true
}

// InterceptSecured refuses a banned peer's connection once it is
// authenticated, and refuses its address for AddrBanFor from then on.
func (g *connGate) InterceptSecured(dir network.Direction, id lpeer.ID, c network.ConnMultiaddrs) bool {
	if !g.isBanned(id) {
		return true
	}
	g.refusedSecured.Add(1)
	if dir == network.DirInbound {
		g.banAddr(c.RemoteMultiaddr(), id)
	}
	return false
}

// InterceptUpgraded allows every connection that got that far.
func (g *connGate) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) {
	return true, 0
}

// ownRefresh is how often the host's own addresses are listed again for
// sharedAddr (interfaces come and go; listing them is a system call).
const ownRefresh = 30 * time.Second

// sharedAddr reports whether ip is an address of h's own, or a peer other
// than id, and not banned, has a direct connection from ip on h now.
func (g *connGate) sharedAddr(h host.Host) func(netip.Addr, lpeer.ID) bool {
	var mu sync.Mutex
	var own map[netip.Addr]bool
	var listed time.Time
	return func(ip netip.Addr, id lpeer.ID) bool {
		n := h.Network()
		mu.Lock()
		if own == nil || g.clk.Since(listed) > ownRefresh {
			addrs := n.ListenAddresses()
			if ifaces, err := n.InterfaceListenAddresses(); err == nil {
				addrs = append(addrs, ifaces...)
			}
			own = make(map[netip.Addr]bool, len(addrs))
			for _, a := range addrs {
				if oip, ok := addrIP(a); ok {
					own[oip] = true
				}
			}
			listed = g.clk.Now()
		}
		mine := own[ip]
		mu.Unlock()
		if mine {
			return true
		}
		for _, c := range n.Conns() {
			other := c.RemotePeer()
			if other == id || g.isBanned(other) {
				continue
			}
			if cip, ok := addrIP(c.RemoteMultiaddr()); ok && cip == ip {
				return true
			}
		}
		return false
	}
}

// Ban closes the host's connections to id, a peer the caller has banned
// (its SetBanned check names it now), and refuses for AddrBanFor, before
// any handshake, the addresses it was connected from, but for relayed
// connections, the host's own addresses, and addresses other peers not
// banned are connected from now.
// From then on the peer's bytes stop at the socket: a redial from a
// refused address is closed as it is accepted, one from elsewhere once it
// is authenticated (and its address is refused in turn). The connections
// close in the background.
func (h *Host) Ban(id lpeer.ID) {
	n := h.Network()
	for _, c := range n.ConnsToPeer(id) {
		h.conns.banAddr(c.RemoteMultiaddr(), id)
	}
	go n.ClosePeer(id)
}

// Refused returns the connections the host refused for bans so far:
// before their handshake (from a refused address) and after it (of a
// banned peer).
func (h *Host) Refused() (beforeHandshake, afterHandshake int64) {
	return h.conns.refusedAccepts.Load(), h.conns.refusedSecured.Load()
}
