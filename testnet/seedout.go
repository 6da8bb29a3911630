package testnet

import (
	"sync"
	"time"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// seedOut notes, from the seed's serve events, when it had sent every
// block the fetchers lack at least once, and the bytes of the blocks it
// sent.
type seedOut struct {
	clk   clock.Clock
	mu    sync.Mutex
	sent  []bool
	left  int
	at    time.Time
	bytes int64
}

// newSeedOut returns the seedOut of blocks blocks, of which the fetchers
// lack those lacked marks (nil: all of them).
func newSeedOut(clk clock.Clock, blocks int, lacked []bool) *seedOut {
	o := &seedOut{clk: clk, left: blocks, sent: make([]bool, blocks)}
	for i, l := range lacked {
		if !l && i < blocks {
			o.sent[i] = true
			o.left--
		}
	}
	return o
}

// observe counts a block the seed sent (coded blocks are not the file's).
func (o *seedOut) observe(ev peer.ServeEvent) {
	if ev.Kind != peer.EventBlockSent || ev.Coded {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bytes += int64(ev.Bytes)
	if ev.Index >= 0 && ev.Index < len(o.sent) && !o.sent[ev.Index] {
		o.sent[ev.Index] = true
		if o.left--; o.left == 0 {
			o.at = o.clk.Now()
		}
	}
}

// done returns when every block had been sent once (zero: not all were).
func (o *seedOut) done() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.at
}

// sentBytes returns the bytes of the blocks sent.
func (o *seedOut) sentBytes() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bytes
}

// heldElsewhere reports whether each of the n blocks is stored by some node
// other than the seed.
func heldElsewhere(nodes []*node, mu *sync.Mutex, seed, n int) bool {
	mu.Lock()
	defer mu.Unlock()
	for b := range n {
		held := false
		for i, nd := range nodes {
			if i != seed && nd != nil && nd.store != nil && nd.store.Has(b) {
				held = true
				break
			}
		}
		if !held {
			return false
		}
	}
	return true
}
