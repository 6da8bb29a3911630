package peer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// TestJoinedTrees: a seed that places its fetchers (WithTrees) and six
// fetches that know only its ticket, of fixed or content-defined blocks.
// With WithJoinNear, each joins the seed's trees as it starts, and most
// blocks come down them: the fetchers push to each other what the seed
// sent once, and each output is the seed's file. With WithoutJoin, none is
// pushed a block; nor by default, the seed being on loopback, nearer than
// JoinMinRTT.
func TestJoinedTrees(t *testing.T) {
	for _, tc := range []struct {
		join, near, cdc bool
	}{{true, true, false}, {false, true, false}, {true, true, true}, {true, false, false}} {
		join := tc.join && tc.near
		t.Run(fmt.Sprintf("join=%t,near=%t,content-defined=%t", tc.join, tc.near, tc.cdc), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			dir := t.TempDir()
			src := writeRandomFile(t, dir, "data.bin", 2<<20, 21)
			// A copy takes the seed a second: the fetches outlast its
			// settle time (swarm.PlaceSettle), during which the fetchers
			// it has not yet told their parents pull.
			seed := newTestPeer(t, WithServeRate(2<<20))
			chunking := WithBlockSize(16 << 10)
			if tc.cdc {
				// Blocks of varying lengths, dealt into the stripes by
				// bytes.
				chunking = WithContentDefined(chunker.Chunking{})
			}
			tk, err := seed.Seed(ctx, src, chunking, WithTrees(2))
			if err != nil {
				t.Fatal(err)
			}
			var opts []FetchOption
			if !tc.join {
				opts = append(opts, WithoutJoin())
			}
			if tc.near {
				opts = append(opts, WithJoinNear())
			}
			const n = 6
			sums := make([]*Summary, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for j := range n {
				p := newTestPeer(t)
				out := filepath.Join(dir, fmt.Sprint("out", j))
				wg.Add(1)
				go func() {
					defer wg.Done()
					sums[j], errs[j] = p.Fetch(ctx, tk, out, opts...)
				}()
			}
			wg.Wait()
			pushed, blocks := 0, 0
			for j := range n {
				if errs[j] != nil {
					t.Fatalf("fetcher %d: %v", j, errs[j])
				}
				sameFile(t, src, filepath.Join(dir, fmt.Sprint("out", j), "data.bin"))
				pushed += sums[j].Pushed
				blocks += sums[j].Blocks
			}
			var served int64
			for _, b := range seed.ServedBytes(tk.Root) {
				served += b
			}
			t.Logf("%d of %d blocks pushed; the seed sent %.2f copies", pushed, blocks, float64(served)/float64(2<<20))
			switch {
			case join && 2*pushed < blocks:
				t.Errorf("%d of %d blocks pushed, want at least half", pushed, blocks)
			case !join && pushed != 0:
				t.Errorf("%d blocks pushed without joining (or near the seed)", pushed)
			}
		})
	}
}

// TestJoinedTreesLeave: a fetcher that leaves mid-fetch (its service
// closes) frees its places: the seed places its children again, under
// peers still there, and the others complete.
func TestJoinedTreesLeave(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	src := writeRandomFile(t, dir, "data.bin", 2<<20, 22)
	var mu sync.Mutex
	parent := map[[2]string]string{} // {child, stripe} -> its last parent
	seed := newTestPeer(t, WithServeRate(1<<20), WithServeObserver(func(ev ServeEvent) {
		if ev.Kind == EventPlaced {
			mu.Lock()
			parent[[2]string{ev.Peer.String(), fmt.Sprint(ev.Index)}] = ev.Parent.String()
			mu.Unlock()
		}
	}))
	tk, err := seed.Seed(ctx, src, WithBlockSize(16<<10), WithTrees(2))
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	peers := make([]*Peer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for j := range n {
		peers[j] = newTestPeer(t, WithServeRate(1<<20))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[j] = peers[j].Fetch(ctx, tk, filepath.Join(dir, fmt.Sprint("out", j)), WithJoinNear())
		}()
	}
	// The first to be placed as a root leaves once every fetcher joined.
	var leaver string
	for leaver == "" && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		if len(parent) == 2*n {
			for k, p := range parent {
				if p == seed.ID().String() {
					leaver = k[0]
					break
				}
			}
		}
		mu.Unlock()
	}
	for _, p := range peers {
		if p.ID().String() == leaver {
			p.Close()
		}
	}
	wg.Wait()
	for j, p := range peers {
		if p.ID().String() == leaver {
			continue
		}
		if errs[j] != nil {
			t.Fatalf("fetcher %d: %v", j, errs[j])
		}
		sameFile(t, src, filepath.Join(dir, fmt.Sprint("out", j), "data.bin"))
	}
	mu.Lock()
	defer mu.Unlock()
	for k, p := range parent {
		if k[0] != leaver && p == leaver {
			t.Errorf("%s is still placed under the fetcher that left in stripe %s", k[0], k[1])
		}
	}
}

