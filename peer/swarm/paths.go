package swarm

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// relayNote is what a fetch saw of a source it reached through a relay only.
type relayNote struct {
	relay string // the relay's id
	bytes int64  // block bytes that came through it
}

// noteRelayed records that source id was reached through a relay, and n
// more block bytes came through it (f.mu held).
func (f *fetch) noteRelayed(id lpeer.ID, n int) {
	if f.relayed == nil {
		f.relayed = make(map[lpeer.ID]*relayNote)
	}
	r := f.relayed[id]
	if r == nil {
		r = &relayNote{}
		f.relayed[id] = r
		_, r.relay = hostkit.Route(f.p.h.Network(), id)
	}
	r.bytes += int64(n)
}

// reachHint adds to the error of a fetch that ran out of peers what it saw
// of the sources it reached through relays only (hostkit.Host.ExplainRelayed).
func (f *fetch) reachHint(err error) error {
	f.mu.Lock()
	ids := make([]lpeer.ID, 0, len(f.relayed))
	notes := make(map[lpeer.ID]relayNote, len(f.relayed))
	for id, r := range f.relayed {
		ids = append(ids, id)
		notes[id] = *r
	}
	f.mu.Unlock()
	if len(ids) == 0 || f.p.kit == nil {
		return err
	}
	slices.SortFunc(ids, func(a, b lpeer.ID) int { return strings.Compare(string(a), string(b)) })
	lines := make([]string, len(ids))
	for k, id := range ids {
		lines[k] = f.p.kit.ExplainRelayed(id, notes[id].relay, notes[id].bytes)
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(lines, "; "))
}
