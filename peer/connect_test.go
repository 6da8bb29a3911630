package peer

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
)

// TestFetchTellsUnreachable: a fetch whose seed is gone says so at its first
// failed dial (FetchPeerUnreachable, with the dial's error), before its
// retries end, and the fetch then fails for want of peers.
func TestFetchTellsUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, _ := seedFile(t, dir, 64<<10, 16<<10)
	seed.Close() // its port now refuses
	fetcher := newTestPeer(t)
	var (
		mu  sync.Mutex
		evs []FetchEvent
	)
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	_, err := fetcher.Fetch(fctx, tk, filepath.Join(dir, "out"), WithFetchEvents(func(ev FetchEvent) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
		stop() // no need to wait out the retries
	}))
	if err == nil {
		t.Fatal("fetch from a closed seed succeeded")
	}
	if !errors.Is(err, ErrNoPeers) && !errors.Is(err, context.Canceled) {
		t.Errorf("fetch: %v, want no peers or canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the event came after %v, not at the first failed dial", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evs) != 1 {
		t.Fatalf("events %+v, want one", evs)
	}
	if ev := evs[0]; ev.Kind != FetchPeerUnreachable || ev.Peer != tk.Peers[0].ID || ev.Err == nil || ev.Block != -1 {
		t.Errorf("event %+v, want FetchPeerUnreachable of the seed with the dial's error", ev)
	}
}

// TestFetchDeadPeerNoWait: a fetch given a peer that does not answer beside
// one that does starts without waiting out the dials of the first (15 s):
// it ends well within a context of 10 s.
func TestFetchDeadPeerNoWait(t *testing.T) {
	dir := t.TempDir()
	_, tk, src := seedFile(t, dir, 64<<10, 16<<10)
	gone := newTestPeer(t)
	dead := gone.Addrs()[0]
	gone.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := filepath.Join(dir, "out")
	if _, err := newTestPeer(t).Fetch(ctx, tk, out, WithPeers(dead)); err != nil {
		t.Fatalf("fetch beside a dead peer: %v", err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
}

// recordFetch is a serve.Fetch that records the sources it is offered.
type recordFetch struct {
	mu  sync.Mutex
	ids []lpeer.ID
}

func (r *recordFetch) AddSource(id lpeer.ID) {
	r.mu.Lock()
	r.ids = append(r.ids, id)
	r.mu.Unlock()
}

// TestLateSourcesStarted: a peer reached after the fetch took its sources
// but before it ran is handed to it when it starts (started), and one
// reached once it runs goes to it at once; none is lost between.
func TestLateSourcesStarted(t *testing.T) {
	dir := t.TempDir()
	seed, tk, _ := seedFile(t, dir, 64<<10, 16<<10)
	late := newLateSources(seed.lib, tk.Root)
	a, b := lpeer.ID("peer-a"), lpeer.ID("peer-b")
	if got := late.take(nil); len(got) != 0 {
		t.Fatalf("take of none: %v", got)
	}
	late.add(a) // after the take, before the fetch runs
	c := seed.lib.Lookup(tk.Root[:])
	rec := &recordFetch{}
	if !c.SetFetch(rec) {
		t.Fatal("a fetch runs already")
	}
	defer c.ClearFetch(rec)
	late.started()
	late.add(b)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.ids) != 2 || rec.ids[0] != a || rec.ids[1] != b {
		t.Errorf("the running fetch was offered %v, want [%s %s]", rec.ids, a, b)
	}
}
