package wire

import (
	"context"
	"io"
	"sync/atomic"
)

// Counter counts the bytes read from and written to a set of streams (the
// streams of one fetch): what the libp2p streams carried, frames and their
// length prefixes included. What the transport adds below a stream (yamux
// or mplex headers and window updates, TLS or Noise records, TCP and IP
// headers, QUIC packets) is not counted. It is safe for concurrent use; the
// zero value counts from zero.
type Counter struct {
	received, sent atomic.Int64
}

// Received is the bytes read so far.
func (c *Counter) Received() int64 { return c.received.Load() }

// Sent is the bytes written so far.
func (c *Counter) Sent() int64 { return c.sent.Load() }

// Add adds received bytes read and sent bytes written.
func (c *Counter) Add(received, sent int64) {
	c.received.Add(received)
	c.sent.Add(sent)
}

// Wrap returns rw with the bytes of every Read and Write added to c: the
// bytes a call reports, whether it fails or not (a short write counts what
// it wrote). A nil c returns rw itself.
func (c *Counter) Wrap(rw io.ReadWriter) io.ReadWriter {
	if c == nil {
		return rw
	}
	return counted{rw, c}
}

// counted is an io.ReadWriter whose bytes a Counter counts (Counter.Wrap).
type counted struct {
	rw io.ReadWriter
	c  *Counter
}

func (s counted) Read(p []byte) (int, error) {
	n, err := s.rw.Read(p)
	s.c.received.Add(int64(n))
	return n, err
}

func (s counted) Write(p []byte) (int, error) {
	n, err := s.rw.Write(p)
	s.c.sent.Add(int64(n))
	return n, err
}

type counterKey struct{}

// WithCounter returns a copy of ctx that carries c: the requests opened
// with it, or with a context derived from it, count their bytes in c (as
// net/http/httptrace carries a trace). A fetch counts its streams so.
func WithCounter(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, counterKey{}, c)
}

// CounterOf returns the Counter ctx carries (WithCounter), nil if none.
func CounterOf(ctx context.Context) *Counter {
	c, _ := ctx.Value(counterKey{}).(*Counter)
	return c
}
