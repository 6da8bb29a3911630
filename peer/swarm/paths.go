package swarm

import (
	"context"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
)

// PathTo says how this host is connected to id now (hostkit.Host.Path).
func (s *Node) PathTo(id lpeer.ID) string {
	if k := s.kit; k != nil {
		return k.Path(id)
	}
	return hostkit.PathOf(s.h.Network(), id)
}

// notePaths fills in the Path, Transport and Relay of each share.
func (f *fetch) notePaths(shares []PeerShare) {
	for i := range shares {
		if id, err := lpeer.Decode(shares[i].Peer); err == nil {
			shares[i].Path = f.p.PathTo(id)
			shares[i].Transport, shares[i].Relay = hostkit.Route(f.p.h.Network(), id)
		}
	}
}

// viaRelay says whether stream s runs over a relayed connection.
func viaRelay(s network.Stream) bool { return hostkit.IsRelayed(s.Conn().RemoteMultiaddr()) }

// AwaitDirect gives hole punching a chance before blocks move over a relay
// (hostkit.Host.AwaitDirect); it returns at once on an application's host.
func (s *Node) AwaitDirect(ctx context.Context, id lpeer.ID) {
	if k := s.kit; k != nil {
		k.AwaitDirect(ctx, id)
	}
}
