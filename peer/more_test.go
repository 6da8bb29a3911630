package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestByers: the baseline over the network: a seed serving coded blocks, two
// fetchers reconciling Bloom filters of coded blocks and decoding.
func TestByers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	src := writeRandomFile(t, dir, "data.bin", 1<<20+5000, 9)
	seed := newTestPeer(t)
	tk, err := seed.Seed(ctx, src, WithBlockSize(16<<10), WithByers(ByersParams{K: 16, N: 32}))
	if err != nil {
		t.Fatal(err)
	}
	a, b := newTestPeer(t), newTestPeer(t)
	type res struct {
		s   *Summary
		err error
	}
	ch := make(chan res, 2)
	for i, p := range []*Peer{a, b} {
		other := []*Peer{b, a}[i]
		go func() {
			s, err := p.Fetch(ctx, tk, filepath.Join(dir, p.ID().String()), WithMethod(reconcile.Byers), WithPeers(other.Addrs()...))
			ch <- res{s, err}
		}()
	}
	for range 2 {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.s.Method != "byers" || r.s.Fetched != r.s.Blocks {
			t.Errorf("summary %+v", r.s)
		}
	}
	for _, p := range []*Peer{a, b} {
		sameFile(t, src, filepath.Join(dir, p.ID().String(), "data.bin"))
	}
	// A seed without coded blocks cannot serve the baseline.
	plain := newTestPeer(t)
	tk2, err := plain.Seed(ctx, src, WithBlockSize(32<<10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTestPeer(t).Fetch(ctx, tk2, filepath.Join(dir, "x"), WithMethod(reconcile.Byers)); !errors.Is(err, ErrNoPeers) {
		t.Fatalf("byers from a plain seed: %v", err)
	}
}

// TestDiscovery: fetchers given only the seed's ticket find each other through
// the peers protocol and send each other blocks.
func TestDiscovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, tk, src := seedFile(t, dir, 1<<20, 16<<10, WithServeRate(1<<20))
	fetchers := []*Peer{newTestPeer(t), newTestPeer(t), newTestPeer(t)}
	ch := make(chan *Summary, len(fetchers))
	errs := make(chan error, len(fetchers))
	for _, p := range fetchers {
		go func() {
			s, err := p.Fetch(ctx, tk, filepath.Join(dir, p.ID().String()))
			ch <- s
			errs <- err
		}()
	}
	fromPeers := 0
	for range fetchers {
		s := <-ch
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		for _, ps := range s.Peers {
			if ps.Peer != tk.Peers[0].ID.String() {
				fromPeers += ps.Blocks
			}
		}
	}
	for _, p := range fetchers {
		sameFile(t, src, filepath.Join(dir, p.ID().String(), "data.bin"))
	}
	if fromPeers == 0 {
		t.Fatal("no fetcher got a block from another fetcher")
	}
	t.Logf("%d blocks came from fetchers", fromPeers)
}

// TestManifestMismatch: a peer that sends a manifest not matching the root is
// refused, and an output folder holding other content is not touched.
func TestManifestMismatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, _ := seedFile(t, dir, 100<<10, 16<<10)
	other := writeRandomFile(t, dir, "other.bin", 50<<10, 5)
	otk, err := seed.Seed(ctx, other, WithBlockSize(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	otherManifest, _ := seed.lib.Lookup(otk.Root[:]).Man.MarshalBinary()
	lie := func(s network.Stream) {
		defer s.Close()
		bw := bufio.NewWriter(s)
		fr := wire.NewReader(s)
		fr.Next(serve.HelloMax)
		wire.WriteFrame(bw, []byte{wire.TypeManifest}, otherManifest)
		bw.Flush()
	}
	// Asked whole or as a delta (an output holding an older version), the
	// manifest is the other content's.
	seed.Host().SetStreamHandler(ProtoManifest, lie)
	seed.Host().SetStreamHandler(ProtoManifestDelta, lie)
	if _, err := newTestPeer(t).Fetch(ctx, tk, filepath.Join(dir, "o1")); !errors.Is(err, ErrManifestMismatch) {
		t.Fatalf("wrong manifest: %v", err)
	}
	// An output holding other content.
	prefill(t, other, seed.lib.Lookup(otk.Root[:]).Man, filepath.Join(dir, "o2"), func(int) bool { return true })
	if _, err := newTestPeer(t).Fetch(ctx, tk, filepath.Join(dir, "o2")); !errors.Is(err, ErrManifestMismatch) {
		t.Fatalf("output of other content: %v", err)
	}
}

// TestNoPeer: a ticket whose peers are all unreachable fails with ErrNoPeers.
func TestNoPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	gone := newTestPeer(t)
	tk, err := gone.Seed(ctx, writeRandomFile(t, dir, "f", 10<<10, 1))
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	if _, err := newTestPeer(t).Fetch(ctx, tk, filepath.Join(dir, "o")); !errors.Is(err, ErrNoPeers) {
		t.Fatalf("got %v, want ErrNoPeers", err)
	}
}

