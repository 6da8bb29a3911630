package serve

import (
	"bufio"
	"fmt"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Stream is one inbound request: the stream, its reader and writer and
// the content its hello names.
type Stream struct {
	S     network.Stream
	R     *wire.Reader
	bw    *bufio.Writer
	Hello wire.Hello
	C     *Content
	// u are the units the stream serves: the content's blocks, or with the
	// hello's Coded flag the units it serves beside them.
	u    Units
	idle time.Duration
	// clk is the service's clock.
	clk clock.Clock
	// until, when set, ends the request: no read waits past it (a
	// wall-clock deadline, clock.Deadline).
	until time.Time
	// admit, when set, is called with the length of the next frame before
	// its bytes are read (wire.Reader.NextAdmit).
	admit func(n int) error
	// Bytes counts what the stream read and wrote, framing included (a
	// fetch counts the pushes it takes in so).
	Bytes wire.Counter
	// key is the stream's share key (shareKey), worked out when the stream
	// is accepted: formatting the peer id is too dear for every block.
	key string
}

// shareKey returns the share key of the stream's peer: ss.key when set,
// otherwise the function shareKey's.
func (ss *Stream) shareKey() string {
	if ss.key != "" {
		return ss.key
	}
	return shareKey(ss.S.Conn())
}

// Next reads a frame of at most max bytes within the idle deadline (and
// before until, if set).
func (ss *Stream) Next(max int) ([]byte, error) {
	d := clock.Deadline(ss.clk, ss.idle)
	if !ss.until.IsZero() {
		if clock.Passed(ss.until) {
			return nil, fmt.Errorf("peer: request over its time limit: %w", os.ErrDeadlineExceeded)
		}
		if ss.until.Before(d) {
			d = ss.until
		}
	}
	if err := ss.S.SetReadDeadline(d); err != nil {
		return nil, err
	}
	return ss.R.NextAdmit(max, ss.admit)
}

// Send writes one frame within the idle deadline (it is flushed by flush).
func (ss *Stream) Send(parts ...[]byte) error {
	if err := ss.S.SetWriteDeadline(clock.Deadline(ss.clk, ss.idle)); err != nil {
		return err
	}
	return wire.WriteFrame(ss.bw, parts...)
}

// sendRaw writes bytes that are already a whole frame (within the idle
// deadline): in one write to the stream when nothing is buffered before them
// and they are larger than the buffer.
func (ss *Stream) sendRaw(frame []byte) error {
	if err := ss.S.SetWriteDeadline(clock.Deadline(ss.clk, ss.idle)); err != nil {
		return err
	}
	_, err := ss.bw.Write(frame)
	return err
}

// Flush sends what Send buffered, within the idle deadline.
func (ss *Stream) Flush() error {
	if err := ss.S.SetWriteDeadline(clock.Deadline(ss.clk, ss.idle)); err != nil {
		return err
	}
	return ss.bw.Flush()
}

// NewStream returns the inbound request s about content c (nil until its
// hello names one), with the idle deadline idle on clock clk.
func NewStream(s network.Stream, c *Content, idle time.Duration, clk clock.Clock) *Stream {
	ss := &Stream{S: s, C: c, idle: idle, clk: clk}
	rw := ss.Bytes.Wrap(s)
	ss.R, ss.bw = wire.NewReader(rw), bufio.NewWriterSize(rw, wire.BufSize)
	return ss
}

// HelloMax bounds the first frame of a request (wire.Hello).
const HelloMax = 2 + wire.MaxRootLen + 1
