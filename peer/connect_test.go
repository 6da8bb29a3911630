package peer

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
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
