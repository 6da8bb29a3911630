package testnet

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/peer/clock"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// belowStream is the stream below a linkStream in tests: it records what
// was written and when, and can hold writes back (as a reader that does not
// read) until gate is closed.
type belowStream struct {
	network.Stream
	gate   chan struct{}
	mu     sync.Mutex
	got    []byte
	at     []time.Time
	closed chan struct{}
	reset  bool
}

func newBelowStream(open bool) *belowStream {
	s := &belowStream{gate: make(chan struct{}), closed: make(chan struct{})}
	if open {
		close(s.gate)
	}
	return s
}

func (s *belowStream) Write(b []byte) (int, error) {
	<-s.gate
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, b...)
	s.at = append(s.at, time.Now())
	return len(b), nil
}

func (s *belowStream) CloseWrite() error { close(s.closed); return nil }
func (s *belowStream) CloseRead() error  { return nil }
func (s *belowStream) Reset() error {
	s.mu.Lock()
	s.reset = true
	s.mu.Unlock()
	return nil
}

func (s *belowStream) snapshot() ([]byte, []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.got...), append([]time.Time(nil), s.at...)
}

// testLink returns a linkStream from node 0 to node 1 over below.
func testLink(below network.Stream, links *ts.Links, latency time.Duration, window int) *linkStream {
	sh := &shaper{links: links, window: window, clk: clock.Real(), t0: time.Now(), sent: make([]atomic.Int64, 2)}
	ls := &linkStream{Stream: below, sh: sh, from: 0, to: 1, latency: latency, dead: make(chan struct{})}
	ls.room.L = &ls.mu
	return ls
}

// TestLinkStreamPipelines: writes arrive in order, each a latency after it
// was written, and many are in flight at once (a mock stream's own latency
// lets about two writes through per latency).
func TestLinkStreamPipelines(t *testing.T) {
	const lat = 100 * time.Millisecond
	below := newBelowStream(true)
	ls := testLink(below, nil, lat, defaultWindow)
	start := time.Now()
	var want []byte
	for i := range 20 {
		// Sizes on both sides of sizepool.MinPooled: slices made and pooled ones.
		n := 700 + 300*i
		p := bytes.Repeat([]byte{byte(i)}, n)
		if n, err := ls.Write(p); n != len(p) || err != nil {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
		p[0] = 0xff // the caller may reuse its buffer
		want = append(want, bytes.Repeat([]byte{byte(i)}, n)...)
	}
	if d := time.Since(start); d > lat/2 {
		t.Errorf("20 writes took %v: a write waited for the latency", d)
	}
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-below.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("not closed after the last delivery")
	}
	got, at := below.snapshot()
	if !bytes.Equal(got, want) {
		t.Fatal("delivered bytes differ from the written ones")
	}
	first, last := at[0].Sub(start), at[len(at)-1].Sub(start)
	if first < lat {
		t.Errorf("first write arrived after %v, before the latency %v", first, lat)
	}
	if last > 3*lat {
		t.Errorf("last of 20 writes arrived after %v: writes were not in flight together (latency %v)", last, lat)
	}
}

// TestLinkStreamUplink: with access links a write returns once the
// writer's uplink has sent it, so the writer is paced at the uplink's rate.
func TestLinkStreamUplink(t *testing.T) {
	const up = 1 << 20 // 1 MiB/s
	links := ts.NewLinks([]float64{up, 0}, []float64{0, 0})
	below := newBelowStream(true)
	ls := testLink(below, links, 0, defaultWindow)
	start := time.Now()
	for range 4 {
		if _, err := ls.Write(make([]byte, 64<<10)); err != nil {
			t.Fatal(err)
		}
	}
	// 256 KiB at 1 MiB/s: a quarter of a second.
	if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
		t.Errorf("256 KiB through a 1 MiB/s uplink took %v, want about 250ms", d)
	}
	if got := ls.sh.sent[0].Load(); got != 256<<10 {
		t.Errorf("sent %d bytes through the uplink, want %d", got, 256<<10)
	}
}

// TestLinkStreamWindow: a writer whose bytes are not read waits once the
// window is in flight, and goes on when they are read.
func TestLinkStreamWindow(t *testing.T) {
	below := newBelowStream(false)
	ls := testLink(below, nil, 0, 4096)
	wrote := make(chan int, 10)
	go func() {
		for i := range 10 {
			if _, err := ls.Write(make([]byte, 1024)); err != nil {
				return
			}
			wrote <- i
		}
	}()
	time.Sleep(100 * time.Millisecond)
	// One write is taken by the stream below (blocked in it), four more fit.
	if n := len(wrote); n > 6 {
		t.Errorf("%d writes of 1 KiB returned with nothing read and a 4 KiB window", n)
	}
	close(below.gate)
	deadline := time.After(5 * time.Second)
	for range 10 - len(wrote) {
		select {
		case <-wrote:
		case <-deadline:
			t.Fatal("writes did not go on once the reader read")
		}
	}
}

// TestLinkStreamReset: Reset drops what is in flight, resets the stream
// below and fails later writes; a writer waiting for the window is woken.
func TestLinkStreamReset(t *testing.T) {
	below := newBelowStream(false)
	ls := testLink(below, nil, time.Hour, 1024)
	if _, err := ls.Write(make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() {
		_, err := ls.Write(make([]byte, 1024))
		blocked <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := ls.Reset(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-blocked:
		if !errors.Is(err, network.ErrReset) {
			t.Errorf("waiting write: %v, want ErrReset", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write waiting for the window was not woken by Reset")
	}
	if _, err := ls.Write([]byte{1}); !errors.Is(err, network.ErrReset) {
		t.Errorf("write after reset: %v", err)
	}
	below.mu.Lock()
	defer below.mu.Unlock()
	if !below.reset || len(below.got) != 0 {
		t.Errorf("below: reset %v, %d bytes delivered (want reset, none)", below.reset, len(below.got))
	}
}

// BenchmarkLinkStream measures a 16 KiB write through a link stream to a
// stream below that keeps nothing: the model's cost per block, paid for
// every block of a testnet run. "uplink" books each write on a 1 GB/s
// uplink, so that every write sleeps (16 µs) on a timer as a testnet
// peer's do: its time is mostly the timers' granularity (about 1 ms here),
// its allocations the figure to watch.
func BenchmarkLinkStream(b *testing.B) {
	for _, bc := range []struct {
		name  string
		links *ts.Links
	}{
		{"plain", nil},
		{"uplink", ts.NewLinks([]float64{1e9, 0}, []float64{0, 0})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ls := testLink(discardStream{}, bc.links, 0, defaultWindow)
			p := make([]byte, 16<<10)
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ls.Write(p); err != nil {
					b.Fatal(err)
				}
			}
			ls.Close()
		})
	}
}

// discardStream is a stream below that drops what it is written.
type discardStream struct{ network.Stream }

func (discardStream) Write(b []byte) (int, error) { return len(b), nil }
func (discardStream) CloseWrite() error           { return nil }
func (discardStream) CloseRead() error            { return nil }
