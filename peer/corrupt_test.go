package peer

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/peer/swarm"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// eventLog collects the events of a fetch.
type eventLog struct {
	mu  sync.Mutex
	evs []FetchEvent
}

func (l *eventLog) add(ev FetchEvent) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) all() []FetchEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]FetchEvent(nil), l.evs...)
}

// serveFromFile makes p answer block requests from the bytes of the file
// data (blocks of bs bytes), passing each block through corrupt first; it
// records every block asked for.
func serveFromFile(p *Peer, data []byte, bs int, count int, corrupt func(i int, b []byte) []byte) *askLog {
	asked := &askLog{n: make(map[int]int)}
	misbehave(p, func(s network.Stream, fr *wire.Reader, bw *bufio.Writer) {
		for {
			f, err := fr.Next(1 << 20)
			if err != nil {
				return
			}
			idx, err := wire.DecodeWant(nil, f, 1<<20, count)
			if err != nil {
				return
			}
			for _, i := range idx {
				asked.add(i)
				b := append([]byte(nil), data[i*bs:min(len(data), (i+1)*bs)]...)
				wire.WriteFrame(bw, wire.AppendBlockHeader(nil, i), corrupt(i, b))
			}
			if bw.Flush() != nil {
				return
			}
		}
	})
	return asked
}

// askLog counts the requests of each block.
type askLog struct {
	mu sync.Mutex
	n  map[int]int
}

func (a *askLog) add(i int) {
	a.mu.Lock()
	a.n[i]++
	a.mu.Unlock()
}

func (a *askLog) times(i int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[i]
}

// TestCorruptBlockKeepGoing: a peer that sends one corrupt block is reported
// (a FetchCorruptBlock event naming it and the block), is not asked for that
// block again, keeps serving others and is not banned; the block comes from
// another peer and the file completes.
func TestCorruptBlockKeepGoing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	const bs = 16 << 10
	// The honest seed is slow (128 KiB/s): the flaky peer serves most blocks.
	seed, tk, src := seedFile(t, dir, 1<<20, bs, WithServeRate(128<<10))
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	flaky := newTestPeer(t)
	if _, err := flaky.Seed(ctx, src, WithBlockSize(bs)); err != nil {
		t.Fatal(err)
	}
	m := seed.lib.Lookup(tk.Root[:]).Man
	var once sync.Once
	var badAt atomic.Int64
	badAt.Store(-1)
	asked := serveFromFile(flaky, data, bs, m.BlockCount(), func(i int, b []byte) []byte {
		once.Do(func() { badAt.Store(int64(i)); b[0] ^= 0xff }) // the first block it sends
		return b
	})
	tk.Peers = append([]AddrInfo{flaky.AddrInfo()}, tk.Peers...)
	fetcher := newTestPeer(t)
	var evs eventLog
	out := filepath.Join(dir, "out")
	sum, err := fetcher.Fetch(ctx, tk, out, WithFetchEvents(evs.add))
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
	bad := int(badAt.Load())
	got := evs.all()
	if len(got) != 1 || got[0].Kind != FetchCorruptBlock || got[0].Peer != flaky.ID() || got[0].Block != bad || got[0].Corrupt != 1 {
		t.Fatalf("events %+v; want one corrupt block %d from %s", got, bad, flaky.ID())
	}
	if n := asked.times(bad); n != 1 {
		t.Errorf("the flaky peer was asked for its corrupt block %d times, want 1", n)
	}
	var share *PeerShare
	for i := range sum.Peers {
		if sum.Peers[i].Peer == flaky.ID().String() {
			share = &sum.Peers[i]
		}
	}
	if share == nil || share.Dropped != "" || share.Rejected != 1 || share.Blocks == 0 {
		t.Fatalf("flaky peer's share %+v: want 1 rejected, blocks sent, not dropped", share)
	}
	if fetcher.guard.IsBanned(flaky.ID()) {
		t.Error("a peer with one corrupt block was banned")
	}
}

// TestCorruptBlocksBan: a peer that sends nothing but corrupt blocks is
// reported for each of the first three, then dropped and banned (one
// FetchPeerBanned event); the file completes from the honest seed.
func TestCorruptBlocksBan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	const bs = 16 << 10
	seed, tk, src := seedFile(t, dir, 1<<20, bs, WithServeRate(1<<20))
	liar := newTestPeer(t)
	if _, err := liar.Seed(ctx, src, WithBlockSize(bs)); err != nil {
		t.Fatal(err)
	}
	m := seed.lib.Lookup(tk.Root[:]).Man
	serveFromFile(liar, make([]byte, m.TotalSize()), bs, m.BlockCount(), func(i int, b []byte) []byte { return b })
	tk.Peers = append([]AddrInfo{liar.AddrInfo()}, tk.Peers...)
	fetcher := newTestPeer(t)
	var evs eventLog
	out := filepath.Join(dir, "out")
	sum, err := fetcher.Fetch(ctx, tk, out, WithFetchEvents(evs.add))
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
	var kinds []string
	for _, ev := range evs.all() {
		if ev.Peer != liar.ID() {
			t.Errorf("event about %s: %+v", ev.Peer, ev)
		}
		kinds = append(kinds, ev.Kind.String())
	}
	if want := "corrupt-block corrupt-block corrupt-block peer-banned"; strings.Join(kinds, " ") != want {
		t.Errorf("events %v, want %s", kinds, want)
	}
	if !fetcher.guard.IsBanned(liar.ID()) {
		t.Error("the liar is not banned")
	}
	for _, ps := range sum.Peers {
		if ps.Peer == liar.ID().String() && (ps.Blocks != 0 || !strings.HasPrefix(ps.Dropped, "sent 3 corrupt blocks (the last: block ")) {
			t.Errorf("liar's share %+v: want no block and dropped for 3 corrupt blocks", ps)
		}
	}
}

// TestBlockRanges words missing blocks as ranges.
func TestBlockRanges(t *testing.T) {
	for _, tc := range []struct {
		idx  []int
		max  int
		want string
	}{
		{nil, 8, ""},
		{[]int{3}, 8, "block 3"},
		{[]int{0, 1, 2}, 8, "blocks 0-2"},
		{[]int{1, 4, 5, 6, 9}, 8, "blocks 1, 4-6 and 9"},
		{[]int{1, 3, 5, 7}, 2, "blocks 1, 3, …"},
	} {
		if got := swarm.BlockRanges(tc.idx, tc.max); got != tc.want {
			t.Errorf("blockRanges(%v, %d) = %q, want %q", tc.idx, tc.max, got, tc.want)
		}
	}
}
