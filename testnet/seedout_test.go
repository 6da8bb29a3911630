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
	o := &seedOut{clk: fc, left: 3, sent: make([]bool, 3)}
	for _, ev := range []peer.ServeEvent{
		{Kind: peer.EventBlockSent, Index: 0},
		{Kind: peer.EventBlockSent, Index: 0},
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
}
