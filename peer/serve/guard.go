package serve

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/reconcile-p2p/reconcile/peer/admit"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Guard keeps misbehaving peers out of this service's protocols: it admits
// inbound streams (a fair share of each protocol's streams, streams and
// filter bytes per second), scores abuse, bans, and tracks the open streams
// of this service's protocols, so that a ban resets them and only them. Its
// policies are package admit's; it holds its own lock.
type Guard struct {
	h      host.Host
	log    *slog.Logger
	clk    clock.Clock
	limits Limits

	mu     sync.Mutex
	banned *admit.DenyList[lpeer.ID] // the deny-list: misbehaving peers, until when
	// streams are the open streams of this service's protocols, per remote
	// peer, so that a ban resets them (and only them).
	streams map[lpeer.ID]map[network.Stream]struct{}
	// streamPools share the inbound streams of each protocol among peers;
	// scores are the abuse scores of remote peers.
	streamPools map[protocol.ID]*admit.FairPool
	scores      *admit.Scores[lpeer.ID]
	filterRates *admit.RateTable // filter bytes per share key (allowFilter)
	streamRates *admit.RateTable // streams opened per peer (allowStream)
	closed      bool
	// onBan, if set, is told of every ban (SetOnBan).
	onBan atomic.Pointer[func(lpeer.ID)]
}

// NewGuard returns the guard of a service on h.
// BanFor is how long a peer that sent a bad block or a malformed message is
// refused: no stream to it is opened and its streams are reset.
const BanFor = 10 * time.Minute

// BanTag is the connection manager tag of a banned peer.
const BanTag = "reconcile-banned"

// NewGuard returns the guard of a service on h, with cfg's log, clock and
// limits.
func NewGuard(h host.Host, cfg Config) *Guard {
	return &Guard{h: h, log: cfg.Log, clk: cfg.Clock, limits: cfg.Limits,
		banned:      admit.NewDenyList[lpeer.ID](),
		streams:     make(map[lpeer.ID]map[network.Stream]struct{}),
		streamPools: make(map[protocol.ID]*admit.FairPool),
		scores:      admit.NewScores[lpeer.ID](),
		filterRates: admit.NewRateTable(float64(cfg.Limits.MaxFilterBytes), 2*cfg.Limits.MaxFilterBytes+1<<20),
		streamRates: admit.NewRateTable(streamRate, StreamBurst),
	}
}

// Close refuses every stream from now on and returns the open ones, for
// the service to reset.
func (g *Guard) Close() []network.Stream {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	var open []network.Stream
	for _, m := range g.streams {
		for s := range m {
			open = append(open, s)
		}
	}
	return open
}

// Sweep forgets the scores and rate buckets that no peer used lately.
func (g *Guard) Sweep(now time.Time) {
	g.mu.Lock()
	g.scores.Sweep(now)
	g.mu.Unlock()
	g.filterRates.Sweep(now)
	g.streamRates.Sweep(now)
}

// Ban puts id on the deny-list for BanFor (or keeps a longer ban running),
// resets its open streams of this service's protocols, tells the SetOnBan
// function, and returns when the ban ends. On a host an application
// brought (package peer's NewService), the host's connection to id stays
// up, as other protocols of the host may use it: it is only tagged
// (BanTag) as the first to go when the host's connection manager trims
// connections, and each stream it opens of this service's protocols is
// reset as it is accepted, unread. On a host New built (the service's
// own), the connection is closed, the peer's redials are refused before
// their handshake where its address is its own, after it otherwise
// (hostkit.Host.Ban), and its streams before they are negotiated.
func (g *Guard) Ban(id lpeer.ID) (until time.Time) {
	return g.BanUntil(id, g.clk.Now().Add(BanFor))
}

// BanUntil is ban with the end of the ban given (a saved ban, package peer/swarm/bans).
func (g *Guard) BanUntil(id lpeer.ID, until time.Time) time.Time {
	g.mu.Lock()
	until = g.banned.Ban(id, until, g.clk.Now())
	var open []network.Stream
	for s := range g.streams[id] {
		open = append(open, s)
	}
	g.mu.Unlock()
	for _, s := range open {
		s.Reset()
	}
	if f := g.onBan.Load(); f != nil {
		(*f)(id)
	}
	// The host's own connection manager decides which connections to trim
	// when it has too many: a banned peer goes first.
	g.h.ConnManager().TagPeer(id, BanTag, -1000)
	return until
}

