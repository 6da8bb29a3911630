package peer

import "github.com/reconcile-p2p/reconcile/peer/serve"

// A ServeEvent is one thing the service did for a remote peer, given to the
// WithServeObserver function (see serve.Event).
type ServeEvent = serve.Event

// An EventKind says what a ServeEvent reports.
type EventKind = serve.EventKind

// The kinds of ServeEvent.
const (
	// EventAnswered: the service answered a reconciliation session.
	EventAnswered = serve.EventAnswered
	// EventBlockSent: the service sent a block (or a coded block).
	EventBlockSent = serve.EventBlockSent
	// EventBusy: the service turned a request away "busy".
	EventBusy = serve.EventBusy
	// EventAdopted: the service adopted the peer in a stripe of its stripe
	// trees (ProtoAdopt; Index is the stripe).
	EventAdopted = serve.EventAdopted
	// EventPlaced: the service, a seed that places its fetchers (Place),
	// placed the peer under Parent in stripe Index (this service for a
	// root; "" when it waits for a place, or left); it tells them next.
	EventPlaced = serve.EventPlaced
)
