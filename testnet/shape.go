package testnet

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/internal/sizepool"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/testnet/natmodel"
)

// shaper is the network model of a run: every write on a stream of package
// peer's protocols crosses the writer's uplink and the reader's downlink
// (the access links, when the run has them), then the latency of the pair,
// and arrives in order, as a TCP flow with a window large enough for the
// path does. The mock network's own streams are used with no latency: a
// mock stream delivers one write at a time, each after the link's latency,
// so a writer gets about two writes per latency through whatever it
// sends (256 KiB blocks over 373 ms: 11 Mbit/s a stream), which no real
// transport does.
type shaper struct {
	// links are the access links; nil for none.
	links *ts.Links
	// index is the node of a peer id.
	index map[lpeer.ID]int
	// latency is the one-way latency of a pair of nodes (smaller index
	// first); pairs not listed have none. latencyMu guards it: pairs the
	// seed placed in joined trees are added as the run goes (addPair).
	latencyMu sync.RWMutex
	latency   map[[2]int]time.Duration
	// window is the most bytes a stream has in flight (written, not yet
	// read by the other side): a writer beyond it waits, as a TCP sender
	// waits for its window to open.
	window int
	// clk is the run's clock, t0 the origin of the links' time on it.
	clk clock.Clock
	t0  time.Time
	// sent counts the bytes each node wrote through its uplink.
	sent []atomic.Int64
	// nat, when set, are the run's NATs: a relayed pair's writes cross its
	// relay (relayHop) and its limits (Write).
	nat   *natRun
	scale float64
}

// defaultWindow is a stream's window: Linux's default largest receive
// buffer (net.ipv4.tcp_rmem, 6 MiB) with its usual half for the window.
const defaultWindow = 3 << 20

// newShaper returns the model of n nodes with the given links (nil: none)
// and pair latencies, these times scale (the time scale).
func newShaper(clk clock.Clock, n int, links *ts.Links, index map[lpeer.ID]int, pairs []pair, scale float64) *shaper {
	sh := &shaper{links: links, index: index, latency: make(map[[2]int]time.Duration, len(pairs)),
		window: defaultWindow, clk: clk, t0: clk.Now(), sent: make([]atomic.Int64, n), scale: scale}
	for _, p := range pairs {
		if p.latency > 0 {
			sh.latency[[2]int{p.a, p.b}] = time.Duration(float64(p.latency) * scale)
		}
	}
	return sh
}

// addPair gives pair p, linked as the run goes, its latency.
func (sh *shaper) addPair(p pair) {
	if p.latency <= 0 {
		return
	}
	sh.latencyMu.Lock()
	sh.latency[[2]int{p.a, p.b}] = time.Duration(float64(p.latency) * sh.scale)
	sh.latencyMu.Unlock()
}

// at returns the time of the links' clock reading secs.
func (sh *shaper) at(secs float64) time.Time {
	return sh.t0.Add(time.Duration(secs * float64(time.Second)))
}

// described returns the time of the described network now (the run's
// clock slowed by the time scale), for the relays' limits.
func (sh *shaper) described() time.Time {
	return sh.t0.Add(time.Duration(float64(sh.clk.Since(sh.t0)) / sh.scale))
}

// stream returns s shaped as written by node from, or s itself when its
// remote peer is not a node of the run; blocks says s carries blocks.
func (sh *shaper) stream(s network.Stream, from int, blocks bool) network.Stream {
	to, ok := sh.index[s.Conn().RemotePeer()]
	if !ok {
		return s
	}
	sh.latencyMu.RLock()
	lat := sh.latency[[2]int{min(from, to), max(from, to)}]
	sh.latencyMu.RUnlock()
	ls := &linkStream{Stream: s, sh: sh, from: from, to: to, blocks: blocks, latency: lat, dead: make(chan struct{})}
	if sh.nat != nil {
		if l, ok := sh.nat.legs[[2]int{min(from, to), max(from, to)}]; ok {
			// Through the relay: the writer's leg, then the reader's.
			in, out := l.lat[0], l.lat[1]
			if from > to {
				in, out = out, in
			}
			ls.latency = time.Duration(float64(in) * sh.scale)
			ls.hop = &relayHop{relay: l.relay, latency: time.Duration(float64(out) * sh.scale),
				gen: sh.nat.circuits.Open(from, to, sh.described()), conn: natmodel.MarkConn(s.Conn(), sh.nat.addrs[l.relay])}
		}
	}
	ls.room.L = &ls.mu
	return ls
}

