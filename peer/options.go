package peer

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
)

// Option configures New and NewService. Options that can fail return an
// error from New or NewService.
type Option func(*config) error

type config struct {
	listen  []string
	key     crypto.PrivKey
	keyFile string
	// hostOpts is set by the options that shape a new host (New only).
	hostOpts     bool
	log          *slog.Logger
	limits       Limits
	streamIdle   time.Duration
	stallTimeout time.Duration
	window       int
	fixedWindow  bool
	maxSources   int
	syncEvery    int
	serveRate    float64
	observer     func(ServeEvent)
	// clock is the service's time (WithClock, WithTimeScale).
	clock clock.Clock
	// dialRanker orders the dials of a peer's addresses (hostkit.TCPFirst; tests
	// compare it with libp2p's default).
	dialRanker network.DialRanker
	// x is reachability and discovery, and New's host (peer/reach.go, peer/host.go).
	x *extConfig
}

// Limits bound what a remote peer may make this peer allocate or hold open.
type Limits struct {
	// MaxManifestBytes is the largest manifest accepted from a peer. Default 256 MiB.
	MaxManifestBytes int
	// MaxFilterBytes is the largest reconciliation message (a filter or an index
	// list) accepted. Default 16 MiB (a CBF of 2^25 4-bit counters).
	MaxFilterBytes int
	// Reconciles is the most reconciliation requests answered at once, over
	// all peers; more wait their turn (up to the stream idle time, then they
	// are told "busy"). With MaxFilterBytes it bounds the memory remote
	// filters can take. A slot is taken only once the request's whole first
	// message has arrived and decoded. Default 8.
	Reconciles int
	// ReconcilesPerPeer is the most of those slots one remote peer holds at
	// once; its further requests are told "busy" at once. Default 2.
	ReconcilesPerPeer int
	// MaxWant is the most blocks one want message may ask for. Default 256.
	MaxWant int
	// StreamsPerPeer is the most concurrent inbound streams of one protocol one
	// remote peer may hold open. Default 8.
	StreamsPerPeer int
	// Streams is the most concurrent inbound streams of one protocol over all
	// peers. Default 512.
	Streams int
	// ServeBytes is the most bytes of blocks read from the store for serving
	// that are held in memory at once, over all streams (each stream holds
	// one block at a time; a block larger than ServeBytes waits until it is
	// alone). It is shared fairly among peers: a peer waits at most the
	// stream idle time for room, and one under its share gets room by
	// resetting a stream of the peer that holds the most. Default 64 MiB.
	ServeBytes int
	// ReconcileBytes is the most memory the reconciliation sessions answered
	// at once may take, over all peers, a session counting three times the
	// size of its first message (the message, its decoded filter and the
	// result of the subtraction). It is claimed when the message's length
	// has arrived, before any of its bytes are buffered, and shared fairly
	// among peers like ServeBytes; a message that finds no room within the
	// stream idle time is refused with "busy". Default 128 MiB: two sessions
	// with filters of 16 MiB at once, or thousands of small ones.
	ReconcileBytes int
}

// DefaultLimits are the limits used when WithLimits is not given.
var DefaultLimits = Limits{
	MaxManifestBytes:  256 << 20,
	MaxFilterBytes:    16 << 20,
	Reconciles:        8,
	ReconcilesPerPeer: 2,
	MaxWant:           256,
	StreamsPerPeer:    8,
	Streams:           512,
	ServeBytes:        64 << 20,
	ReconcileBytes:    128 << 20,
}

// newConfig applies opts to the defaults.
func newConfig(opts []Option) (config, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// WithClock makes c the service's clock: every timer, timeout, deadline
// and timestamp of its protocol comes from it (see package peer/clock for
// what stays on real time). Tests hand it a clockwork.FakeClock and advance
// it instead of sleeping. Default: the wall clock.
func WithClock(c clock.Clock) Option {
	return func(cfg *config) error {
		if c == nil {
			return errors.New("peer: WithClock(nil)")
		}
		cfg.clock = c
		return nil
	}
}

// WithTimeScale runs the service on a clock s times slower than the wall
// clock (clock.Scaled(s)): every timer of its protocol (its stream idle and
// stall timeouts, its pauses and retries, the holds of a super-seed) takes
// s times longer, for an emulation that runs the network s times slower
// than the one it stands for, so that the peers keep the same pace against
// it (package testnet's time scale). Default 1.
func WithTimeScale(s float64) Option {
	return func(c *config) error {
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("peer: WithTimeScale(%g): want a positive scale", s)
		}
		c.clock = clock.Scaled(s)
		return nil
	}
}

func defaultConfig() config {
	return config{
		listen:       []string{"/ip4/0.0.0.0/tcp/0", "/ip4/0.0.0.0/udp/0/quic-v1", "/ip6/::/tcp/0", "/ip6/::/udp/0/quic-v1"},
		log:          slog.New(slog.DiscardHandler),
		limits:       DefaultLimits,
		streamIdle:   30 * time.Second,
		stallTimeout: 10 * time.Second,
		window:       16,
		maxSources:   32,
		clock:        clock.Real(),
		dialRanker:   hostkit.TCPFirst,
	}
}

// WithListenAddrs sets the multiaddrs to listen on (New only). Default: every interface,
// TCP and QUIC v1, IPv4 and IPv6, on ports the system picks.
func WithListenAddrs(addrs ...string) Option {
	return func(c *config) error {
		if len(addrs) == 0 {
			return errors.New("peer: WithListenAddrs: no address")
		}
		c.listen = append([]string(nil), addrs...)
		c.hostOpts = true
		return nil
	}
}

