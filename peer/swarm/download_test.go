package swarm

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/sched"
	"github.com/reconcile-p2p/reconcile/peer/serve"
)

// TestFrameBufsAllocs checks that a block's frame buffer has room for the
// frame and little more (a content-defined block's frame does not take a
// buffer of the longest block), and that once the pools are warm it is
// taken and given back without an allocation.
func TestFrameBufsAllocs(t *testing.T) {
	f := &fetch{}
	for _, n := range []int{100, 60 << 10, 121 << 10, chunker.DefaultBlockSize + 1 + serve.MaxVarint, 1 << 20} {
		b := f.getBuf(n)
		if len(b) != 0 || cap(b) < n || 16*(cap(b)-n) >= cap(b)+16 {
			t.Fatalf("getBuf(%d): len %d cap %d, want 0 and at least %d, at most 1/16 more", n, len(b), cap(b), n)
		}
		f.putBuf(b[:min(n, 10)])
	}
	n := chunker.DefaultBlockSize + 1 + serve.MaxVarint
	if a := testing.AllocsPerRun(100, func() { f.putBuf(f.getBuf(n)) }); a != 0 && !raceEnabled {
		t.Errorf("getBuf and putBuf: %v allocations, want 0", a)
	}
}

// BenchmarkFrameBufs measures taking and returning one frame buffer, as the
// fetch does for every block received.
func BenchmarkFrameBufs(b *testing.B) {
	f := &fetch{}
	n := chunker.DefaultBlockSize + 1 + serve.MaxVarint
	b.ReportAllocs()
	for b.Loop() {
		f.putBuf(f.getBuf(n))
	}
}

// TestWaitForRoom: a download whose source has more to give waits while the
// fetch holds all the blocks it may, and goes on once the writers free one;
// with nothing more to give, or once roomWait is over, it stops. The
// fetch's clock is a fake one, advanced by the test.
func TestWaitForRoom(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fc := clockwork.NewFakeClock()
	f := &fetch{p: &Node{cfg: testConfig(), clk: fc}, ctx: ctx, pick: sched.NewPicker[lpeer.ID](func(int) bool { return false }, 2)}
	src := &source{id: "a"}
	f.pick.Offer(&src.offers, []int{0, 1, 2, 3})
	// Room, and offers nothing can be claimed of now (a source to be
	// reconciled with again): no wait, and no spin either.
	src.recheck = true
	if (worker{f, src}).waitForRoom() {
		t.Fatal("waitForRoom: true for a source asked for nothing")
	}
	src.recheck = false
	if got := f.pick.Claim(src.id, &src.offers, 4); len(got) != 2 {
		t.Fatalf("claimed %v, want 2 blocks (the limit)", got)
	}
	// wait runs waitForRoom, advancing the clock a poll at a time while it
	// waits (free is called once, at the first wait), and returns its
	// answer and the clock's time it took.
	wait := func(free func()) (bool, time.Duration) {
		start := fc.Now()
		done := make(chan bool, 1)
		go func() { done <- (worker{f, src}).waitForRoom() }()
		for {
			select {
			case ok := <-done:
				return ok, fc.Since(start)
			default:
			}
			bctx, bcancel := context.WithTimeout(ctx, 10*time.Millisecond)
			if fc.BlockUntilContext(bctx, 1) == nil {
				if free != nil {
					free()
					free = nil
				}
				fc.Advance(roomPoll)
			}
			bcancel()
		}
	}
	ok, d := wait(func() {
		f.mu.Lock()
		f.pick.Done(0, false)
		f.mu.Unlock()
	})
	if !ok {
		t.Fatal("waitForRoom: false, want true once a claim is done")
	}
	if d < roomPoll {
		t.Fatalf("waitForRoom returned after %v, before the room was made", d)
	}
	// At the limit again, and nothing frees it: it gives up after roomWait.
	f.pick.Claim(src.id, &src.offers, 1)
	if ok, d := wait(nil); ok || d < roomWait || d > roomWait+2*roomPoll {
		t.Fatalf("with no room: %v after %v, want false after %v", ok, d, roomWait)
	}
	// Room from the start: no wait (the download found nothing to claim
	// for other reasons).
	f.pick.Done(1, false)
	if ok, d := wait(nil); ok || d != 0 {
		t.Fatalf("waitForRoom with room: %v after %v, want false at once", ok, d)
	}
	// Nothing more offered: no wait.
	src.offers.Queue = nil
	if (worker{f, src}).waitForRoom() {
		t.Fatal("waitForRoom: true with nothing offered")
	}
}