// linkStream is one direction of a stream through the model. Write books
// the bytes on the writer's uplink and returns once it has sent them (the
// caller's goroutine sleeps meanwhile, as on a socket whose buffer is
// full); a latency later they reach the reader's downlink, which delivers
// them to the stream below in the order bytes reach it from all its
// streams, each stream's in order. The deliveries run on a timer of the
// stream's own (step), not a goroutine: a goroutine that slept through
// every stream's latency was a sixth of a 200-peer run's goroutines, their
// stacks 0.3 MiB a peer. Close and CloseWrite end the stream after the
// last delivery; Reset drops what is in flight at once.
type linkStream struct {
	network.Stream
	sh       *shaper
	from, to int
	// latency is the pair's, or the writer's to the relay.
	latency time.Duration
	blocks  bool // the stream carries blocks

	// hop is the relay of a relayed pair (nil: direct).
	hop *relayHop

	// wmu makes writes sequential, as on a socket; it guards wtimer.
	wmu    sync.Mutex
	wtimer clock.Timer // the writer's sleeps on its uplink

	mu      sync.Mutex
	room    sync.Cond // signalled when queued falls or the stream dies
	q       []delivery
	queued  int
	err     error
	closing bool // CloseWrite called: close once q is delivered
	// running is set while deliveries are due: step runs or dtimer is set
	// to run it (at most one of them at a time).
	running bool
	dtimer  clock.Timer // runs step when the next delivery is due
	dead    chan struct{}
	once    sync.Once
}

// delivery is one write in flight: its bytes and when they reach the next
// place on their way (stage).
type delivery struct {
	b     []byte
	at    time.Time
	stage stage
}

// stage is where a delivery's bytes are going: to the relay (a relayed
// pair's), to the reader's downlink, or out of it to the reader.
type stage uint8

const (
	toRelay stage = iota
	toDownlink
	toReader
)

// Write sends p through the links and the latency; the caller may reuse p
// once it returns.
func (s *linkStream) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	for s.err == nil && !s.closing && s.queued > 0 && s.queued+len(p) > s.sh.window {
		s.room.Wait()
	}
	if err := s.failed(); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	s.mu.Unlock()

	if s.hop != nil {
		n, err := s.sh.nat.circuits.Carry(s.from, s.to, s.hop.gen, len(p), s.sh.described())
		if s.blocks {
			s.sh.nat.relayedBlocks.Add(int64(n))
		}
		if err != nil {
			// The relay carries the bytes up to its limit, then resets
			// both ends; they are lost with the stream.
			if natmodel.IsLimit(err) {
				go s.sh.nat.cut(s.from, s.to)
			}
			return 0, network.ErrReset
		}
	}
	sent := s.sh.clk.Now()
	if s.sh.links != nil {
		end := s.sh.links.Up(s.from, len(p), s.sh.clk.Since(s.sh.t0).Seconds())
		sent = s.sh.at(end)
		if !s.sleepUntil(&s.wtimer, sent) {
			return 0, network.ErrReset
		}
	}
	s.sh.sent[s.from].Add(int64(len(p)))

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failed(); err != nil {
		return 0, err
	}
	first := toDownlink
	if s.hop != nil {
		first = toRelay
	}
	s.q = append(s.q, delivery{b: append(sizepool.Get(len(p)), p...), at: sent.Add(s.latency), stage: first})
	s.queued += len(p)
	if !s.running {
		s.running = true
		s.wakeAt(s.q[0].at)
	}
	return len(p), nil
}

// failed returns the error a write gets now (s.mu held).
func (s *linkStream) failed() error {
	if s.err != nil {
		return s.err
	}
	if s.closing {
		return network.ErrReset
	}
	return nil
}

// sleepUntil waits until t on *tm, the calling goroutine's own timer (made
// on first use, then reset: a timer per sleep was 8 % of a 200-peer run's
// CPU, in allocations and the collector); false if the stream was reset
// meanwhile.
func (s *linkStream) sleepUntil(tm *clock.Timer, t time.Time) bool {
	d := s.sh.clk.Until(t)
	if d <= 0 {
		return true
	}
	if *tm == nil {
		*tm = s.sh.clk.NewTimer(d)
	} else {
		(*tm).Reset(d) // no stale fire: the channel is synchronous (Go 1.23)
	}
	select {
	case <-(*tm).Chan():
		return true
	case <-s.dead:
		(*tm).Stop()
		return false
	}
}