// WithIdentity sets the peer's identity key (New only). Default: a fresh
// Ed25519 key.
func WithIdentity(k crypto.PrivKey) Option {
	return func(c *config) error {
		if k == nil {
			return errors.New("peer: WithIdentity: nil key")
		}
		c.key = k
		c.hostOpts = true
		return nil
	}
}

// WithKeyFile loads the identity key from path, creating it on first use (see
// LoadOrCreateKey; New only). Default: a fresh key that is not saved.
func WithKeyFile(path string) Option {
	return func(c *config) error { c.keyFile, c.hostOpts = path, true; return nil }
}

// WithLogger sets the logger. Default: discard.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l != nil {
			c.log = l
		}
		return nil
	}
}

// WithLimits sets the limits on remote peers; zero fields keep their default.
func WithLimits(l Limits) Option {
	return func(c *config) error {
		c.limits = l.withDefaults()
		return nil
	}
}

// withDefaults fills the zero (or negative) fields of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, d *int }{
		{&l.MaxManifestBytes, &d.MaxManifestBytes}, {&l.MaxFilterBytes, &d.MaxFilterBytes},
		{&l.MaxWant, &d.MaxWant}, {&l.Reconciles, &d.Reconciles}, {&l.ReconcilesPerPeer, &d.ReconcilesPerPeer}, {&l.StreamsPerPeer, &d.StreamsPerPeer},
		{&l.Streams, &d.Streams}, {&l.ServeBytes, &d.ServeBytes}, {&l.ReconcileBytes, &d.ReconcileBytes},
	} {
		if *f.v > 0 {
			*f.d = *f.v
		}
	}
	return d
}

// WithStreamIdle sets how long a stream may go without progress before it is
// reset (every read and write has this deadline). Default 30 s.
func WithStreamIdle(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return errors.New("peer: WithStreamIdle: duration must be positive")
		}
		c.streamIdle = d
		return nil
	}
}

// WithStallTimeout sets how long a fetch waits for a requested block before it
// gives the peer's outstanding blocks to other peers. Default 10 s.
func WithStallTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return errors.New("peer: WithStallTimeout: duration must be positive")
		}
		c.stallTimeout = d
		return nil
	}
}

// WithWindow sets how many blocks a fetch keeps requested from one peer at a
// time, at most: the window of each peer adapts to about twice a round trip
// of blocks at the rate the peer delivers, plus one (see WithFixedWindow).
// Default 16 (4 MiB of 256 KiB blocks per peer).
func WithWindow(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return errors.New("peer: WithWindow: must be at least 1")
		}
		c.window = n
		return nil
	}
}

// WithFixedWindow makes every fetch keep the whole WithWindow window
// requested from each peer, rather than a window adapted to the peer's rate
// and round trip. Default: adapted.
func WithFixedWindow() Option {
	return func(c *config) error { c.fixedWindow = true; return nil }
}

// WithMaxSources bounds the peers one fetch downloads from at once. Default 32.
func WithMaxSources(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return errors.New("peer: WithMaxSources: must be at least 1")
		}
		c.maxSources = n
		return nil
	}
}

// WithSyncEvery sets how many stored blocks share one fsync during a fetch (see
// chunker.WithSyncEvery). Default: as many as make DefaultSyncBytes (32 blocks of
// 256 KiB, 8 of 1 MiB, 1 of 8 MiB or more). With 1, a block is durable and
// recorded before the next is stored. Above 1 there are that many times fewer
// fsyncs (much faster on a busy disk), and a crash can leave up to n stored blocks
// without their record, so a fetch resuming such a store re-hashes the whole
// output first and keeps every block whose bytes reached the disk (after a
// kill -9, all of them): either way a resumed fetch downloads no stored block
// again.
func WithSyncEvery(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return errors.New("peer: WithSyncEvery: must be at least 1")
		}
		c.syncEvery = n
		return nil
	}
}

// DefaultSyncBytes is the bytes of blocks a fetch stores per fsync unless
// WithSyncEvery says otherwise: a group of fixed bytes rather than of 16 blocks,
// whatever the block size. Measured with reconcile bench (1 seed, 512 MiB,
// loopback, --compare-fetch "--sync-every 16", 6 repetitions): with 64 KiB
// blocks (1 MiB groups before) the fetch was 1.11x faster on 6 % less CPU; with
// 256 KiB and 1 MiB blocks the runs differed by less than this machine's noise
// (0.95x to 1.07x).
const DefaultSyncBytes = 8 << 20

// syncOption is the store option of the fetch's fsync groups.
func (c *config) syncOption() chunker.StoreOption {
	if c.syncEvery > 0 {
		return chunker.WithSyncEvery(c.syncEvery)
	}
	return chunker.WithSyncBytes(DefaultSyncBytes)
}

// WithServeRate caps the bytes per second of blocks this peer serves, asked
// for or pushed, over all remote peers (to share a slow uplink, or to watch a
// swarm at work). The bytes counted are the block frames' (the blocks and
// their few header bytes). The cap holds over any span of time, from the
// start: a peer idle for a while sends at most 50 ms worth of bytes more
// (the limiter's bucket). Default: no cap.
func WithServeRate(bytesPerSecond float64) Option {
	return func(c *config) error {
		if bytesPerSecond < 0 {
			return errors.New("peer: WithServeRate: rate must not be negative")
		}
		c.serveRate = bytesPerSecond
		return nil
	}
}

// WithServeObserver sets a function told of what the service serves: every
// reconciliation it answers (what it held, what it offered), every block it
// sends and every request it turns away "busy". Calls come from the serving
// goroutines, concurrently; keep fn quick. Default: none. A testnet audits
// answers with it (a missed block is one held but not offered to a fetcher
// that lacks it); an application may log or meter with it.
func WithServeObserver(fn func(ServeEvent)) Option {
	return func(c *config) error { c.observer = fn; return nil }
}
