package peer

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestWatch: a reconciliation asked with Hello.Watch answers as any other,
// then the stream stays open and carries a have frame of every block the
// server gains, a one-way delay after it is stored; the server reads the
// watcher's have frames, and the watch ends when the watcher closes it.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, src := seedFile(t, dir, 1<<20, 16<<10)
	m := seed.lib.Lookup(tk.Root[:]).Man
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
	ca, cb := a.lib.Lookup(tk.Root[:]), b.lib.Lookup(tk.Root[:])
	cs, err := b.nd.RequestHello(ctx, a.ID(), ProtoReconcile, wire.Hello{Root: tk.Root[:], Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Reset()
	s, _, err := b.nd.PullSession(ctx, cs, cb.Recon, reconcile.Complete, cb.Store.Held(), true)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Wanted(); len(got) != 0 {
		t.Fatalf("offered %v of the same half", got)
	}
	// a gains two blocks: b hears of each.
	for _, gain := range []int{40, 50} {
		data, err := seed.lib.Lookup(tk.Root[:]).Store.ReadBlock(gain, nil)
		if err != nil {
			t.Fatal(err)
		}
		stored := time.Now()
		if err := ca.Store.PutBlock(gain, data); err != nil {
			t.Fatal(err)
		}
		ca.NoteGain(gain)
		f, err := cs.NextWithin(serve.HaveFrameMax, 5*time.Second)
		if err != nil {
			t.Fatalf("no have frame for block %d: %v", gain, err)
		}
		idx, err := wire.DecodeHave(nil, f, serve.MaxHave, m.BlockCount())
		if err != nil || !slices.Equal(idx, []int{gain}) {
			t.Fatalf("have frame %v, %v; want [%d]", idx, err, gain)
		}
		if d := time.Since(stored); d > time.Second {
			t.Errorf("have of block %d came %v after it was stored", gain, d)
		}
	}
	// b's own have frame is read (a plain server ignores it), and the watch
	// ends cleanly when b closes: a's stream of the watch goes away.
	if err := cs.Send(wire.AppendHave(nil, []int{60})); err != nil {
		t.Fatal(err)
	}
	if err := cs.Flush(); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	deadline := time.Now().Add(5 * time.Second)
	for streamsOf(a, ProtoReconcile) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the watch's stream is still open on the server after the watcher closed it")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// streamsOf counts the open streams of proto on p's host.
func streamsOf(p *Peer, proto protocol.ID) int {
	n := 0
	for _, c := range p.Host().Network().Conns() {
		for _, s := range c.GetStreams() {
			if s.Protocol() == proto {
				n++
			}
		}
	}
	return n
}
