package peer

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/reconcile-p2p/reconcile/peer/admit"
	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// guard keeps misbehaving peers out of this service's protocols: it admits
// inbound streams (a fair share of each protocol's streams, streams and
// filter bytes per second), scores abuse, bans, and tracks the open streams
// of this service's protocols, so that a ban resets them and only them. Its
// policies are package admit's; it holds its own lock.
type guard struct {
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
}

// newGuard returns the guard of a service on h.
func newGuard(h host.Host, cfg config) *guard {
	return &guard{h: h, log: cfg.log, clk: cfg.clock, limits: cfg.limits,
		banned:      admit.NewDenyList[lpeer.ID](),
		streams:     make(map[lpeer.ID]map[network.Stream]struct{}),
		streamPools: make(map[protocol.ID]*admit.FairPool),
		scores:      admit.NewScores[lpeer.ID](),
		filterRates: admit.NewRateTable(float64(cfg.limits.MaxFilterBytes), 2*cfg.limits.MaxFilterBytes+1<<20),
		streamRates: admit.NewRateTable(streamRate, streamBurst),
	}
}

// close refuses every stream from now on and returns the open ones, for
// the service to reset.
func (g *guard) close() []network.Stream {
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

// sweep forgets the scores and rate buckets that no peer used lately.
func (g *guard) sweep(now time.Time) {
	g.mu.Lock()
	g.scores.Sweep(now)
	g.mu.Unlock()
	g.filterRates.Sweep(now)
	g.streamRates.Sweep(now)
}

// ban puts id on the deny-list for banFor (or keeps a longer ban running),
// resets its open streams of this service's protocols and returns when the
// ban ends. The host's connection to id stays up: other
// protocols of the host may use it; it is only tagged (banTag) as the first
// to go when the host's connection manager trims connections. On a host New
// built (the service's own), its resource manager refuses the peer's
// streams before they are negotiated (banResources).
func (g *guard) ban(id lpeer.ID) (until time.Time) {
	return g.banUntil(id, g.clk.Now().Add(banFor))
}

// banUntil is ban with the end of the ban given (a saved ban, peer/bans.go).
func (g *guard) banUntil(id lpeer.ID, until time.Time) time.Time {
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
	// The host's own connection manager decides which connections to trim
	// when it has too many: a banned peer goes first.
	g.h.ConnManager().TagPeer(id, banTag, -1000)
	return until
}

// isBanned reports whether id is on the deny-list.
func (g *guard) isBanned(id lpeer.ID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.banned.Banned(id, g.clk.Now())
}

// track records an open stream of ours until the returned func is called.
// It refuses (false) a stream of a banned peer or of a closed service.
func (g *guard) track(s network.Stream) (untrack func(), ok bool) {
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

// strike adds w points to the abuse score of c's remote peer and bans it
// when the score reaches banScore.
func (g *guard) strike(c network.Conn, w float64, why string) {
	id := c.RemotePeer()
	g.mu.Lock()
	ban := g.scores.Strike(id, w, g.clk.Now())
	g.mu.Unlock()
	if ban {
		g.log.Warn("banned abusive peer", "peer", id, "for", banFor, "last", why)
		g.ban(id)
	}
}

// admit takes a share of the inbound streams of s's protocol for s's peer
// (see fairPool): over all peers at most Limits.Streams streams of each
// protocol are served, one peer holds at most Limits.StreamsPerPeer of
// them, and when they are all taken a peer under its fair share gets one
// by resetting the oldest stream of the peer that holds the most.
func (g *guard) admit(s network.Stream) (*admit.Holding, error) {
	key := shareKey(s.Conn())
	pool := g.streamPool(s.Protocol())
	if isPeerKey(key) && pool.UsedBy(key) >= int64(g.limits.StreamsPerPeer) {
		return nil, fmt.Errorf("%w: the peer holds its %d streams", ErrBusy, g.limits.StreamsPerPeer)
	}
	return pool.Acquire(alreadyDone, key, 1, func() { s.Reset() })
}

// streamPool returns the stream pool of a protocol.
func (g *guard) streamPool(proto protocol.ID) *admit.FairPool {
	g.mu.Lock()
	defer g.mu.Unlock()
	fp := g.streamPools[proto]
	if fp == nil {
		fp = admit.NewFairPool(int64(g.limits.Streams))
		g.streamPools[proto] = fp
	}
	return fp
}

// allowFilter reports whether the peer of key may have a reconciliation
// message of n bytes answered now: each share key may send MaxFilterBytes
// of messages per second (a burst of twice that), so that a peer sending
// large filters (with new parameters each time, which the server's caches
// cannot help with) gets one answered a second, while the small filters of
// ordinary fetches are never held back.
func (g *guard) allowFilter(key string, n int) bool {
	return g.filterRates.Allow(key, n, g.clk.Now())
}

// allowStream reports whether the remote peer of c may open one more stream.
func (g *guard) allowStream(c network.Conn) bool {
	return g.streamRates.Allow(c.RemotePeer().String(), 1, g.clk.Now())
}
