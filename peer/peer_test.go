package peer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/internal/testkit"
)

// newTestPeer starts a peer on loopback TCP and closes it at the end of the test.
func newTestPeer(t testing.TB, opts ...Option) *Peer {
	t.Helper()
	opts = append([]Option{WithListenAddrs("/ip4/127.0.0.1/tcp/0"), WithStallTimeout(2 * time.Second)}, opts...)
	p, err := New(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// connectedPeer returns a new test peer already connected to p (the
// hostile tests' attacker).
func connectedPeer(ctx context.Context, t testing.TB, p *Peer) *Peer {
	t.Helper()
	q := newTestPeer(t)
	if err := q.Host().Connect(ctx, p.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	return q
}

// writeRandomFile is testkit.WriteRandomFile.
var writeRandomFile = testkit.WriteRandomFile

// sameFile fails the test unless the two files are identical.
func sameFile(t testing.TB, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Fatalf("%s and %s differ (%d and %d bytes)", a, b, len(x), len(y))
	}
}

func TestSeedFetch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	src := writeRandomFile(t, dir, "data.bin", 1<<20+123, 1)
	seed := newTestPeer(t)
	tk, err := seed.Seed(ctx, src, WithBlockSize(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	tk2, err := ParseTicket(tk.String())
	if err != nil {
		t.Fatal(err)
	}
	fetcher := newTestPeer(t)
	var last Progress
	out := filepath.Join(dir, "out")
	sum, err := fetcher.Fetch(ctx, tk2, out, WithProgress(func(p Progress) { last = p }))
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
	if sum.Fetched != sum.Blocks || sum.Redundant != 0 || sum.Rejected != 0 {
		t.Errorf("summary %+v", sum)
	}
	if last.Blocks != sum.Blocks || last.Bytes != sum.Bytes {
		t.Errorf("last progress %+v, summary %+v", last, sum)
	}
	if sum.FilterBytes == 0 || len(sum.Peers) != 1 || sum.Peers[0].Blocks != sum.Blocks {
		t.Errorf("summary peers %+v filter %d", sum.Peers, sum.FilterBytes)
	}
	_ = chunker.MetaDir
}
