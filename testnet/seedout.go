package testnet

import (
	"sync"
	"time"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// seedOut notes, from the seed's serve events, when it had sent every
// block at least once.
type seedOut struct {
	clk  clock.Clock
	mu   sync.Mutex
	sent []bool
	left int
	at   time.Time
}

// observe counts a block the seed sent (coded blocks are not the file's).
func (o *seedOut) observe(ev peer.ServeEvent) {
	if ev.Kind != peer.EventBlockSent || ev.Coded {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
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
