package reconcile_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// frameConn is a reconcile.Conn over a byte stream: every message travels as a
// 4-byte big-endian length and the message, reads are bounded by max.
type frameConn struct {
	r   *bufio.Reader
	w   *bufio.Writer
	max int
	buf []byte
}

func newFrameConn(c net.Conn, max int) *frameConn {
	return &frameConn{r: bufio.NewReader(c), w: bufio.NewWriter(c), max: max}
}

func (c *frameConn) Send(_ *reconcile.Message, encoded []byte) error {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(encoded)))
	if _, err := c.w.Write(n[:]); err != nil {
		return err
	}
	_, err := c.w.Write(encoded)
	return err
}

func (c *frameConn) Flush() error { return c.w.Flush() }

func (c *frameConn) Recv() ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(c.r, n[:]); err != nil {
		return nil, err
	}
	size := int(binary.BigEndian.Uint32(n[:]))
	if size > c.max {
		return nil, fmt.Errorf("frame of %d bytes > %d", size, c.max)
	}
	if cap(c.buf) < size {
		c.buf = make([]byte, size)
	}
	c.buf = c.buf[:size]
	_, err := io.ReadFull(c.r, c.buf)
	return c.buf, err
}

// Drive runs each side of a session over its own connection, here the two ends
// of a net.Pipe with length-prefixed frames. The responder reads the first
// message itself to choose its configuration (the method comes from it), steps
// it in, and lets Drive send the answer.
func ExampleDrive() {
	u, _ := reconcile.NewUniverse(1000)
	a, b := reconcile.NewSet(1000), reconcile.NewSet(1000)
	for i := range 600 {
		a.Add(i)
		b.Add(999 - i)
	}
	lim := reconcile.DefaultLimits
	ca, cb := net.Pipe()
	ctx := context.Background()

	done := make(chan error, 1)
	go func() { // the responder
		conn := newFrameConn(cb, lim.MaxMessage)
		first, err := conn.Recv()
		if err != nil {
			done <- err
			return
		}
		m, err := reconcile.Decode(first, lim)
		if err != nil {
			done <- err // a violation: reconcile.IsViolation(err) is true
			return
		}
		cfg := reconcile.Config{Method: m.Filter.Method, Limits: lim}
		s, err := reconcile.NewSession(m.Session, cfg, u, b, nil)
		if err != nil {
			done <- err
			return
		}
		s.Step(m) // on error the reject is queued; Drive sends it and returns the error
		done <- reconcile.Drive(ctx, s, conn, lim)
	}()

	// The initiator pulls (one way).
	s, _ := reconcile.NewSession(42, reconcile.Config{Method: reconcile.Complete, OneWay: true, Limits: lim}, u, a, nil)
	if err := s.Start(); err != nil {
		panic(err)
	}
	err := reconcile.Drive(ctx, s, newFrameConn(ca, lim.MaxMessage), lim)
	fmt.Println("initiator:", err, "responder:", <-done)
	o := s.Outcome()
	fmt.Println("offered to A:", len(s.Wanted()), "new blocks; round trips:", o.Flights/2)
	// Output:
	// initiator: <nil> responder: <nil>
	// offered to A: 400 new blocks; round trips: 1
}
