package peer

import (
	"sync"
	"time"
)

// Repeated requests. A fetcher asks a peer for a block once, and again only
// when the block was lost (a reset stream, a stall, a restart). A peer that
// asks for the same block over and over costs the server reads and upload
// for nothing, so each block is sent to one peer (share key) at most
// 1+maxRepeats times per repeatWindow; beyond that the block is answered as
// missing and the peer earns abuse points (strikeRepeat).
const (
	maxRepeats   = 3
	repeatWindow = time.Minute
	// maxRepeatEntries bounds the blocks whose repeats are counted per peer
	// and window; a peer that repeats more distinct blocks than that is
	// refused every further repeat in the window.
	maxRepeatEntries = 4096
)

// repeats counts the blocks of one content sent to each peer in the
// current window.
type repeats struct {
	mu     sync.Mutex
	blocks int
	start  time.Time
	peers  map[string]*sentLog
}

// sentLog is what one peer was sent in the window: a bit per block sent
// once, and the count of further sends of the blocks sent again.
type sentLog struct {
	once  []uint64
	again map[int]uint8
}

func newRepeats(blocks int) *repeats {
	return &repeats{blocks: blocks, peers: make(map[string]*sentLog)}
}

// allow reports whether block i may be sent to key now, and counts it.
func (r *repeats) allow(key string, i int, now time.Time) bool {
	if i < 0 || i >= r.blocks {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.start) >= repeatWindow {
		clear(r.peers)
		r.start = now
	}
	l := r.peers[key]
	if l == nil {
		if len(r.peers) >= maxSwarm {
			clear(r.peers) // a new window for everyone rather than no bound
		}
		l = &sentLog{once: make([]uint64, (r.blocks+63)/64)}
		r.peers[key] = l
	}
	w, b := i/64, uint64(1)<<(i%64)
	if l.once[w]&b == 0 {
		l.once[w] |= b
		return true
	}
	n, ok := l.again[i]
	if n >= maxRepeats || (!ok && len(l.again) >= maxRepeatEntries) {
		return false
	}
	if l.again == nil {
		l.again = make(map[int]uint8)
	}
	l.again[i] = n + 1
	return true
}
