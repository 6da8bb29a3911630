package reconcile

import (
	"time"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// Outcome reports what one side of a session did and saw. Counts of blocks are in
// indices offered when the session runs without a Blocks store.
type Outcome struct {
	// Method is the protocol of the session.
	Method Method `json:"method"`
	// Params are the parameters of the filters exchanged (zero before any).
	Params cbfalgebra.Params `json:"params"`
	// Sent is the number of blocks this side sent (or offered) to the peer.
	Sent int `json:"sent"`
	// Received is the number of blocks the peer sent (or offered) to this side.
	Received int `json:"received"`
	// Redundant is the number of received blocks this side already held.
	Redundant int `json:"redundant"`
	// Missed is the number of blocks the peer held and this side lacked that did
	// not arrive. A session cannot know it alone; [Run] fills it in from both sets.
	Missed int `json:"missed"`
	// WireSent and WireReceived are the encoded bytes by message type.
	WireSent     map[MsgType]int `json:"wire_sent"`
	WireReceived map[MsgType]int `json:"wire_received"`
	// Compute is the time spent in Start and Step: building, decoding and
	// subtracting filters, querying, packing and unpacking blocks, and decoding
	// (Byers). Message encoding by the caller is not included. Compute, Build
	// and DecodeTime are read from Config.Now and stay 0 without it.
	Compute time.Duration `json:"compute_ns"`
	// Build is the time spent building (or fetching from Config.Filters) this
	// side's own filter; part of Compute. A peer keeps its filter between
	// sessions, so Compute - Build is the cost of the reconciliation proper.
	Build time.Duration `json:"build_ns"`
	// DecodeTime is the time spent erasure-decoding (Byers; part of Compute).
	DecodeTime time.Duration `json:"decode_ns"`
	// Decoded reports that the Byers session decoded the source blocks.
	Decoded bool `json:"decoded"`
	// Cells is the number of coded IBLT cells this side sent or received.
	Cells int `json:"cells,omitempty"`
	// Flights is the number of one-way message flights of the exchange (A to B,
	// B to A, ...; a round trip is two). A session cannot count them alone; [Run]
	// and the [Driver] that moves its messages fill it in.
	Flights int `json:"flights,omitempty"`
}

// WireBytes is the total of bytes sent and received.
func (o *Outcome) WireBytes() int {
	t := 0
	for _, v := range o.WireSent {
		t += v
	}
	for _, v := range o.WireReceived {
		t += v
	}
	return t
}
