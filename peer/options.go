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
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/swarm"
)

// Option configures New and NewService. Options that can fail return an
// error from New or NewService.
type Option func(*config) error

type config struct {
	// Config is what the server is told: log, clock (WithClock,
	// WithTimeScale), limits, stream idle time, serve rate, observer.
	swarm.Config
	listen  []string
	key     crypto.PrivKey
	keyFile string
	// hostOpts is set by the options that shape a new host (New only).
	hostOpts  bool
	syncEvery int
	// dialRanker orders the dials of a peer's addresses (hostkit.TCPFirst; tests
	// compare it with libp2p's default).
	dialRanker network.DialRanker
	// x is reachability and discovery, and New's host (peer/reach.go, peer/host.go).
	x *extConfig
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
		cfg.Clock = c
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
		c.Clock = clock.Scaled(s)
		return nil
	}
}

func defaultConfig() config {
	return config{
		listen: []string{"/ip4/0.0.0.0/tcp/0", "/ip4/0.0.0.0/udp/0/quic-v1", "/ip6/::/tcp/0", "/ip6/::/udp/0/quic-v1"},
		Config: swarm.Config{
			Config: serve.Config{
				Log:        slog.New(slog.DiscardHandler),
				Limits:     DefaultLimits,
				StreamIdle: 30 * time.Second,
				Clock:      clock.Real(),
			},
			StallTimeout: 10 * time.Second,
			Window:       16,
			MaxSources:   32,
		},
		dialRanker: hostkit.TCPFirst,
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
			c.Log = l
		}
		return nil
	}
}

// Limits bound what a remote peer may make this peer allocate or hold
// open (see serve.Limits for each field and its default).
type Limits = serve.Limits

// DefaultLimits are the limits used when WithLimits is not given.
var DefaultLimits = serve.DefaultLimits

// WithLimits sets the limits on remote peers; zero fields keep their default.
func WithLimits(l Limits) Option {
	return func(c *config) error {
		c.Limits = l.OrDefaults()
		return nil
	}
}

// WithStreamIdle sets how long a stream may go without progress before it is
// reset (every read and write has this deadline). Default 30 s.
func WithStreamIdle(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return errors.New("peer: WithStreamIdle: duration must be positive")
		}
		c.StreamIdle = d
		return nil
	}
}

// WithStallTimeout sets the longest a fetch waits for a source's next
// requested block before it gives the source's outstanding blocks to other
// sources. With other sources at work, a source gets far less: four times
// what the fetch's sources take to serve a block at the 99th percentile,
// at least three of its round trips (sched.Waits), so a source that
// stalls is given up in a few block times; one that stalls three times in
// a row, sending nothing between, is dropped from the fetch
// (PeerShare.Stalled and Dropped name it). Default 10 s: the wait of a
// lone source, and of any source before the fetch has seen 8 blocks.
func WithStallTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return errors.New("peer: WithStallTimeout: duration must be positive")
		}
		c.StallTimeout = d
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
		c.Window = n
		return nil
	}
}

// WithFixedWindow makes every fetch keep the whole WithWindow window
// requested from each peer, rather than a window adapted to the peer's rate
// and round trip. Default: adapted.
func WithFixedWindow() Option {
	return func(c *config) error { c.FixedWindow = true; return nil }
}

// WithMaxSources bounds the peers one fetch downloads from at once. Default 32.
func WithMaxSources(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return errors.New("peer: WithMaxSources: must be at least 1")
		}
		c.MaxSources = n
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
		c.ServeRate = bytesPerSecond
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
	return func(c *config) error { c.Observer = fn; return nil }
}