// wakeAt has step run at t (s.mu held, s.running set).
func (s *linkStream) wakeAt(t time.Time) {
	d := max(s.sh.clk.Until(t), 0)
	if s.dtimer == nil {
		s.dtimer = s.sh.clk.AfterFunc(d, s.step)
		return
	}
	s.dtimer.Reset(d)
}

// step delivers the queue in order, each write at its time: it moves what
// is due on its way (through the relay, the reader's downlink, then to the
// stream below), sets the timer for what is not, and ends when the queue
// is empty (closing the stream below if CloseWrite was called).
func (s *linkStream) step() {
	s.mu.Lock()
	for {
		if len(s.q) == 0 || s.err != nil {
			s.running = false
			closing := s.closing && s.err == nil
			s.mu.Unlock()
			if closing {
				s.Stream.CloseWrite()
			}
			return
		}
		d := &s.q[0]
		if s.sh.clk.Until(d.at) > 0 {
			s.wakeAt(d.at)
			s.mu.Unlock()
			return
		}
		switch {
		case d.stage == toRelay:
			d.at, d.stage = s.viaRelay(len(d.b)), toDownlink
			continue
		case d.stage == toDownlink && s.sh.links != nil:
			// The bytes have reached the reader's downlink: they go
			// through it in the order they arrive there.
			end := s.sh.links.Down(s.to, len(d.b), s.sh.clk.Since(s.sh.t0).Seconds())
			d.at, d.stage = s.sh.at(end), toReader
			continue
		}
		b := d.b
		s.q[0] = delivery{}
		s.q = s.q[1:]
		s.mu.Unlock()
		_, err := s.Stream.Write(b) // the mock stream copies b
		sizepool.Put(b)
		s.mu.Lock()
		s.queued -= len(b)
		if err != nil && s.err == nil {
			s.err = err
			s.q = nil
		}
		s.room.Broadcast()
	}
}

// relayHop is the relay of a relayed pair's stream: its number, its
// latency to the reader, the circuit the stream runs on, and the
// connection marked as relayed (natmodel.MarkConn).
type relayHop struct {
	relay   int
	latency time.Duration
	gen     uint64
	conn    network.Conn
}

// viaRelay books b bytes that have reached the relay through its downlink
// and uplink (as they arrive, in order) and returns when they reach the
// reader's downlink, its latency to the reader later.
func (s *linkStream) viaRelay(b int) time.Time {
	at := s.sh.clk.Now()
	if l := s.sh.links; l != nil {
		k := s.sh.nat.n + s.hop.relay
		end := l.Down(k, b, s.sh.clk.Since(s.sh.t0).Seconds())
		at = s.sh.at(l.Up(k, b, end))
	}
	return at.Add(s.hop.latency)
}

// Conn returns the stream's connection, marked as relayed for a relayed
// pair.
func (s *linkStream) Conn() network.Conn {
	if s.hop != nil {
		return s.hop.conn
	}
	return s.Stream.Conn()
}

// CloseWrite closes the stream for writing once what is in flight has
// arrived.
func (s *linkStream) CloseWrite() error {
	s.mu.Lock()
	if s.closing || s.err != nil {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	s.room.Broadcast()
	if s.running {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return s.Stream.CloseWrite()
}

// Close stops reading at once and closes the stream for writing once what
// is in flight has arrived.
func (s *linkStream) Close() error {
	_ = s.Stream.CloseRead()
	return s.CloseWrite()
}

// Reset drops what is in flight and resets the stream.
func (s *linkStream) Reset() error {
	s.kill()
	return s.Stream.Reset()
}

// ResetWithError is Reset with an error code for the stream below.
func (s *linkStream) ResetWithError(code network.StreamErrorCode) error {
	s.kill()
	return s.Stream.ResetWithError(code)
}

func (s *linkStream) kill() {
	s.mu.Lock()
	if s.err == nil {
		s.err = network.ErrReset
	}
	s.q = nil
	if s.dtimer != nil && s.dtimer.Stop() {
		s.running = false
	}
	s.room.Broadcast()
	s.mu.Unlock()
	s.once.Do(func() { close(s.dead) })
}
