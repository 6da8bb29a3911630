package peer

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// TestBusyPause: a fetch asks a source that answers "busy" (its upload
// queue held by two other fetchers) again after a pause that grows to a
// second, however often the fetch gains or releases blocks. Before, every
// release woke the busy source's worker, which asked again at once; a busy
// answer releases the blocks asked for, so two busy sources woke each
// other: in a swarm of 20 rate-capped fetch processes on loopback, 3,200
// busy answers a second, each a stream opened and refused, and 80-90 % of
// 2 cores spent on them (reconcile bench swarm).
func TestBusyPause(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 5 s")
	}
	const (
		size  = 1 << 20
		block = 16 << 10
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	busy := map[lpeer.ID]int{}
	count := WithServeObserver(func(ev ServeEvent) {
		if ev.Kind == EventBusy {
			mu.Lock()
			busy[ev.Peer]++
			mu.Unlock()
		}
	})
	dir := t.TempDir()
	// s1 and s1b serve slowly, so that two fetchers always have blocks
	// queued at both; s2 feeds the third fetcher a block every 60 ms or so.
	_, tk, src := seedFile(t, dir, size, block, WithServeRate(64<<10), count)
	seedToo := func(opts ...Option) []ma.Multiaddr {
		p := newTestPeer(t, opts...)
		if _, err := p.Seed(ctx, src, WithBlockSize(block)); err != nil {
			t.Fatal(err)
		}
		ai := p.AddrInfo()
		addrs, err := lpeer.AddrInfoToP2pAddrs(&ai)
		if err != nil {
			t.Fatal(err)
		}
		return addrs
	}
	s1b := seedToo(WithServeRate(64<<10), count)
	s2 := seedToo(WithServeRate(256 << 10))
	for _, name := range []string{"a", "b"} {
		p := newTestPeer(t)
		go p.Fetch(ctx, tk, filepath.Join(dir, name), WithPeers(s1b...)) // ended by cancel
	}
	time.Sleep(500 * time.Millisecond) // a and b have blocks queued at s1 and s1b
	c := newTestPeer(t)
	start := time.Now()
	if _, err := c.Fetch(ctx, tk, filepath.Join(dir, "c"), WithPeers(append(s1b, s2...)...)); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	sameFile(t, src, filepath.Join(dir, "c", "data.bin"))
	mu.Lock()
	n := busy[c.ID()]
	mu.Unlock()
	// Pauses of 50, 100, 200, 400, 800 ms, then a second: about one ask a
	// second after the first 1.5 s, from each of the two slow seeds; the
	// first busy answer comes at once.
	most := 2 * (6 + int(took.Seconds()))
	t.Logf("fetched in %v; s1 and s1b answered c busy %d times (at most %d)", took.Round(time.Millisecond), n, most)
	if n == 0 {
		t.Fatal("never answered busy: the test's queues did not fill")
	}
	if n > most {
		t.Fatalf("s1 and s1b answered c busy %d times in %v, want at most %d: the busy sources were asked again on every wake-up", n, took.Round(time.Millisecond), most)
	}
}
