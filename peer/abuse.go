package peer

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// helloTimeout is the time a stream has to deliver its hello (a few dozen
// bytes) before the stream is reset.
const helloTimeout = 5 * time.Second

// Abuse scores. A remote peer earns points for what costs a server and
// serves no fetch; the points halve every scoreHalfLife, and a peer that
// reaches banScore is banned for banFor. So three malformed frames, or about
// twenty blocks asked for beyond the repeat limit, or about twenty streams
// that never said hello, within a few seconds (more when spread over
// minutes) get a peer banned; a peer that slips once is not.
const (
	strikeMalformed = 34
	strikeRepeat    = 5
	strikeSlow      = 5
	banScore        = 100
	scoreHalfLife   = time.Minute
)

// maxBanned bounds the deny-list; maxScored bounds the abuse scores kept.
const (
	maxBanned = 4096
	maxScored = 4096
)

type abuseScore struct {
	score float64
	at    time.Time
}

// decayed returns the score at now.
func (a abuseScore) decayed(now time.Time) float64 {
	return a.score * math.Exp2(-float64(now.Sub(a.at))/float64(scoreHalfLife))
}

// strike adds w points to the abuse score of c's remote peer and bans it
// when the score reaches banScore.
func (p *Service) strike(c network.Conn, w float64, why string) {
	id := c.RemotePeer()
	now := time.Now()
	p.mu.Lock()
	if len(p.scores) >= maxScored {
		if _, ok := p.scores[id]; !ok {
			for k, a := range p.scores { // forget the small, then anyone
				if a.decayed(now) < 1 || len(p.scores) >= maxScored {
					delete(p.scores, k)
					if len(p.scores) < maxScored*3/4 {
						break
					}
				}
			}
		}
	}
	a := p.scores[id]
	a = abuseScore{score: a.decayed(now) + w, at: now}
	p.scores[id] = a
	p.mu.Unlock()
	if a.score >= banScore {
		p.log.Warn("banned abusive peer", "peer", id, "for", banFor, "last", why)
		p.ban(id)
		p.mu.Lock()
		delete(p.scores, id)
		p.mu.Unlock()
	}
}

// alreadyDone is a context that has ended: acquiring a share with it takes
// room only if there is some (or may be made) at once.
var alreadyDone = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(fmt.Errorf("%w: no room for the stream", ErrBusy))
	return ctx
}()

// admit takes a share of the inbound streams of s's protocol for s's peer
// (see fairPool): over all peers at most Limits.Streams streams of each
// protocol are served, one peer holds at most Limits.StreamsPerPeer of
// them, and when they are all taken a peer under its fair share gets one
// by resetting the oldest stream of the peer that holds the most.
func (p *Service) admit(s network.Stream) (*holding, error) {
	key := shareKey(s.Conn())
	pool := p.streamPool(s.Protocol())
	if isPeerKey(key) && pool.usedBy(key) >= int64(p.cfg.limits.StreamsPerPeer) {
		return nil, fmt.Errorf("%w: the peer holds its %d streams", ErrBusy, p.cfg.limits.StreamsPerPeer)
	}
	return pool.acquire(alreadyDone, key, 1, func() { s.Reset() })
}

func isPeerKey(k string) bool { return len(k) > 5 && k[:5] == "peer/" }

// streamPool returns the stream pool of a protocol.
func (p *Service) streamPool(proto protocol.ID) *fairPool {
	p.mu.Lock()
	defer p.mu.Unlock()
	fp := p.streamPools[proto]
	if fp == nil {
		fp = newFairPool(int64(p.cfg.limits.Streams))
		p.streamPools[proto] = fp
	}
	return fp
}

// pruneBannedLocked makes room on the deny-list for one more entry: it drops
// the expired entries and, if the list is still full, the one that expires
// first.
func (p *Service) pruneBannedLocked(now time.Time) {
	if len(p.banned) < maxBanned {
		return
	}
	var first lpeer.ID
	var at time.Time
	for k, until := range p.banned {
		if now.After(until) {
			delete(p.banned, k)
			continue
		}
		if at.IsZero() || until.Before(at) {
			first, at = k, until
		}
	}
	if len(p.banned) >= maxBanned {
		delete(p.banned, first)
	}
}

// allowFilter reports whether the peer of key may have a reconciliation
// message of n bytes answered now: each share key may send MaxFilterBytes
// of messages per second (a burst of twice that), so that a peer sending
// large filters (with new parameters each time, which the server's caches
// cannot help with) gets one answered a second, while the small filters of
// ordinary fetches are never held back.
func (p *Service) allowFilter(key string, n int) bool {
	return p.filterRates.allow(key, n, time.Now())
}

// Streams opened per second: a remote peer may open streamRate streams of
// this service's protocols a second (streamBurst at once); each stream
// beyond that is reset at once and earns strikeStreams points, so a peer
// that opens streams as fast as they are reset (a stream held past its share
// is reset, and an attacker opens the next at once: thousands a second,
// each a muxer, protocol negotiation and hello for the server) is banned
// within a second. A fetch opens a few streams a second to one peer (a
// reconciliation and a blocks stream per round).
const (
	streamRate    = 64
	streamBurst   = 128
	strikeStreams = 2
)

// allowStream reports whether the remote peer of c may open one more stream.
func (p *Service) allowStream(c network.Conn) bool {
	return p.streamRates.allow(c.RemotePeer().String(), 1, time.Now())
}

// sweepEvery is how often the service gives back what no peer used lately:
// filter caches (so the memory a burst of unusual sessions made it build
// returns within two sweeps), decayed abuse scores and idle rate limiters.
const sweepEvery = 15 * time.Second

// sweeper runs sweep every sweepEvery until the service closes.
func (p *Service) sweeper() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.sweep(time.Now())
		}
	}
}

func (p *Service) sweep(now time.Time) {
	p.mu.Lock()
	contents := make([]*content, 0, len(p.contents))
	for _, c := range p.contents {
		contents = append(contents, c)
	}
	for id, a := range p.scores {
		if a.decayed(now) < 1 {
			delete(p.scores, id)
		}
	}
	p.mu.Unlock()
	p.filterRates.sweep(now)
	p.streamRates.sweep(now)
	for _, c := range contents {
		c.recon.trim()
		if cb := c.codedSet(); cb != nil {
			cb.recon.trim()
		}
	}
}
