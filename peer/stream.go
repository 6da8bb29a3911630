package peer

import (
	"bufio"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
)

func protocolID(s string) protocol.ID { return protocol.ID(s) }

// clientStream is one outbound request stream with deadlines on every read
// and write.
type clientStream struct {
	s    network.Stream
	fr   *frameReader
	bw   *bufio.Writer
	idle time.Duration
	stop func() bool
}

func (cs *clientStream) send(parts ...[]byte) error {
	if err := cs.s.SetWriteDeadline(time.Now().Add(cs.idle)); err != nil {
		return err
	}
	return writeFrame(cs.bw, parts...)
}

func (cs *clientStream) flush() error {
	if err := cs.s.SetWriteDeadline(time.Now().Add(cs.idle)); err != nil {
		return err
	}
	return cs.bw.Flush()
}

// next reads a frame of at most max bytes within the idle deadline.
func (cs *clientStream) next(max int) ([]byte, error) { return cs.nextWithin(max, cs.idle) }

// nextWithin reads a frame of at most max bytes within d.
func (cs *clientStream) nextWithin(max int, d time.Duration) ([]byte, error) {
	cs.fr.max = max
	if err := cs.s.SetReadDeadline(time.Now().Add(d)); err != nil {
		return nil, err
	}
	f, err := cs.fr.next()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return f, err
}

// nextInto reads a frame of at most max bytes within d into the memory of a
// buffer from get (when it fits) and hands that memory to the caller: the
// reader keeps no reference to it. get is called only once the frame starts
// to arrive, so a stream waiting for its next block holds no block buffer.
func (cs *clientStream) nextInto(get func() []byte, max int, d time.Duration) ([]byte, error) {
	cs.fr.max = max
	if err := cs.s.SetReadDeadline(time.Now().Add(d)); err != nil {
		return nil, err
	}
	if _, err := cs.fr.r.Peek(1); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	cs.fr.buf = get()[:0]
	f, err := cs.fr.next()
	cs.fr.buf = nil
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return f, err
}

// close ends the request politely: the remote sees EOF.
func (cs *clientStream) close() {
	cs.stop()
	cs.s.Close()
}

// reset aborts the stream.
func (cs *clientStream) reset() {
	cs.stop()
	cs.s.Reset()
}
