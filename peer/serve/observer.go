package serve

import (
	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// An EventKind says what a Event reports.
type EventKind int

const (
	// EventAnswered: the service answered a reconciliation session.
	EventAnswered EventKind = iota + 1
	// EventBlockSent: the service sent a block (or a coded block).
	EventBlockSent
	// EventBusy: the service turned a request away "busy" (a full upload
	// queue, or the peer's share of reconciliation used up).
	EventBusy
	// EventAdopted: the service adopted the peer in a stripe of its stripe
	// trees (ProtoAdopt; Index is the stripe).
	EventAdopted
	// EventPlaced: the service, a seed that places its fetchers (Place),
	// placed the peer under Parent in stripe Index (this service for a
	// root; "" when it waits for a place, or left); it tells them next.
	EventPlaced
)

// String names the kind.
func (k EventKind) String() string {
	switch k {
	case EventAnswered:
		return "answered"
	case EventBlockSent:
		return "block-sent"
	case EventBusy:
		return "busy"
	case EventAdopted:
		return "adopted"
	case EventPlaced:
		return "placed"
	}
	return "unknown"
}

// A Event is one thing the service did for a remote peer, given to the
// WithServeObserver function. Its slices belong to the service: read them
// during the call, do not keep or modify them.
type Event struct {
	// Kind is what happened.
	Kind EventKind
	// Peer is the remote peer served.
	Peer lpeer.ID
	// Parent is the peer Peer was placed under (EventPlaced).
	Parent lpeer.ID
	// Root is the content's root id.
	Root chunker.ID
	// Coded is set when the units are the coded blocks of the Byers baseline.
	Coded bool
	// Method is the reconciliation method of an answered session.
	Method reconcile.Method
	// Held lists the units the service held when it answered (EventAnswered).
	Held []int
	// Offered lists the units the answer offered (EventAnswered).
	Offered []int
	// Found lists the units the session found the peer lacks
	// (EventAnswered): Offered is these, or fewer of them when the content
	// is super-seeded (WithSuperSeeding).
	Found []int
	// Index and Bytes are the unit sent and its size (EventBlockSent);
	// Index is the stripe of an EventAdopted.
	Index, Bytes int
	// Pushed is set for a block pushed down the stripe trees
	// (Service.Push) rather than asked for (EventBlockSent).
	Pushed bool
}

// Observe passes ev to the observer, if any.
func (p *Server) Observe(ev Event) {
	if p.cfg.Observer != nil {
		p.cfg.Observer(ev)
	}
}
