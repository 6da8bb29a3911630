package admit

import (
	"sync"
	"time"
)

// Repeated requests. A fetcher asks a peer for a block once, and again only
// when the block was lost (a reset stream, a stall, a restart). A peer that
// asks for the same block over and over costs the server reads and upload
// for nothing, so each block is sent to one peer (share key) at most
// 1+MaxRepeats times per RepeatWindow; beyond that the block is answered as
// missing and the peer earns abuse points (strikeRepeat).
const (
	MaxRepeats   = 3
	RepeatWindow = time.Minute
	// MaxRepeatEntries bounds the blocks whose repeats are counted per peer
	// and window; a peer that repeats more distinct blocks than that is
	// refused every further repeat in the window.
	MaxRepeatEntries = 4096
)

// Repeats counts the blocks of one content sent to each peer in the
// current window.
type Repeats struct {
	mu     sync.Mutex
	blocks int
	start  time.Time
	peers  map[string]*sentLog
	// maxPeers bounds the peers counted in a window.
	maxPeers int
}

// sentLog is what one peer was sent in the window: a bit per block sent
// once, and the count of further sends of the blocks sent again.
type sentLog struct {
	once  []uint64
	again map[int]uint8
}

// NewRepeats counts the sends of blocks blocks to at most maxPeers peers
// per window (beyond that, a new window starts for everyone).
func NewRepeats(blocks, maxPeers int) *Repeats {
	return &Repeats{blocks: blocks, maxPeers: max(1, maxPeers), peers: make(map[string]*sentLog)}
}

// Allow reports whether block i may be sent to key now, and counts it.
func (r *Repeats) Allow(key string, i int, now time.Time) bool {
	if i < 0 || i >= r.blocks {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.start) >= RepeatWindow {
		clear(r.peers)
		r.start = now
	}
	l := r.peers[key]
	if l == nil {
		if len(r.peers) >= r.maxPeers {
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
	if n >= MaxRepeats || (!ok && len(l.again) >= MaxRepeatEntries) {
		return false
	}
	if l.again == nil {
		l.again = make(map[int]uint8)
	}
	l.again[i] = n + 1
	return true
}

// Blocks is the number of blocks whose sends r counts.
func (r *Repeats) Blocks() int { return r.blocks }
