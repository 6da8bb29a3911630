package hostkit

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// The paths of a connection to a peer (Host.Path).
const (
	// PathDirect is a direct connection that was never relayed.
	PathDirect = "direct"
	// PathHolePunched is a direct connection to a peer first reached through
	// a relay (DCUtR hole punching upgraded it).
	PathHolePunched = "hole-punched"
	// PathRelayed is a circuit relay v2 connection only.
	PathRelayed = "relayed"
)

// maxPeers bounds the LAN peers dialled at once, and a quarter of the
// peers a host remembers having reached through a relay.
const maxPeers = 1024

// pathTracker remembers the peers this host was ever connected to through
// a relay, so a later direct connection to them counts as hole-punched.
type pathTracker struct {
	mu      sync.Mutex
	relayed map[lpeer.ID]struct{}
}

func newPathTracker(n network.Network) *pathTracker {
	t := &pathTracker{relayed: make(map[lpeer.ID]struct{})}
	n.Notify(&network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		if IsRelayed(c.RemoteMultiaddr()) {
			t.mu.Lock()
			if len(t.relayed) < maxPeers*4 {
				t.relayed[c.RemotePeer()] = struct{}{}
			}
			t.mu.Unlock()
		}
	}})
	return t
}

// wasRelayed says whether the host was ever connected to id through a
// relay.
func (t *pathTracker) wasRelayed(id lpeer.ID) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, was := t.relayed[id]
	return was
}

// IsRelayed says whether a is a circuit relay address.
func IsRelayed(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// Path says how the host is connected to id now: PathRelayed if only
// through relays, PathHolePunched if directly to a peer it was ever
// connected to through a relay, PathDirect if directly otherwise, "" if
// not connected.
func (h *Host) Path(id lpeer.ID) string { return pathOf(h.Network(), id, h.paths) }

// PathOf says how n is connected to id now, as Host.Path does, for a host
// New did not build: without the memory of past relayed connections, a
// direct connection counts as hole-punched only while a relayed one is up
// too.
func PathOf(n network.Network, id lpeer.ID) string { return pathOf(n, id, nil) }

// Route says over what the host reaches id now: the transport of its
// connection ("tcp", "quic", or the multiaddr's first transport protocol;
// a direct connection is preferred), and for a relayed one the relay's id.
// Both are "" when not connected.
func Route(n network.Network, id lpeer.ID) (transport, relay string) {
	var best network.Conn
	for _, c := range n.ConnsToPeer(id) {
		if best == nil || IsRelayed(best.RemoteMultiaddr()) && !IsRelayed(c.RemoteMultiaddr()) {
			best = c
		}
	}
	if best == nil {
		return "", ""
	}
	a := best.RemoteMultiaddr()
	if IsRelayed(a) {
		before, _ := ma.SplitFunc(a, func(c ma.Component) bool { return c.Protocol().Code == ma.P_CIRCUIT })
		if v, err := before.ValueForProtocol(ma.P_P2P); err == nil {
			relay = v
		}
		a = before
	}
	return TransportOf(a), relay
}

// TransportOf names the transport of multiaddr a: "quic" (QUIC v1, also
// under WebTransport), "tcp", "ws" over TCP counts as "tcp", or the name of
// its first protocol after the IP layer.
func TransportOf(a ma.Multiaddr) string {
	if _, err := a.ValueForProtocol(ma.P_QUIC_V1); err == nil {
		return "quic"
	}
	if _, err := a.ValueForProtocol(ma.P_TCP); err == nil {
		return "tcp"
	}
	for _, c := range a {
		switch c.Protocol().Code {
		case ma.P_IP4, ma.P_IP6, ma.P_DNS, ma.P_DNS4, ma.P_DNS6, ma.P_DNSADDR:
			continue
		}
		return c.Protocol().Name
	}
	return ""
}

func pathOf(n network.Network, id lpeer.ID, t *pathTracker) string {
	direct, relayed := false, false
	for _, c := range n.ConnsToPeer(id) {
		if IsRelayed(c.RemoteMultiaddr()) {
			relayed = true
		} else {
			direct = true
		}
	}
	switch {
	case direct:
		if t.wasRelayed(id) || relayed {
			return PathHolePunched
		}
		return PathDirect
	case relayed:
		return PathRelayed
	}
	return ""
}

// holePunchWait is how long AwaitDirect waits for DCUtR to turn a relayed
// connection into a direct one before it moves blocks over the relay.
const holePunchWait = 6 * time.Second

// holePunchRetry is when a relayed connection that was not upgraded is
// reopened, so that the peer tries hole punching again.
const holePunchRetry = 1500 * time.Millisecond

// AwaitDirect waits, if hole punching is on (Reach.HolePunch) and the host
// reaches id only through relays, until it has a direct connection to id,
// for 6 seconds at most, or until ctx is done: a caller that then moves
// its data moves it through a relay only when hole punching fails. It
// closes the relayed connections to id, if hole punching is slow to come,
// and dials id again through the relay, so that the peer tries again.
func (h *Host) AwaitDirect(ctx context.Context, id lpeer.ID) {
	if !h.cfg.Reach.HolePunch || h.Path(id) != PathRelayed {
		return
	}
	t := h.cfg.Clock.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	deadline := h.cfg.Clock.After(holePunchWait)
	// The peer that accepted the relayed connection starts the hole punch
	// at once, but this host answers only once its own DCUtR service runs
	// (after it has learned a public address), and an attempt may fail. If
	// no direct connection came after holePunchRetry, reconnect through the
	// relay once, so the peer tries again.
	if !h.dcutrReady() {
		// The peer's first attempt failed or will: answer its next one.
		for !h.dcutrReady() {
			select {
			case <-ctx.Done():
				return
			case <-deadline:
				return
			case <-t.Chan():
			}
		}
		h.reconnectRelayed(ctx, id)
	}
	retry := h.cfg.Clock.After(holePunchRetry)
	for h.Path(id) == PathRelayed {
		select {
		case <-ctx.Done():
			return
		case <-deadline:
			h.log.Info("hole punching did not succeed; using the relay", "peer", id)
			return
		case <-retry:
			h.reconnectRelayed(ctx, id)
		case <-t.Chan():
		}
	}
}

// reconnectRelayed closes the relayed connections to id and opens a new one.
func (h *Host) reconnectRelayed(ctx context.Context, id lpeer.ID) {
	for _, c := range h.Network().ConnsToPeer(id) {
		if IsRelayed(c.RemoteMultiaddr()) {
			c.Close()
		}
	}
	cctx, cancel := clock.WithTimeout(ctx, h.cfg.Clock, holePunchWait)
	defer cancel()
	if err := h.Connect(cctx, lpeer.AddrInfo{ID: id}); err != nil {
		h.log.Info("reconnect for hole punching", "peer", id, "err", err)
	}
}

// dcutrReady says whether the host's DCUtR (hole punching) service answers.
func (h *Host) dcutrReady() bool {
	for _, p := range h.Mux().Protocols() {
		if p == holepunch.Protocol {
			return true
		}
	}
	return false
}
