package peer

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

// clientStream is one outbound request stream with deadlines on every read
// and write.
type clientStream struct {
	s       network.Stream
	fr      *wire.Reader
	bw      *bufio.Writer
	idle    time.Duration
	clk     clock.Clock // the service's clock
	stop    func() bool
	untrack func()
}

// request opens a stream of proto to id for root and sends the hello (it is
// flushed with the first message, or by flush).
func (p *client) request(ctx context.Context, id lpeer.ID, proto protocol.ID, root chunker.ID, coded bool) (*clientStream, error) {
	return p.requestHello(ctx, id, proto, wire.Hello{Root: root[:], Coded: coded})
}

// requestHello is request with the hello h.
func (p *client) requestHello(ctx context.Context, id lpeer.ID, proto protocol.ID, h wire.Hello) (*clientStream, error) {
	if p.guard.IsBanned(id) {
		return nil, fmt.Errorf("%w: %s misbehaved earlier", ErrUnknownRoot, id)
	}
	s, err := p.h.NewStream(network.WithAllowLimitedConn(ctx, "reconcile"), id, proto)
	if err != nil {
		return nil, err
	}
	untrack, ok := p.guard.Track(s)
	if !ok {
		s.Reset()
		return nil, fmt.Errorf("%w: %s misbehaved earlier", ErrUnknownRoot, id)
	}
	cs := &clientStream{s: s, fr: wire.NewReader(s), bw: bufio.NewWriterSize(s, wire.BufSize), idle: p.cfg.StreamIdle, clk: p.clk, untrack: untrack}
	cs.stop = context.AfterFunc(ctx, func() { s.Reset() })
	if err := cs.send(h.Append(nil)); err != nil {
		cs.reset()
		return nil, err
	}
	return cs, nil
}

func (cs *clientStream) send(parts ...[]byte) error {
	if err := cs.s.SetWriteDeadline(clock.Deadline(cs.clk, cs.idle)); err != nil {
		return err
	}
	return wire.WriteFrame(cs.bw, parts...)
}

// sendRaw writes bytes that are already a whole frame (see
// serverStream.sendRaw).
func (cs *clientStream) sendRaw(frame []byte) error {
	if err := cs.s.SetWriteDeadline(clock.Deadline(cs.clk, cs.idle)); err != nil {
		return err
	}
	_, err := cs.bw.Write(frame)
	return err
}

func (cs *clientStream) flush() error {
	if err := cs.s.SetWriteDeadline(clock.Deadline(cs.clk, cs.idle)); err != nil {
		return err
	}
	return cs.bw.Flush()
}

// next reads a frame of at most max bytes within the idle deadline.
func (cs *clientStream) next(max int) ([]byte, error) { return cs.nextWithin(max, cs.idle) }

// nextWithin reads a frame of at most max bytes within d.
func (cs *clientStream) nextWithin(max int, d time.Duration) ([]byte, error) {
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
func (cs *clientStream) nextQuiet(max int) ([]byte, error) {
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
func (cs *clientStream) nextInto(get func() []byte, max int, d time.Duration) ([]byte, error) {
	if err := cs.s.SetReadDeadline(clock.Deadline(cs.clk, d)); err != nil {
		return nil, err
	}
	f, err := cs.fr.NextInto(get, max)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return f, err
}

// close ends the request politely: the remote sees EOF.
func (cs *clientStream) close() {
	cs.stop()
	cs.s.Close()
	cs.untrack()
}

// reset aborts the stream.
func (cs *clientStream) reset() {
	cs.stop()
	cs.s.Reset()
	cs.untrack()
}
