package testnet

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/reconcile-p2p/reconcile/peer"
)

// TestSeedOut: the seed is out when it has sent every block once; repeats,
// coded blocks, other events and indices out of range do not count.
func TestSeedOut(t *testing.T) {
	fc := clockwork.NewFakeClock()
	o := newSeedOut(fc, 3, nil)
	for _, ev := range []peer.ServeEvent{
		{Kind: peer.EventBlockSent, Index: 0, Bytes: 10},
		{Kind: peer.EventBlockSent, Index: 0, Bytes: 10},
		{Kind: peer.EventBlockSent, Index: 1, Coded: true},
		{Kind: peer.EventAnswered, Index: 1},
		{Kind: peer.EventBlockSent, Index: 7},
		{Kind: peer.EventBlockSent, Index: -1},
		{Kind: peer.EventBlockSent, Index: 2},
	} {
		o.observe(ev)
	}
	if !o.done().IsZero() {
		t.Fatalf("out with block 1 never sent")
	}
	fc.Advance(time.Minute)
	o.observe(peer.ServeEvent{Kind: peer.EventBlockSent, Index: 1})
	if at := o.done(); !at.Equal(fc.Now()) {
		t.Fatalf("out at %v, want when the last block was sent (%v)", at, fc.Now())
	}
	if n := o.sentBytes(); n != 20 {
		t.Errorf("%d bytes sent, want 20 (coded blocks left out)", n)
	}
	// Blocks the fetchers hold already need not leave the seed.
	o = newSeedOut(fc, 3, []bool{false, true, false})
	o.observe(peer.ServeEvent{Kind: peer.EventBlockSent, Index: 1})
	if o.done().IsZero() {
		t.Error("not out once the one block lacked was sent")
	}
}
