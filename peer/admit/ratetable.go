package admit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateTable holds a token bucket per key (a share key or a peer id), made on
// first use, for the rates the service allows each remote peer: filter bytes
// per second, streams opened per second. It holds at most MaxKeys buckets:
// when full, the idle (full) buckets go first, then all of them, so that
// fresh identities cannot grow it.
type RateTable struct {
	limit rate.Limit
	burst int

	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// NewRateTable returns a table of buckets of perSecond tokens a second,
// burst at once.
func NewRateTable(perSecond float64, burst int) *RateTable {
	return &RateTable{limit: rate.Limit(perSecond), burst: burst, m: make(map[string]*rate.Limiter)}
}

// Allow reports whether key may spend n tokens at now.
func (t *RateTable) Allow(key string, n int, now time.Time) bool {
	t.mu.Lock()
	l := t.m[key]
	if l == nil {
		if len(t.m) >= MaxKeys {
			t.sweepLocked(now)
			if len(t.m) >= MaxKeys {
				clear(t.m)
			}
		}
		l = rate.NewLimiter(t.limit, t.burst)
		t.m[key] = l
	}
	t.mu.Unlock()
	return l.AllowN(now, n)
}

// Sweep forgets the buckets that are full again (their keys were idle).
func (t *RateTable) Sweep(now time.Time) {
	t.mu.Lock()
	t.sweepLocked(now)
	t.mu.Unlock()
}

func (t *RateTable) sweepLocked(now time.Time) {
	for k, l := range t.m {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(t.m, k)
		}
	}
}
