package admit

import (
	"math"
	"time"
)

// MaxKeys bounds the keys a RateTable holds, the abuse scores Scores
// keeps and the peers a DenyList holds: fresh identities cannot grow them.
const MaxKeys = 4096

// Abuse scores. A remote peer earns points for what costs a server and
// serves no fetch; the points halve every ScoreHalfLife, and a peer that
// reaches BanScore is banned (for package peer's ban time). So three
// malformed frames, or about twenty blocks asked for beyond the repeat
// limit, or about twenty streams that never said hello, within a few
// seconds (more when spread over minutes) get a peer banned; a peer that
// slips once is not.
const (
	// StrikeMalformed is the weight of a malformed frame.
	StrikeMalformed = 34
	// StrikeRepeat is the weight of a block asked for beyond MaxRepeats.
	StrikeRepeat = 5
	// StrikeSlow is the weight of a stream that never said hello.
	StrikeSlow = 5
	// BanScore is the score that gets a peer banned.
	BanScore = 100
	// ScoreHalfLife is the time in which a score halves.
	ScoreHalfLife = time.Minute
)

// Scores holds the abuse scores of remote peers (keyed by K), decaying with
// time: at most MaxKeys of them. It takes no lock: its owner holds its own
// around every call.
type Scores[K comparable] struct {
	m map[K]score
}

type score struct {
	score float64
	at    time.Time
}

// decayed returns the score at now.
func (a score) decayed(now time.Time) float64 {
	return a.score * math.Exp2(-float64(now.Sub(a.at))/float64(ScoreHalfLife))
}

// NewScores returns an empty score table.
func NewScores[K comparable]() *Scores[K] {
	return &Scores[K]{m: make(map[K]score)}
}

// Strike adds w points at now to id's score and reports whether it reached
// BanScore; the score is then forgotten (the caller bans id). When the
// table is full, the small scores go first, then any.
func (s *Scores[K]) Strike(id K, w float64, now time.Time) (ban bool) {
	if len(s.m) >= MaxKeys {
		if _, ok := s.m[id]; !ok {
			for k, a := range s.m { // forget the small, then anyone
				if a.decayed(now) < 1 || len(s.m) >= MaxKeys {
					delete(s.m, k)
					if len(s.m) < MaxKeys*3/4 {
						break
					}
				}
			}
		}
	}
	a := score{score: s.m[id].decayed(now) + w, at: now}
	if a.score >= BanScore {
		delete(s.m, id)
		return true
	}
	s.m[id] = a
	return false
}

// Score returns id's score at now.
func (s *Scores[K]) Score(id K, now time.Time) float64 { return s.m[id].decayed(now) }

// Sweep forgets the scores that decayed below one point by now.
func (s *Scores[K]) Sweep(now time.Time) {
	for id, a := range s.m {
		if a.decayed(now) < 1 {
			delete(s.m, id)
		}
	}
}

// Len is the number of scores kept.
func (s *Scores[K]) Len() int { return len(s.m) }

// DenyList holds banned peers (keyed by K) and when each ban ends: at most
// MaxKeys of them. It takes no lock: its owner holds its own around every
// call (so that it can, under the same lock, act on what it learns).
type DenyList[K comparable] struct {
	m map[K]time.Time
}

// NewDenyList returns an empty deny-list.
func NewDenyList[K comparable]() *DenyList[K] {
	return &DenyList[K]{m: make(map[K]time.Time)}
}

// Ban bans id until until (or keeps a longer ban running) and returns when
// the ban ends. When the list is full, the expired entries go, then the one
// that ends first.
func (d *DenyList[K]) Ban(id K, until, now time.Time) time.Time {
	d.prune(now)
	if u, ok := d.m[id]; ok && u.After(until) {
		until = u
	}
	d.m[id] = until
	return until
}

// Banned reports whether id is banned at now.
func (d *DenyList[K]) Banned(id K, now time.Time) bool {
	until, ok := d.m[id]
	return ok && now.Before(until)
}

// Len is the number of entries, expired ones included until they are
// pruned.
func (d *DenyList[K]) Len() int { return len(d.m) }

// prune makes room for one more entry.
func (d *DenyList[K]) prune(now time.Time) {
	if len(d.m) < MaxKeys {
		return
	}
	var first K
	var at time.Time
	for k, until := range d.m {
		if now.After(until) {
			delete(d.m, k)
			continue
		}
		if at.IsZero() || until.Before(at) {
			first, at = k, until
		}
	}
	if len(d.m) >= MaxKeys {
		delete(d.m, first)
	}
}