// TestJoinedTreesUpdate: fetchers that hold version 1 of a file join the
// trees of a seed of version 2 (Hello.Holds): the seed pushes its roots
// only the blocks they lack (what their catch-up requests name), not every
// block of their stripes, and sends little more than the new blocks; each
// output ends as version 2.
func TestJoinedTreesUpdate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	for _, v := range []string{"v1", "v2"} {
		if err := os.MkdirAll(filepath.Join(dir, v), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	v1 := writeRandomFile(t, filepath.Join(dir, "v1"), "data.bin", 2<<20, 23)
	data, err := os.ReadFile(v1)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{500 << 10, 1500 << 10} { // two places overwritten
		copy(data[at:at+8<<10], bytes.Repeat([]byte{0x5a}, 8<<10))
	}
	v2 := filepath.Join(dir, "v2", "data.bin")
	if err := os.WriteFile(v2, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seedPushed := 0
	seed := newTestPeer(t, WithServeRate(8<<20), WithServeObserver(func(ev ServeEvent) {
		if ev.Kind == EventBlockSent && ev.Pushed {
			mu.Lock()
			seedPushed++
			mu.Unlock()
		}
	}))
	tk, err := seed.Seed(ctx, v2, WithContentDefined(chunker.Chunking{}), WithTrees(2))
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	sums := make([]*Summary, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for j := range n {
		out := filepath.Join(dir, fmt.Sprint("out", j))
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, v1, filepath.Join(out, "data.bin")) // version 1, as an earlier fetch left it
		p := newTestPeer(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[j], errs[j] = p.Fetch(ctx, tk, out, WithJoinNear())
		}()
	}
	wg.Wait()
	var newBytes int64
	pushed, newBlocks := 0, 0
	for j := range n {
		if errs[j] != nil {
			t.Fatalf("fetcher %d: %v", j, errs[j])
		}
		sameFile(t, v2, filepath.Join(dir, fmt.Sprint("out", j), "data.bin"))
		if sums[j].ReusedBlocks == 0 {
			t.Errorf("fetcher %d reused no block of version 1", j)
		}
		newBytes = max(newBytes, sums[j].Bytes-sums[j].ReusedBytes)
		newBlocks = max(newBlocks, sums[j].Blocks-sums[j].ReusedBlocks)
		pushed += sums[j].Pushed
	}
	var served int64
	for _, b := range seed.ServedBytes(tk.Root) {
		served += b
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d new blocks, %d bytes; the seed sent %d bytes (%.2f copies of them) and pushed %d blocks; %d blocks pushed in all",
		newBlocks, newBytes, served, float64(served)/float64(newBytes), seedPushed, pushed)
	// Each new block goes to its stripe's root once (twice for a root
	// placed again); pushed whole stripes, the roots would take the
	// blocks they hold.
	if seedPushed > 2*newBlocks {
		t.Errorf("the seed pushed %d blocks for %d new ones", seedPushed, newBlocks)
	}
}

// TestUnserveEndsJoins: a seed that stops serving its content (Unserve)
// ends its fetchers' join streams: they leave its trees (the seed places
// the children of those that left again, an EventPlaced each) rather
// than wait for pushes that will not come.
func TestUnserveEndsJoins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	src := writeRandomFile(t, dir, "data.bin", 2<<20, 24)
	placed := make(chan struct{}, 64)
	seed := newTestPeer(t, WithServeRate(128<<10), WithServeObserver(func(ev ServeEvent) {
		if ev.Kind == EventPlaced {
			select {
			case placed <- struct{}{}:
			default:
			}
		}
	}))
	tk, err := seed.Seed(ctx, src, WithBlockSize(16<<10), WithTrees(2))
	if err != nil {
		t.Fatal(err)
	}
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer fcancel()
	for j := range 2 {
		p := newTestPeer(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = p.Fetch(fctx, tk, filepath.Join(dir, fmt.Sprint("out", j)), WithJoinNear(), WithNoPeerTimeout(time.Minute))
		}()
	}
	for range 4 { // each fetcher placed in both stripes
		select {
		case <-placed:
		case <-ctx.Done():
			t.Fatal("the fetchers were not placed")
		}
	}
	if ok, err := seed.Unserve(tk.Root); !ok || err != nil {
		t.Fatalf("Unserve: %v, %v", ok, err)
	}
	select {
	case <-placed:
	case <-time.After(10 * time.Second):
		t.Fatal("no fetcher left the trees within 10 s of Unserve")
	}
}

// TestJoinsBeyondStreams: a seed keeps the join stream of every fetcher it
// places, more than Limits.Streams of them (serve.JoinStreams): held to
// that limit, each new join reset an older one, whose fetcher left the
// trees.
func TestJoinsBeyondStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const joins = 4
	seed := newTestPeer(t, WithLimits(Limits{Streams: 2}))
	tk, err := seed.Seed(ctx, writeRandomFile(t, t.TempDir(), "data.bin", 256<<10, 7), WithBlockSize(16<<10), WithTrees(2))
	if err != nil {
		t.Fatal(err)
	}
	var streams []network.Stream
	for range joins {
		s, _ := openRaw(ctx, t, connectedPeer(ctx, t, seed), seed, ProtoJoin, wire.Hello{Root: tk.Root[:]}.Append(nil))
		defer s.Reset()
		f, err := wire.NewReader(s).Next(1 << 16)
		if err != nil || len(f) == 0 || f[0] != wire.TypePlace {
			t.Fatalf("join %d: %x, %v; want a place frame", len(streams), f, err)
		}
		streams = append(streams, s)
	}
	// Every stream is still open: reads (of later placements) end with
	// their deadline rather than a reset.
	for k, s := range streams {
		_ = s.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		var b [512]byte
		var err error
		for err == nil {
			_, err = s.Read(b[:])
		}
		if ne, ok := err.(interface{ Timeout() bool }); !ok || !ne.Timeout() {
			t.Errorf("join %d of %d (Limits.Streams 2): %v, want a read that waits", k, joins, err)
		}
	}
}
