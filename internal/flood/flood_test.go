package flood_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/internal/flood"
	"github.com/reconcile-p2p/reconcile/peer"
)

// seed starts a seed of a random file of size bytes on loopback.
func seed(t testing.TB, size, blockSize int, opts ...peer.Option) (*peer.Peer, peer.Ticket, *chunker.Manifest, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "data.bin")
	data := make([]byte, size)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := peer.New(ctx, append([]peer.Option{peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tk, err := s.Seed(ctx, src, peer.WithBlockSize(blockSize))
	if err != nil {
		t.Fatal(err)
	}
	m, err := chunker.ChunkPath(ctx, src, blockSize)
	if err != nil {
		t.Fatal(err)
	}
	return s, tk, m, src
}

// fetchOnce fetches tk with a fresh peer into a new folder and checks the
// file is identical to src.
func fetchOnce(t testing.TB, ctx context.Context, tk peer.Ticket, src string, opts ...peer.FetchOption) (*peer.Summary, error) {
	f, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if os.Getenv("FLOOD_DEBUG") != "" {
		t0 := time.Now()
		err := f.Host().Connect(ctx, tk.Peers[0])
		t.Logf("connect: %v in %v", err, time.Since(t0))
	}
	out := t.TempDir()
	sum, err := f.Fetch(ctx, tk, out, opts...)
	if err != nil {
		return sum, err
	}
	got, err := os.ReadFile(filepath.Join(out, filepath.Base(src)))
	if err != nil {
		return sum, err
	}
	want, _ := os.ReadFile(src)
	if !bytes.Equal(got, want) {
		t.Errorf("fetched file differs from the seed's")
	}
	return sum, nil
}

// TestFlood is the short form of the flood test (the long form is
// `reconcile flood`), sized for a machine of two cores: a seed under each
// kind of attack still serves legitimate fetchers, whose files end
// byte-identical. Its subtests:
//   - streams: every attack of All at once (mixed over the identities);
//     the attackers that send malformed frames are banned;
//   - junk: identities from distinct 127.0.0.x addresses write random
//     bytes as fast as they can, banned and redialling;
//   - stalling-source: a source that answers the manifest and the
//     reconciliation and never sends a block, beside the seed; the fetch's
//     summary names it.
//
// Timings are logged, never asserted.
func TestFlood(t *testing.T) {
	t.Run("streams", testStreamFlood)
	t.Run("junk", testJunkFlood)
	t.Run("stalling-source", testStallingSource)
}

// baseline fetches tk twice without attack (the first warms up) and
// returns the second's time.
func baseline(t *testing.T, ctx context.Context, tk peer.Ticket, src string) time.Duration {
	t.Helper()
	var base time.Duration
	for range 2 {
		t0 := time.Now()
		if _, err := fetchOnce(t, ctx, tk, src); err != nil {
			t.Fatal(err)
		}
		base = time.Since(t0)
	}
	t.Logf("fetch without attack: %v", base.Round(time.Millisecond))
	return base
}

// fetchesUnderAttack fetches tk n times, each within 20 s, and logs their
// times as ratios to base.
func fetchesUnderAttack(t *testing.T, ctx context.Context, n int, tk peer.Ticket, src string, base time.Duration, opts ...peer.FetchOption) []*peer.Summary {
	t.Helper()
	var sums []*peer.Summary
	for i := range n {
		t0 := time.Now()
		fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
		sum, err := fetchOnce(t, fctx, tk, src, opts...)
		fcancel()
		if err != nil {
			t.Fatalf("fetch %d under attack: %v", i, err)
		}
		d := time.Since(t0)
		t.Logf("fetch %d under attack: %d blocks in %v (%.1fx the time without attack)", i, sum.Fetched, d.Round(time.Millisecond), float64(d)/float64(base))
		sums = append(sums, sum)
	}
	return sums
}

// logStats logs what the attackers did.
func logStats(t *testing.T, st *flood.Stats) {
	t.Logf("attack: %d streams opened, %d refused, %d repeated blocks received, %d junk bytes written, %d connections, %d dial errors",
		st.Streams.Load(), st.Refused.Load(), st.Blocks.Load(), st.JunkBytes.Load(), st.Dials.Load(), st.DialErrors.Load())
	if e := st.FirstDialError.Load(); e != nil {
		t.Logf("first dial error: %s", *e)
	}
}

// testStreamFlood: every attack of All at once, or the one FLOOD_ATTACK
// names.
func testStreamFlood(t *testing.T) {
	identities, streams := 28, 8
	if testing.Short() {
		identities, streams = 14, 4
	}
	// The limits are scaled down from the defaults (filters of 1 MiB, not
	// 16) so that the attackers, which run in this process and build the
	// filters they send, leave the machine's two cores to the seed; the long
	// form (`reconcile flood`) runs the seed in a process of its own with
	// the default limits.
	lim := peer.Limits{MaxFilterBytes: 1 << 20, ReconcileBytes: 8 << 20}
	s, tk, m, src := seed(t, 8<<20, 64<<10, peer.WithLimits(lim))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	actx, stopAttack := context.WithCancel(ctx)
	var st flood.Stats
	var attacks []flood.Attack
	if a := os.Getenv("FLOOD_ATTACK"); a != "" {
		x, err := flood.ParseAttack(a)
		if err != nil {
			t.Fatal(err)
		}
		attacks = []flood.Attack{x}
	}
	base := baseline(t, ctx, tk, src)
	done := make(chan error, 1)
	go func() {
		done <- flood.Run(actx, flood.Config{Target: s.AddrInfo(), Manifest: m, Identities: identities, Streams: streams, Attacks: attacks, MaxFilterBytes: lim.MaxFilterBytes}, &st)
	}()
	// Let the attack take hold before the legitimate fetches start.
	time.Sleep(2 * time.Second)
	fetchesUnderAttack(t, ctx, 3, tk, src, base)
	stopAttack()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	logStats(t, &st)
}

// testJunkFlood: identities on addresses of their own write junk as fast
// as they can into streams of every protocol, banned and redialling, while
// legitimate fetches run. The attackers run in this process, on the
// seed's cores: the time ratios logged are pessimistic.
func testJunkFlood(t *testing.T) {
	identities, streams := 16, 4
	if testing.Short() {
		identities, streams = 8, 2
	}
	s, tk, m, src := seed(t, 8<<20, 64<<10)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	base := baseline(t, ctx, tk, src)
	actx, stopAttack := context.WithCancel(ctx)
	var st flood.Stats
	done := make(chan error, 1)
	go func() {
		done <- flood.Run(actx, flood.Config{Target: s.AddrInfo(), Manifest: m, Identities: identities, Streams: streams,
			Attacks: []flood.Attack{flood.Junk}, SpreadLoopback: true}, &st)
	}()
	// Long enough for the seed to ban the junk writers (within a second).
	time.Sleep(1500 * time.Millisecond)
	fetchesUnderAttack(t, ctx, 2, tk, src, base)
	stopAttack()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	logStats(t, &st)
	if st.JunkBytes.Load() == 0 || st.Streams.Load() == 0 {
		t.Errorf("the junk writers wrote nothing: %d bytes in %d streams", st.JunkBytes.Load(), st.Streams.Load())
	}
}

// testStallingSource: a fetch told of a stalling source beside the honest
// seed completes byte-identical, and its summary names the stalling source:
// no block from it, and the blocks it stalled or why it was dropped. The
// seed serves at a bounded rate, so that the stalling source has offered
// its blocks and been asked for some of them before the seed is done.
func testStallingSource(t *testing.T) {
	_, tk, _, src := seed(t, 4<<20, 64<<10, peer.WithServeRate(16<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	base := baseline(t, ctx, tk, src)
	staller, err := flood.NewStaller(ctx, src, 64<<10, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	defer staller.Close()
	ai := staller.AddrInfo()
	addrs, err := lpeer.AddrInfoToP2pAddrs(&ai)
	if err != nil || len(addrs) == 0 {
		t.Fatalf("the stalling source's addresses: %v %v", addrs, err)
	}
	for i, sum := range fetchesUnderAttack(t, ctx, 2, tk, src, base, peer.WithPeers(addrs...)) {
		var share *peer.PeerShare
		for j := range sum.Peers {
			if sum.Peers[j].Peer == staller.ID().String() {
				share = &sum.Peers[j]
			}
		}
		if share == nil {
			t.Fatalf("fetch %d: the summary does not list the stalling source: %+v", i, sum.Peers)
		}
		t.Logf("fetch %d: the stalling source's share: %d blocks, %d stalled, dropped: %q", i, share.Blocks, share.Stalled, share.Dropped)
		if share.Blocks != 0 || (share.Dropped == "" && share.Stalled == 0) {
			t.Errorf("fetch %d: the summary does not name the stalling source: %+v", i, *share)
		}
	}
}
