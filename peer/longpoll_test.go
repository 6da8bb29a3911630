package peer

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestReconConnHold: a held conn refuses an offer of nothing new, and
// passes any other; answeredBefore says what is new for a peer.
func TestReconConnHold(t *testing.T) {
	var ct content
	if !ct.answeredBefore("p", nil) || ct.answeredBefore("p", []uint32{1}) {
		t.Fatal("before any answer: nothing is old but an empty offer")
	}
	ct.noteAnswered("p", []int{1, 4, 7})
	for _, tc := range []struct {
		idx []uint32
		old bool
	}{{nil, true}, {[]uint32{1}, true}, {[]uint32{4, 7}, true}, {[]uint32{1, 4, 7}, true}, {[]uint32{2}, false}, {[]uint32{1, 8}, false}, {[]uint32{0, 4}, false}} {
		if got := ct.answeredBefore("p", tc.idx); got != tc.old {
			t.Errorf("answeredBefore(%v) = %v after [1 4 7]", tc.idx, got)
		}
	}
	if ct.answeredBefore("q", []uint32{1}) {
		t.Error("another peer's answer counted")
	}
	sent := 0
	c := &reconConn{send: func(...[]byte) error { sent++; return nil }, hold: func(idx []uint32) bool { return ct.answeredBefore("p", idx) }}
	if err := c.Send(&reconcile.Message{Type: reconcile.MsgOffer, Indices: []uint32{4}}, nil); !errors.Is(err, errHold) {
		t.Fatalf("old offer: %v, want errHold", err)
	}
	if err := c.Send(&reconcile.Message{Type: reconcile.MsgOffer, Indices: []uint32{3}}, nil); err != nil {
		t.Fatal(err)
	}
	c.hold = nil
	if err := c.Send(&reconcile.Message{Type: reconcile.MsgOffer}, nil); err != nil {
		t.Fatal(err)
	}
	if sent != 2 {
		t.Fatalf("%d messages sent, want 2", sent)
	}
}

// TestLongPoll: a peer asked with Hello.Wait that holds nothing new for the
// asker answers once it gains a block, with that block; asked without it,
// it answers at once with nothing.
func TestLongPoll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, src := seedFile(t, dir, 1<<20, 16<<10)
	m := seed.lookup(tk.Root[:]).man
	half := func(i int) bool { return i < m.BlockCount()/2 }
	var peers [2]*Peer
	for j := range peers {
		out := filepath.Join(dir, []string{"a", "b"}[j])
		prefill(t, src, m, out, half)
		st, err := openStoreForTest(out)
		if err != nil {
			t.Fatal(err)
		}
		peers[j] = newTestPeer(t)
		if _, err := peers[j].Serve(st); err != nil {
			t.Fatal(err)
		}
	}
	a, b := peers[0], peers[1]
	if err := b.Host().Connect(ctx, a.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	ca, cb := a.lookup(tk.Root[:]), b.lookup(tk.Root[:])
	ask := func(wait bool) ([]int, time.Duration) {
		t.Helper()
		began := time.Now()
		cs, err := b.requestHello(ctx, a.ID(), ProtoReconcile, wire.Hello{Root: tk.Root[:], Wait: wait})
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := b.pullSession(ctx, cs, cb.recon, reconcile.Complete, cb.store.Held())
		if err != nil {
			t.Fatal(err)
		}
		cs.close()
		return s.Wanted(), time.Since(began)
	}
	if got, _ := ask(false); len(got) != 0 {
		t.Fatalf("offered %v of the same half", got)
	}
	// The first long poll answers at once (perhaps with false offers, blocks
	// b holds too); the second finds nothing new until a gains a block.
	if got, took := ask(true); len(got) != 0 || took > longPoll/2 {
		t.Fatalf("first long poll offered %v after %v", got, took)
	}
	const gain = 40
	const after = 500 * time.Millisecond
	data, err := seed.lookup(tk.Root[:]).store.ReadBlock(gain, nil)
	if err != nil {
		t.Fatal(err)
	}
	grown := make(chan error, 1)
	go func() {
		time.Sleep(after)
		err := ca.store.PutBlock(gain, data)
		ca.noteGrowth()
		grown <- err
	}()
	defer func() {
		if err := <-grown; err != nil {
			t.Error(err)
		}
	}()
	got, took := ask(true)
	if !slices.Equal(got, []int{gain}) {
		t.Fatalf("long poll offered %v, want [%d]", got, gain)
	}
	if took < after {
		t.Fatalf("long poll answered after %v, before the block was gained (%v)", took, after)
	}
	if took > longPoll {
		t.Fatalf("long poll answered after %v, past its %v bound", took, longPoll)
	}
}
