package serve

import (
	"log/slog"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// Config is what a Server and its Guard are told by the service that runs
// them (package peer's options set it).
type Config struct {
	// Log receives the server's messages.
	Log *slog.Logger
	// Clock is the service's time: every timer, timeout and deadline of
	// the protocol comes from it.
	Clock clock.Clock
	// Limits bound what a remote peer may make this peer allocate or hold
	// open.
	Limits Limits
	// StreamIdle is how long a stream may go without progress before it
	// is reset.
	StreamIdle time.Duration
	// ServeRate caps the bytes per second of block frames served, over
	// all peers (0: no cap).
	ServeRate float64
	// Observer, if set, is told of what the server does (Event).
	Observer func(Event)
}
