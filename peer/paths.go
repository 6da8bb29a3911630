package peer

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

// The paths a fetch's blocks took from a peer (PeerShare.Path).
const (
	// PathDirect is a direct connection that was never relayed.
	PathDirect = "direct"
	// PathHolePunched is a direct connection to a peer first reached through
	// a relay (DCUtR hole punching upgraded it).
	PathHolePunched = "hole-punched"
	// PathRelayed is a circuit relay v2 connection only.
	PathRelayed = "relayed"
)

// pathTracker remembers the peers this host was ever connected to through
// a relay, so a later direct connection to them counts as hole-punched.
type pathTracker struct {
	mu      sync.Mutex
	relayed map[lpeer.ID]struct{}
}

func newPathTracker(n network.Network) *pathTracker {
	t := &pathTracker{relayed: make(map[lpeer.ID]struct{})}
	n.Notify(&network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		if isRelayed(c.RemoteMultiaddr()) {
			t.mu.Lock()
			if len(t.relayed) < maxSwarm*4 {
				t.relayed[c.RemotePeer()] = struct{}{}
			}
			t.mu.Unlock()
		}
	}})
	return t
}

func isRelayed(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// pathTo says how this host is connected to id now: PathRelayed if only
// through relays, PathHolePunched or PathDirect if directly, "" if not
// connected.
func (s *Service) pathTo(id lpeer.ID) string {
	direct, relayed := false, false
	for _, c := range s.h.Network().ConnsToPeer(id) {
		if isRelayed(c.RemoteMultiaddr()) {
			relayed = true
		} else {
			direct = true
		}
	}
	switch {
	case direct:
		if t := s.paths(); t != nil {
			t.mu.Lock()
			_, was := t.relayed[id]
			t.mu.Unlock()
			if was {
				return PathHolePunched
			}
		}
		if relayed {
			return PathHolePunched
		}
		return PathDirect
	case relayed:
		return PathRelayed
	}
	return ""
}

func (s *Service) paths() *pathTracker {
	if s.cfg.x == nil {
		return nil
	}
	return s.cfg.x.paths
}

// notePaths fills in the Path of each share.
func (f *fetch) notePaths(shares []PeerShare) {
	for i := range shares {
		if id, err := lpeer.Decode(shares[i].Peer); err == nil {
			shares[i].Path = f.p.pathTo(id)
		}
	}
}

// holePunchWait is how long a fetch waits for DCUtR to turn a relayed
// connection into a direct one before it moves blocks over the relay.
const holePunchWait = 6 * time.Second

// holePunchRetry is when a relayed connection that was not upgraded is
// reopened, so that the peer tries hole punching again.
const holePunchRetry = 1500 * time.Millisecond

// awaitDirect waits, if hole punching is on and the host reaches id only
// through relays, until it has a direct connection to id, for holePunchWait
// at most: blocks then flow through a relay only when hole punching fails.
func (s *Service) awaitDirect(ctx context.Context, id lpeer.ID) {
	if s.cfg.x == nil || !s.cfg.x.reach.HolePunch || s.pathTo(id) != PathRelayed {
		return
	}
	t := s.clk.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	deadline := s.clk.After(holePunchWait)
	// The peer that accepted the relayed connection starts the hole punch
	// at once, but this host answers only once its own DCUtR service runs
	// (after it has learned a public address), and an attempt may fail. If
	// no direct connection came after holePunchRetry, reconnect through the
	// relay once, so the peer tries again.
	if !s.dcutrReady() {
		// The peer's first attempt failed or will: answer its next one.
		for !s.dcutrReady() {
			select {
			case <-ctx.Done():
				return
			case <-deadline:
				return
			case <-t.Chan():
			}
		}
		s.reconnectRelayed(ctx, id)
	}
	retry := s.clk.After(holePunchRetry)
	for s.pathTo(id) == PathRelayed {
		select {
		case <-ctx.Done():
			return
		case <-deadline:
			s.log.Info("hole punching did not succeed; using the relay", "peer", id)
			return
		case <-retry:
			s.reconnectRelayed(ctx, id)
		case <-t.Chan():
		}
	}
}

// reconnectRelayed closes the relayed connections to id and opens a new one.
// It runs only on a host New built (hole punching is a WithReach option,
// which NewService refuses): the service never closes connections of a host
// it was given.
func (s *Service) reconnectRelayed(ctx context.Context, id lpeer.ID) {
	for _, c := range s.h.Network().ConnsToPeer(id) {
		if isRelayed(c.RemoteMultiaddr()) {
			c.Close()
		}
	}
	cctx, cancel := clock.WithTimeout(ctx, s.clk, holePunchWait)
	defer cancel()
	if err := s.h.Connect(cctx, lpeer.AddrInfo{ID: id}); err != nil {
		s.log.Info("reconnect for hole punching", "peer", id, "err", err)
	}
}

// dcutrReady says whether the host's DCUtR (hole punching) service answers.
func (s *Service) dcutrReady() bool {
	for _, p := range s.h.Mux().Protocols() {
		if p == holepunch.Protocol {
			return true
		}
	}
	return false
}
