package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// The one driver of a session over a message connection. A Session does no IO;
// a Driver moves its messages: it encodes what the session queues (Ready) and
// hands the bytes to a Sender, and decodes what arrives and steps it in. Drive
// is the blocking loop over a Conn (a stream of a real peer); Run, the
// simulator and the trace test push messages into a Driver themselves.

// Sender carries the encoded messages of one session to the peer.
type Sender interface {
	// Send sends (or buffers) one encoded message. m is the message encoded,
	// for accounting and logging only; encoded is valid only during the call
	// (the Driver reuses the buffer), so a Sender that keeps it copies it.
	Send(m *Message, encoded []byte) error
	// Flush ends a batch: the messages one step of the session produced, which
	// leave back to back (one flight).
	Flush() error
}

// Conn is a Sender that also receives: one session's side of a message
// connection, such as a framed stream. Messages are not self-delimiting, so a
// Conn over a byte stream frames them (for example with a length prefix).
type Conn interface {
	Sender
	// Recv returns the next encoded message from the peer. The Driver is done
	// with it when Recv is called again, so the Conn may reuse the buffer. A
	// Conn bounds the size of what it reads (Limits.MaxMessage).
	Recv() ([]byte, error)
}

// ConnError is an error of the connection (Send, Flush or Recv), as opposed to
// the peer's conduct: [IsViolation] is false for it whatever it wraps.
type ConnError struct {
	// Op is "send", "flush" or "recv".
	Op string
	// Err is the Conn's error.
	Err error
}

// Error returns "reconcile: OP: ERR".
func (e *ConnError) Error() string { return "reconcile: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the Conn's error.
func (e *ConnError) Unwrap() error { return e.Err }

// violations are the sentinels of a peer breaking the protocol: a malformed,
// oversized, out-of-order or wrong-method message, an index outside the file,
// cells that do not decode, a peer describing another file, or a filter whose
// bytes are corrupt or too large.
var violations = []error{ErrMessage, ErrLimit, ErrVersion, ErrMethod, ErrState, ErrIndex,
	ErrUniverse, ErrDecode, cbfalgebra.ErrCorrupt, cbfalgebra.ErrTooLarge}

// IsViolation reports whether err, from [Drive], a [Driver], [Decode] or
// [Session.Step], means the peer broke the protocol: it wraps [ErrMessage],
// [ErrLimit], [ErrVersion], [ErrMethod], [ErrState], [ErrIndex], [ErrUniverse],
// [ErrDecode], cbfalgebra.ErrCorrupt or cbfalgebra.ErrTooLarge. It is false for
// nil, for a [ConnError] (the connection failed, not the peer's messages), for
// [ErrRejected] (the peer refused) and for a disagreement of configurations
// such as cbfalgebra.ErrNotHomologous: a server may ban a peer for the first
// kind, never for the others.
func IsViolation(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*ConnError](err); ok {
		return false
	}
	for _, e := range violations {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Driver moves the messages of one [Session] over a connection: [Driver.Flush]
// sends what the session has queued, [Driver.Receive] decodes and steps in one
// encoded message from the peer and sends the answers. It counts the session's
// flights ([Outcome.Flights]) as the changes of direction on this side's
// connection: exact when each side waits for the other's whole answer, as in
// every one-way exchange (an initiator's round trips are Flights/2), and one
// more than the exchange's flights at the side that answers while the peer's
// flight is still arriving (A in a two-way Complete exchange answers B's filter
// before B's blocks arrive; [Run] counts such an exchange exactly). Use [Drive] for a blocking loop over a [Conn];
// an event-driven caller (a simulator) calls Receive when a message arrives. A
// Driver is not safe for concurrent use.
type Driver struct {
	s   *Session
	out Sender
	lim Limits
	buf []byte
	dir int8 // direction of the last flight: 0 none, 1 out, -1 in
}

// NewDriver returns a driver of s that sends to out and decodes with lim. s may
// be fresh, started (initiator) or already stepped with the peer's first
// message (a responder that reads the method from it): the first Flush sends
// what it has queued.
func NewDriver(s *Session, out Sender, lim Limits) *Driver {
	d := &Driver{s: s, out: out, lim: lim}
	if s.outcome.Flights == 0 && len(s.outcome.WireReceived) > 0 {
		s.outcome.Flights, d.dir = 1, -1 // the caller stepped the first message in
	}
	return d
}

// Session returns the session driven.
func (d *Driver) Session() *Session { return d.s }

// Flush encodes the messages the session has queued (Session.Ready), sends
// them in order and flushes. Errors of the Sender are [ConnError]s.
func (d *Driver) Flush() error {
	msgs := d.s.Ready()
	for i := range msgs {
		var err error
		if d.buf, err = msgs[i].AppendBinary(d.buf[:0]); err != nil {
			return err
		}
		if err := d.out.Send(&msgs[i], d.buf); err != nil {
			return &ConnError{Op: "send", Err: err}
		}
	}
	if len(msgs) > 0 && d.dir != 1 {
		d.s.outcome.Flights++
		d.dir = 1
	}
	if err := d.out.Flush(); err != nil {
		return &ConnError{Op: "flush", Err: err}
	}
	return nil
}

// Receive decodes one encoded message from the peer with the driver's Limits,
// steps it into the session and sends (Flush) what the session answers. A
// message that does not decode ends nothing but is returned wrapped (it wraps
// ErrMessage, ErrLimit or ErrVersion: [IsViolation]). When Step fails, the
// session's MsgReject is sent first and Step's error returned. Errors of the
// Sender are [ConnError]s.
func (d *Driver) Receive(encoded []byte) error {
	if d.dir != -1 {
		d.s.outcome.Flights++
		d.dir = -1
	}
	m, err := Decode(encoded, d.lim)
	if err != nil {
		return fmt.Errorf("reconcile: peer's message: %w", err)
	}
	stepErr := d.s.Step(m)
	if err := d.Flush(); err != nil {
		if stepErr != nil {
			return errors.Join(stepErr, err)
		}
		return err
	}
	return stepErr
}

// Drive runs s to its end over c, decoding with lim: it sends what s has
// queued, then, until s is Done, receives a message, steps it in and sends the
// answers. The initiator calls [Session.Start] before Drive; a responder may
// step the first message in itself (to choose the method or configuration
// from it) before Drive, which then begins by sending the answer.
//
// Drive returns nil when the session ended well, s's error when it failed (the
// MsgReject, if any, is sent first; [ErrRejected] when the peer refused), an
// error wrapping the decode error for a message that does not decode, or a
// [ConnError]; [IsViolation] tells the peer's protocol violations from the
// rest. It counts the session's [Outcome.Flights] as a [Driver] does (round
// trips of a one-way initiator: Flights/2).
//
// Drive checks ctx between messages; interrupting a blocked Recv or Send is
// the Conn's business (a stream deadline, or closing it with context.AfterFunc).
func Drive(ctx context.Context, s *Session, c Conn, lim Limits) error {
	d := NewDriver(s, c, lim)
	if err := d.Flush(); err != nil {
		return err
	}
	for !s.Done() {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := c.Recv()
		if err != nil {
			return &ConnError{Op: "recv", Err: err}
		}
		if err := d.Receive(b); err != nil {
			return err
		}
	}
	return s.Err()
}
