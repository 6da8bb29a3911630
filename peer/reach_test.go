package peer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// A ticket carries relay addresses as it carries any other multiaddr.
func TestTicketRelayAddrs(t *testing.T) {
	self, err := lpeer.Decode("12D3KooWNEg2yymzcQLMuoKt88DmN2GWu1AU5gVHCTYP2h2SFMDy")
	if err != nil {
		t.Fatal(err)
	}
	relayed := ma.StringCast("/ip4/198.18.0.1/tcp/4001/p2p/12D3KooWT3RYFPMrYTjEkFRWQBK6uqt5q8gXhhcjWFHQNbjWiBNr/p2p-circuit")
	direct := ma.StringCast("/ip4/100.64.1.2/tcp/4001")
	tk := Ticket{Peers: []AddrInfo{{ID: self, Addrs: []ma.Multiaddr{direct, relayed}}}}
	got, err := ParseTicket(tk.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Peers) != 1 || len(got.Peers[0].Addrs) != 2 || !got.Peers[0].Addrs[1].Equal(relayed) {
		t.Fatalf("round trip: %v, want %v", got.Peers, tk.Peers)
	}
}

func TestReachOptions(t *testing.T) {
	_, err := New(context.Background(), WithReach(Reach{HolePunch: true}))
	if err == nil {
		t.Fatal("hole punching without the relay client: no error")
	}
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := NewService(h, WithDiscovery(Discovery{DHT: DHTClient})); err == nil {
		t.Fatal("NewService took WithDiscovery, which shapes the host")
	}
	if _, err := New(context.Background(), WithDiscovery(Discovery{Reannounce: -time.Second})); err == nil {
		t.Fatal("negative re-announce period: no error")
	}
}

// A fetcher given the root id alone finds the seed through the private DHT
// (both on loopback) and the summary says the path was direct.
func TestFetchRootThroughDHT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two DHT nodes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f.bin")
	data := bytes.Repeat([]byte("provider records\n"), 40000)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	seed := newTestPeer(t, WithReach(Reach{}), WithDiscovery(Discovery{DHT: DHTServer}))
	boot := AddrInfo{ID: seed.ID(), Addrs: seed.Host().Addrs()}
	tk, err := seed.Seed(ctx, file, WithBlockSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	fetcher := newTestPeer(t, WithDiscovery(Discovery{DHT: DHTServer, Bootstrap: []AddrInfo{boot}}))
	var sum *Summary
	for {
		sum, err = fetcher.FetchRoot(ctx, tk.Root, filepath.Join(dir, "out"))
		if !errors.Is(err, ErrNoPeers) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "out", "f.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("output differs (%v)", err)
	}
	if len(sum.Peers) != 1 || sum.Peers[0].Path != PathDirect {
		t.Fatalf("peers %+v, want the seed over a direct path", sum.Peers)
	}
}

// A fetch whose ticket names a seed that has left looks the root up and
// fetches from a fetcher that went on seeding it (its provider record came
// through the DHT while the seed was up).
func TestFetchTicketSeedGone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three DHT nodes and waits out the dials of a closed seed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	file := writeRandomFile(t, dir, "f.bin", 256<<10, 11)
	seed := newTestPeer(t, WithReach(Reach{}), WithDiscovery(Discovery{DHT: DHTServer}))
	boot := []AddrInfo{{ID: seed.ID(), Addrs: seed.Host().Addrs()}}
	tk, err := seed.Seed(ctx, file, WithBlockSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	first := newTestPeer(t, WithDiscovery(Discovery{DHT: DHTServer, Bootstrap: boot}))
	late := newTestPeer(t, WithDiscovery(Discovery{DHT: DHTServer, Bootstrap: boot}))
	if _, err := first.Fetch(ctx, tk, filepath.Join(dir, "first")); err != nil {
		t.Fatal(err)
	}
	// Wait for first's provider record to reach late (first serves what it
	// fetched and announces it).
	for {
		infos, err := late.FindProviders(ctx, tk.Root, 2*time.Second)
		if ctx.Err() != nil {
			t.Fatalf("first's record never came: %v", err)
		}
		if slices.ContainsFunc(infos, func(ai AddrInfo) bool { return ai.ID == first.ID() }) {
			break
		}
	}
	// Once the seed is gone, first is the only node late's DHT can ask: wait
	// for late's routing table to hold it (on a loaded machine the refresh
	// that adds it came after the seed had closed, and the lookup then had
	// nobody to ask).
	for late.DHT().RoutingTable().Find(first.ID()) == "" {
		select {
		case <-late.DHT().ForceRefresh():
		case <-ctx.Done():
			t.Fatal("late's DHT never learned of first")
		}
	}
	seed.Close()
	start := time.Now()
	sum, err := late.Fetch(ctx, tk, filepath.Join(dir, "late"))
	t.Logf("fetched in %v", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, file, filepath.Join(dir, "late", "f.bin"))
	// The seed may be listed too (dropped, unreachable) when the fetch
	// began while its connection was still open; every block came from
	// the first fetcher.
	for _, ps := range sum.Peers {
		if (ps.Peer == first.ID().String()) != (ps.Blocks == sum.Blocks) {
			t.Fatalf("peers %+v, want every block from the first fetcher", sum.Peers)
		}
	}
}
