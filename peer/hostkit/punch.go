package hostkit

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	ma "github.com/multiformats/go-multiaddr"
)

// punchLog remembers, per remote peer, the last hole punch DCUtR made with
// it (holepunch.WithTracer), so that a failure can say what was tried.
type punchLog struct {
	mu    sync.Mutex
	peers map[lpeer.ID]*Punch
}

// Punch is what DCUtR last did to reach a peer directly (Host.Punch).
type Punch struct {
	// Attempts counts the hole punch attempts (simultaneous opens).
	Attempts int
	// Transports are the transports of the addresses the peer offered for
	// the punch ("tcp", "quic").
	Transports []string
	// Done says the hole punch ended; Success whether it opened a direct
	// connection; Err is its error.
	Done, Success bool
	Err           string
}

// String words the punch: "hole punch over tcp and quic failed after 3
// attempts: ...".
func (p Punch) String() string {
	over := "over no address"
	if len(p.Transports) > 0 {
		over = "over " + strings.Join(p.Transports, " and ")
	}
	switch {
	case p.Success:
		return "hole punch " + over + " succeeded"
	case !p.Done:
		return fmt.Sprintf("hole punch %s under way (%d attempts)", over, p.Attempts)
	}
	s := fmt.Sprintf("hole punch %s failed after %d attempts", over, p.Attempts)
	if p.Err != "" {
		s += ": " + strings.Join(strings.Fields(p.Err), " ")
	}
	return s
}

// Trace records a DCUtR event (holepunch.EventTracer).
func (l *punchLog) Trace(evt *holepunch.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.peers == nil {
		l.peers = make(map[lpeer.ID]*Punch)
	}
	p := l.peers[evt.Remote]
	if p == nil {
		if len(l.peers) >= maxPeers {
			clear(l.peers)
		}
		p = &Punch{}
		l.peers[evt.Remote] = p
	}
	switch e := evt.Evt.(type) {
	case *holepunch.StartHolePunchEvt:
		*p = Punch{}
		for _, s := range e.RemoteAddrs {
			if a, err := ma.NewMultiaddr(s); err == nil {
				if t := TransportOf(a); t != "" && !slices.Contains(p.Transports, t) {
					p.Transports = append(p.Transports, t)
				}
			}
		}
	case *holepunch.HolePunchAttemptEvt:
		p.Attempts = max(p.Attempts, e.Attempt)
	case *holepunch.EndHolePunchEvt:
		p.Done, p.Success, p.Err = true, e.Success, e.Error
	case *holepunch.ProtocolErrorEvt:
		p.Done, p.Err = true, e.Error
	}
}

// Punch returns the last hole punch DCUtR made with id, if any.
func (h *Host) Punch(id lpeer.ID) (Punch, bool) {
	if h.punches == nil {
		return Punch{}, false
	}
	h.punches.mu.Lock()
	defer h.punches.mu.Unlock()
	p, ok := h.punches.peers[id]
	if !ok {
		return Punch{}, false
	}
	q := *p
	q.Transports = slices.Clone(p.Transports)
	return q, true
}

// HolePunching reports whether the host runs DCUtR (Reach.HolePunch).
func (h *Host) HolePunching() bool { return h.cfg.Reach.HolePunch }

// ExplainRelayed words, for the error of a fetch that ran out of peers, what
// happened with peer id, which the fetch reached only through relay (an id):
// the hole punch DCUtR made (or why none), and how much of the blocks the
// relay carried before it carried no more, with what to do about relay limits.
func (h *Host) ExplainRelayed(id lpeer.ID, relay string, bytes int64) string {
	line := fmt.Sprintf("peer %s was reached only through relay %s", ShortID(id.String()), ShortID(relay))
	pu, ok := h.Punch(id)
	switch {
	case !h.HolePunching():
		line += "; hole punching is off on this host"
	case ok:
		line += "; " + pu.String()
	default:
		line += "; no hole punch was made (DCUtR needs each side to know a public address of its own that other peers observed)"
	}
	if bytes > 0 {
		line += fmt.Sprintf("; the relay carried %d KiB of blocks, then no more", (bytes+1023)>>10)
	} else {
		line += "; no block came through the relay"
	}
	return line + ": relays cap what a connection carries (libp2p's default: 128 KiB and 2 minutes); ask the relay's operator for more, or run reconcile relay, whose limits are higher"
}

// ShortID abbreviates a peer id ("12D3Ko…abcdef") for messages.
func ShortID(id string) string {
	if len(id) <= 14 {
		return id
	}
	return id[:6] + "…" + id[len(id)-6:]
}
