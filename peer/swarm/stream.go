package swarm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// ClientStream is one outbound request stream with deadlines on every read
// and write. Its bytes count in the wire.Counter of the context it was
// opened with (wire.WithCounter), if any.
type ClientStream struct {
	s       network.Stream
	fr      *wire.Reader
	bw      *bufio.Writer
	idle    time.Duration
	clk     clock.Clock // the service's clock
	stop    func() bool
	untrack func()
}

// Request opens a stream of proto to id for root and sends the hello (it is
// flushed with the first message, or by flush).
func (p *Node) Request(ctx context.Context, id lpeer.ID, proto protocol.ID, root chunker.ID, coded bool) (*ClientStream, error) {
	return p.RequestHello(ctx, id, proto, wire.Hello{Root: root[:], Coded: coded})
}

// RequestHello is request with the hello h.
func (p *Node) RequestHello(ctx context.Context, id lpeer.ID, proto protocol.ID, h wire.Hello) (*ClientStream, error) {
	if p.guard.IsBanned(id) {
		return nil, fmt.Errorf("%w: %s misbehaved earlier", wire.ErrUnknownRoot, id)
	}
	s, err := p.h.NewStream(network.WithAllowLimitedConn(ctx, "reconcile"), id, proto)
	if err != nil {
		return nil, err
	}
	untrack, ok := p.guard.Track(s)
	if !ok {
		s.Reset()
		return nil, fmt.Errorf("%w: %s misbehaved earlier", wire.ErrUnknownRoot, id)
	}
	rw := wire.CounterOf(ctx).Wrap(s)
	cs := &ClientStream{s: s, fr: wire.NewReader(rw), bw: bufio.NewWriterSize(rw, wire.BufSize), idle: p.cfg.StreamIdle, clk: p.clk, untrack: untrack}
	cs.stop = context.AfterFunc(ctx, func() { s.Reset() })
	if err := cs.Send(h.Append(nil)); err != nil {
		cs.Reset()
		return nil, err
	}
	return cs, nil
}

// Send writes one frame of parts within the idle deadline (Flush sends it).
func (cs *ClientStream) Send(parts ...[]byte) error {
	if err := cs.s.SetWriteDeadline(clock.Deadline(cs.clk, cs.idle)); err != nil {
		return err
	}
	return wire.WriteFrame(cs.bw, parts...)
}

// sendRaw writes bytes that are already a whole frame (see
// serverStream.sendRaw).
func (cs *ClientStream) sendRaw(frame []byte) error {
	if err := cs.s.SetWriteDeadline(clock.Deadline(cs.clk, cs.idle)); err != nil {
		return err
	}
	_, err := cs.bw.Write(frame)
	return err
}

// Flush sends what Send buffered, within the idle deadline.
func (cs *ClientStream) Flush() error {
	if err := cs.s.SetWriteDeadline(clock.Deadline(cs.clk, cs.idle)); err != nil {
		return err
	}
	return cs.bw.Flush()
}

// Next reads a frame of at most max bytes within the idle deadline.
func (cs *ClientStream) Next(max int) ([]byte, error) { return cs.NextWithin(max, cs.idle) }

// NextWithin reads a frame of at most max bytes within d.
func (cs *ClientStream) NextWithin(max int, d time.Duration) ([]byte, error) {
	if err := cs.s.SetReadDeadline(clock.Deadline(cs.clk, d)); err != nil {
		return nil, err
	}
	f, err := cs.fr.Next(max)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return f, err
}

// nextQuiet reads a frame of at most max bytes, waiting as long as it takes
// (a watch is quiet while nothing happens; the fetch's end resets it).
func (cs *ClientStream) nextQuiet(max int) ([]byte, error) {
	if err := cs.s.SetReadDeadline(time.Time{}); err != nil {
		return nil, err
	}
	f, err := cs.fr.Next(max)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return f, err
}

// nextInto reads a frame of at most max bytes within d into the memory of a
// buffer from get (see wire.Reader.NextInto).
func (cs *ClientStream) nextInto(get func(n int) []byte, max int, d time.Duration) ([]byte, error) {
	if err := cs.s.SetReadDeadline(clock.Deadline(cs.clk, d)); err != nil {
		return nil, err
	}
	f, err := cs.fr.NextInto(get, max)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return f, err
}

// Close ends the request politely: the remote sees EOF.
func (cs *ClientStream) Close() {
	cs.stop()
	cs.s.Close()
	cs.untrack()
}

// Reset aborts the stream.
func (cs *ClientStream) Reset() {
	cs.stop()
	cs.s.Reset()
	cs.untrack()
}
