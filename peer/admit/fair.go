package admit

import (
	"context"
	"sync"
)

// FairPool divides a capacity (streams, or bytes) among remote peers so that
// none can take more than its fair share while others want some: the fair
// share is the capacity over the number of peers holding or asking. A peer
// under its share that finds the pool full evicts a holding of the peer that
// holds the most (whose evict func resets the stream that holds it), so
// whatever a group of peers took first, a newcomer gets in. A peer over its
// share waits (until its context ends) for room that takes nobody's share.
//
// Peers are grouped by share key (package peer's shareKey): the peer id, or the IP prefix of
// a public address, so that many identities behind one public address share
// one share.
type FairPool struct {
	mu      sync.Mutex
	cap     int64
	used    int64
	keys    map[string]*poolKey
	waiting map[string]int // keys with a blocked acquire, and how many
	changed chan struct{}  // closed and replaced when holdings end
}

type poolKey struct {
	used     int64
	holdings []*Holding // oldest first
}

// A Holding is what one acquire took; release returns it (once).
type Holding struct {
	p     *FairPool
	key   string
	n     int64
	evict func()
	done  bool
}

// NewFairPool returns a pool of capacity (at least 1) to share out.
func NewFairPool(capacity int64) *FairPool {
	return &FairPool{cap: max(1, capacity), keys: make(map[string]*poolKey), waiting: make(map[string]int), changed: make(chan struct{})}
}

// Acquire takes n for key, waiting until ctx ends; n above the capacity is
// taken as the whole capacity. evict, called without the pool's lock, must
// end the use of the holding (the holding is released by the pool then).
func (fp *FairPool) Acquire(ctx context.Context, key string, n int64, evict func()) (*Holding, error) {
	n = min(n, fp.cap)
	fp.mu.Lock()
	fp.waiting[key]++
	defer func() {
		fp.mu.Lock()
		if fp.waiting[key]--; fp.waiting[key] <= 0 {
			delete(fp.waiting, key)
		}
		fp.mu.Unlock()
	}()
	for {
		h, victims := fp.tryLocked(key, n, evict)
		ch := fp.changed
		fp.mu.Unlock()
		for _, v := range victims {
			v.evict()
		}
		if h != nil {
			return h, nil
		}
		if len(victims) > 0 {
			fp.mu.Lock()
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		fp.mu.Lock()
	}
}

// share is the fair share of a key while the given keys hold or ask.
func (fp *FairPool) shareLocked(key string) int64 {
	k := len(fp.keys)
	if _, ok := fp.keys[key]; !ok {
		k++
	}
	for w := range fp.waiting {
		if _, ok := fp.keys[w]; !ok && w != key {
			k++
		}
	}
	return max(1, fp.cap/int64(max(1, k)))
}

// tryLocked grants n to key if there is room, or picks holdings to evict
// when key is entitled to room that others took beyond their share.
func (fp *FairPool) tryLocked(key string, n int64, evict func()) (*Holding, []*Holding) {
	mine := int64(0)
	if pk := fp.keys[key]; pk != nil {
		mine = pk.used
	}
	share := fp.shareLocked(key)
	if fp.used+n <= fp.cap && (mine+n <= max(share, n) || len(fp.waiting) <= 1) {
		h := &Holding{p: fp, key: key, n: n, evict: evict}
		pk := fp.keys[key]
		if pk == nil {
			pk = &poolKey{}
			fp.keys[key] = pk
		}
		pk.used += n
		pk.holdings = append(pk.holdings, h)
		fp.used += n
		return h, nil
	}
	if mine+n > max(share, n) {
		return nil, nil // over its share: wait for room
	}
	// Entitled: evict the oldest holdings of the largest holder while it is
	// over its share and the room is short.
	var victims []*Holding
	need := fp.used + n - fp.cap
	for need > 0 {
		var big string
		var most int64
		for k, pk := range fp.keys {
			if k != key && pk.used > most && pk.used > share {
				big, most = k, pk.used
			}
		}
		if most == 0 {
			break
		}
		pk := fp.keys[big]
		v := pk.holdings[0]
		if v.evict == nil {
			break // not evictable: wait
		}
		fp.releaseLocked(v)
		victims = append(victims, v)
		need -= v.n
	}
	return nil, victims
}

// Release returns the holding to the pool (once; later calls do nothing).
func (h *Holding) Release() {
	fp := h.p
	fp.mu.Lock()
	fp.releaseLocked(h)
	fp.mu.Unlock()
}

func (fp *FairPool) releaseLocked(h *Holding) {
	if h.done {
		return
	}
	h.done = true
	pk := fp.keys[h.key]
	for i, x := range pk.holdings {
		if x == h {
			pk.holdings = append(pk.holdings[:i], pk.holdings[i+1:]...)
			break
		}
	}
	pk.used -= h.n
	fp.used -= h.n
	if len(pk.holdings) == 0 {
		delete(fp.keys, h.key)
	}
	close(fp.changed)
	fp.changed = make(chan struct{})
}

// Used returns the units held now, over all keys.
func (fp *FairPool) Used() int64 {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return fp.used
}

// UsedBy returns what key holds.
func (fp *FairPool) UsedBy(key string) int64 {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if pk := fp.keys[key]; pk != nil {
		return pk.used
	}
	return 0
}

// N is what the holding took.
func (h *Holding) N() int64 { return h.n }
