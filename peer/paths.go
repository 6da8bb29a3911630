package peer

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
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