// IsBanned reports whether id is on the deny-list.
func (g *Guard) IsBanned(id lpeer.ID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.banned.Banned(id, g.clk.Now())
}

// Track records an open stream of ours until the returned func is called.
// It refuses (false) a stream of a banned peer or of a closed service.
func (g *Guard) Track(s network.Stream) (untrack func(), ok bool) {
	id := s.Conn().RemotePeer()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.banned.Banned(id, g.clk.Now()) {
		return nil, false
	}
	m := g.streams[id]
	if m == nil {
		m = make(map[network.Stream]struct{})
		g.streams[id] = m
	}
	m[s] = struct{}{}
	return func() {
		g.mu.Lock()
		delete(m, s)
		if len(g.streams[id]) == 0 {
			delete(g.streams, id)
		}
		g.mu.Unlock()
	}, true
}

// Strike adds w points to the abuse score of c's remote peer and bans it
// when the score reaches banScore.
func (g *Guard) Strike(c network.Conn, w float64, why string) {
	id := c.RemotePeer()
	g.mu.Lock()
	ban := g.scores.Strike(id, w, g.clk.Now())
	g.mu.Unlock()
	if ban {
		g.log.Warn("banned abusive peer", "peer", id, "for", BanFor, "last", why)
		g.Ban(id)
	}
}

// Admit takes a share of the inbound streams of s's protocol for s's peer
// (see fairPool): over all peers at most Limits.Streams streams of each
// protocol are served, one peer holds at most Limits.StreamsPerPeer of
// them, and when they are all taken a peer under its fair share gets one
// by resetting the oldest stream of the peer that holds the most.
func (g *Guard) Admit(s network.Stream) (*admit.Holding, error) {
	key := shareKey(s.Conn())
	pool := g.streamPool(s.Protocol())
	if isPeerKey(key) && pool.UsedBy(key) >= int64(g.limits.StreamsPerPeer) {
		return nil, fmt.Errorf("%w: the peer holds its %d streams", wire.ErrBusy, g.limits.StreamsPerPeer)
	}
	return pool.Acquire(alreadyDone, key, 1, func() { s.Reset() })
}

// streamPool returns the stream pool of a protocol.
func (g *Guard) streamPool(proto protocol.ID) *admit.FairPool {
	g.mu.Lock()
	defer g.mu.Unlock()
	fp := g.streamPools[proto]
	if fp == nil {
		n := g.limits.Streams
		if proto == wire.ProtoJoin {
			n = max(n, JoinStreams)
		}
		fp = admit.NewFairPool(int64(n))
		g.streamPools[proto] = fp
	}
	return fp
}

// JoinStreams is how many join streams (wire.ProtoJoin) a seed serves,
// whatever Limits.Streams says: each fetcher it places keeps one open, idle
// but for its placements, for as long as it fetches. Held to Limits.Streams
// (512), a 1,000-peer swarm's joins reset each other and each reset freed a
// fetcher's places: 37 % of the blocks came down the trees, 75 % with this
// limit.
const JoinStreams = 4096

// AllowFilter reports whether the peer of key may have a reconciliation
// message of n bytes answered now: each share key may send MaxFilterBytes
// of messages per second (a burst of twice that), so that a peer sending
// large filters (with new parameters each time, which the server's caches
// cannot help with) gets one answered a second, while the small filters of
// ordinary fetches are never held back.
func (g *Guard) AllowFilter(key string, n int) bool {
	return g.filterRates.Allow(key, n, g.clk.Now())
}

// AllowStream reports whether the remote peer of c may open one more stream.
func (g *Guard) AllowStream(c network.Conn) bool {
	return g.streamRates.Allow(c.RemotePeer().String(), 1, g.clk.Now())
}

// SetOnBan sets a function told of every ban, after the peer's streams
// are reset: on a host of its own (package peer's New), the service closes
// the banned peer's connections there and refuses its redials
// (hostkit.Host.Ban).
func (g *Guard) SetOnBan(fn func(lpeer.ID)) { g.onBan.Store(&fn) }