// TestPeersLackBlocks: when the only peer holds part of the content, the
// fetch stores that part and then fails with ErrNoPeers, keeping it.
func TestPeersLackBlocks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, src := seedFile(t, dir, 256<<10, 16<<10)
	m := seed.lib.Lookup(tk.Root[:]).Man
	half := filepath.Join(dir, "half")
	prefill(t, src, m, half, func(i int) bool { return i%2 == 0 })
	seed.Close()
	p := newTestPeer(t)
	st, err := openStoreForTest(half)
	if err != nil {
		t.Fatal(err)
	}
	tk2, err := p.Serve(st)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := newTestPeer(t).Fetch(ctx, tk2, filepath.Join(dir, "out"), WithNoPeerTimeout(500*time.Millisecond))
	if !errors.Is(err, ErrNoPeers) {
		t.Fatalf("got %v, want ErrNoPeers", err)
	}
	if sum == nil || sum.Fetched != (m.BlockCount()+1)/2 {
		t.Fatalf("summary %+v", sum)
	}
}

// TestQUIC: seed and fetch over QUIC only.
func TestQUIC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	quic := WithListenAddrs("/ip4/127.0.0.1/udp/0/quic-v1")
	_, tk, src := seedFile(t, dir, 300<<10, 16<<10, quic)
	for _, ai := range tk.Peers {
		for _, a := range ai.Addrs {
			if !strings.Contains(a.String(), "quic-v1") {
				t.Fatalf("seed listens on %s", a)
			}
		}
	}
	if _, err := newTestPeer(t, quic).Fetch(ctx, tk, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, filepath.Join(dir, "out", "data.bin"))
}

// TestUnserve: content stops being served after Unserve.
func TestUnserve(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, _ := seedFile(t, dir, 64<<10, 16<<10)
	if ok, err := seed.Unserve(tk.Root); !ok || err != nil {
		t.Fatalf("Unserve: %v %v", ok, err)
	}
	if ok, _ := seed.Unserve(tk.Root); ok {
		t.Fatal("second Unserve found the content")
	}
	if _, err := newTestPeer(t).Fetch(ctx, tk, filepath.Join(dir, "out")); !errors.Is(err, ErrNoPeers) {
		t.Fatalf("fetch of unserved content: %v", err)
	}
}

// TestServeBytes: a seed whose serving budget fits one block (or less) still
// serves several fetchers at once, and gives its whole budget back.
func TestServeBytes(t *testing.T) {
	for _, budget := range []int{20 << 10, 1000} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dir := t.TempDir()
		seed, tk, src := seedFile(t, dir, 1<<20, 16<<10, WithLimits(Limits{ServeBytes: budget}))
		var wg sync.WaitGroup
		for j := range 3 {
			out := filepath.Join(dir, fmt.Sprint("out", j))
			f := newTestPeer(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := f.Fetch(ctx, tk, out); err != nil {
					t.Error(err)
					return
				}
				sameFile(t, src, filepath.Join(out, "data.bin"))
			}()
		}
		wg.Wait()
		if n := seed.srv.ServeBytesHeld(); n != 0 {
			t.Errorf("budget %d: not all of it was given back", budget)
		}
	}
}

// TestFetchOptionsChecked: a fetch option with a value that cannot work fails
// Fetch up front.
func TestFetchOptionsChecked(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := newTestPeer(t).Fetch(context.Background(), Ticket{}, t.TempDir(), WithNoPeerTimeout(d)); err == nil || !strings.Contains(err.Error(), "WithNoPeerTimeout") {
			t.Errorf("WithNoPeerTimeout(%v): %v", d, err)
		}
	}
}
