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
// of the sources it reached through relays only: the hole punches DCUtR
// made, and how much each relay carried before its connection closed or
// stalled (relays cap the bytes and time of a connection), with what to do.
func (f *fetch) reachHint(err error) error {
	f.mu.Lock()
	ids := make([]lpeer.ID, 0, len(f.relayed))
	notes := make(map[lpeer.ID]relayNote, len(f.relayed))
	for id, r := range f.relayed {
		ids = append(ids, id)
		notes[id] = *r
	}
	f.mu.Unlock()
	if len(ids) == 0 {
		return err
	}
	slices.SortFunc(ids, func(a, b lpeer.ID) int { return strings.Compare(string(a), string(b)) })
	var lines []string
	for _, id := range ids {
		n := notes[id]
		line := fmt.Sprintf("peer %s was reached only through relay %s", shortPeer(id.String()), shortPeer(n.relay))
		if k := f.p.kit; k != nil {
			pu, ok := k.Punch(id)
			switch {
			case !k.HolePunching():
				line += "; hole punching is off on this host"
			case ok:
				line += "; " + pu.String()
			default:
				line += "; no hole punch was made (DCUtR needs each side to know a public address of its own that other peers observed)"
			}
		}
		if n.bytes > 0 {
			line += fmt.Sprintf("; the relay carried %d KiB of blocks, then no more", (n.bytes+1023)>>10)
		} else {
			line += "; no block came through the relay"
		}
		line += ": relays cap what a connection carries (libp2p's default: 128 KiB and 2 minutes); ask the relay's operator for more, or run reconcile relay, whose limits are higher"
		lines = append(lines, line)
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(lines, "; "))
}

// shortPeer abbreviates a peer id ("12D3Ko…abcdef") for messages.
func shortPeer(id string) string {
	if len(id) <= 14 {
		return id
	}
	return id[:6] + "…" + id[len(id)-6:]
}
