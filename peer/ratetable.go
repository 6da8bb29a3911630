package peer

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// rateTable holds a token bucket per key (a share key or a peer id), made on
// first use, for the rates the service allows each remote peer: filter bytes
// per second, streams opened per second. It holds at most maxScored buckets:
// when full, the idle (full) buckets go first, then all of them, so that
// fresh identities cannot grow it.
type rateTable struct {
	limit rate.Limit
	burst int

	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func newRateTable(perSecond float64, burst int) *rateTable {
	return &rateTable{limit: rate.Limit(perSecond), burst: burst, m: make(map[string]*rate.Limiter)}
}

// allow reports whether key may spend n tokens at now.
func (t *rateTable) allow(key string, n int, now time.Time) bool {
	t.mu.Lock()
	l := t.m[key]
	if l == nil {
		if len(t.m) >= maxScored {
			t.sweepLocked(now)
			if len(t.m) >= maxScored {
				clear(t.m)
			}
		}
		l = rate.NewLimiter(t.limit, t.burst)
		t.m[key] = l
	}
	t.mu.Unlock()
	return l.AllowN(now, n)
}

// sweep forgets the buckets that are full again (their keys were idle).
func (t *rateTable) sweep(now time.Time) {
	t.mu.Lock()
	t.sweepLocked(now)
	t.mu.Unlock()
}

func (t *rateTable) sweepLocked(now time.Time) {
	for k, l := range t.m {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(t.m, k)
		}
	}
}
