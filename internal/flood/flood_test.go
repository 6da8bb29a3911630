package flood_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

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
func fetchOnce(t testing.TB, ctx context.Context, tk peer.Ticket, src string) (*peer.Summary, error) {
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
	sum, err := f.Fetch(ctx, tk, out)
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

// TestFlood is the short form of the flood test: a seed under every attack
// of package flood at once (mixed over the identities) still serves
// legitimate fetchers, which end byte-identical; the attackers that send
// malformed frames are banned.
func TestFlood(t *testing.T) {
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
	var base time.Duration
	for range 2 { // the first warms up
		t0 := time.Now()
		if _, err := fetchOnce(t, ctx, tk, src); err != nil {
			t.Fatal(err)
		}
		base = time.Since(t0)
	}
	t.Logf("fetch without attack: %v", base.Round(time.Millisecond))
	done := make(chan error, 1)
	go func() {
		done <- flood.Run(actx, flood.Config{Target: s.AddrInfo(), Manifest: m, Identities: identities, Streams: streams, Attacks: attacks, MaxFilterBytes: lim.MaxFilterBytes}, &st)
	}()
	// Let the attack take hold before the legitimate fetches start.
	time.Sleep(2 * time.Second)
	for i := range 3 {
		t0 := time.Now()
		fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
		sum, err := fetchOnce(t, fctx, tk, src)
		fcancel()
		if err != nil {
			t.Fatalf("fetch %d under attack: %v", i, err)
		}
		d := time.Since(t0)
		t.Logf("fetch %d under attack: %d blocks in %v (%.1fx the time without attack)", i, sum.Fetched, d.Round(time.Millisecond), float64(d)/float64(base))
	}
	stopAttack()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("attack: %d streams opened, %d refused, %d repeated blocks received, %d dials, %d dial errors",
		st.Streams.Load(), st.Refused.Load(), st.Blocks.Load(), st.Dials.Load(), st.DialErrors.Load())
}
