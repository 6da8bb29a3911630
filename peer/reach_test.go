package peer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"
	mh "github.com/multiformats/go-multihash"

	"github.com/reconcile-p2p/reconcile/chunker"
)

func TestRootCID(t *testing.T) {
	var root chunker.ID
	for i := range root {
		root[i] = byte(i)
	}
	c := RootCID(root)
	if c.Version() != 1 || c.Type() != 0x55 {
		t.Fatalf("RootCID = %s: version %d codec %#x, want 1 and raw (0x55)", c, c.Version(), c.Type())
	}
	d, err := mh.Decode(c.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if d.Code != mh.BLAKE3 || !bytes.Equal(d.Digest, root[:]) {
		t.Fatalf("multihash code %#x digest %x, want blake3 of the root %x", d.Code, d.Digest, root[:])
	}
}

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

// The relay source sends the static relays first, at most num peers, and
// closes its channel when it has no DHT to look in.
func TestRelaySourceStatic(t *testing.T) {
	ids := []string{
		"12D3KooWNEg2yymzcQLMuoKt88DmN2GWu1AU5gVHCTYP2h2SFMDy",
		"12D3KooWT3RYFPMrYTjEkFRWQBK6uqt5q8gXhhcjWFHQNbjWiBNr",
	}
	var static []AddrInfo
	for _, s := range ids {
		id, err := lpeer.Decode(s)
		if err != nil {
			t.Fatal(err)
		}
		static = append(static, AddrInfo{ID: id, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/198.18.0.1/tcp/4001")}})
	}
	rs := &relaySource{static: static}
	for _, num := range []int{0, 1, 2, 5} {
		var got []AddrInfo
		for ai := range rs.peers(context.Background(), num) {
			got = append(got, ai)
		}
		want := min(num, len(static))
		if len(got) != want {
			t.Fatalf("num %d: got %d peers, want %d", num, len(got), want)
		}
		for i := range got {
			if got[i].ID != static[i].ID {
				t.Fatalf("num %d: peer %d is %s, want %s", num, i, got[i].ID, static[i].ID)
			}
		}
	}
}

// relaysIn keeps the peers that offer the relay hop protocol, with their
// direct addresses only.
func TestRelaysIn(t *testing.T) {
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	relay, _ := lpeer.Decode("12D3KooWNEg2yymzcQLMuoKt88DmN2GWu1AU5gVHCTYP2h2SFMDy")
	other, _ := lpeer.Decode("12D3KooWT3RYFPMrYTjEkFRWQBK6uqt5q8gXhhcjWFHQNbjWiBNr")
	direct := ma.StringCast("/ip4/198.18.0.1/tcp/4001")
	circuit := ma.StringCast("/ip4/198.18.0.9/tcp/4001/p2p/12D3KooWT3RYFPMrYTjEkFRWQBK6uqt5q8gXhhcjWFHQNbjWiBNr/p2p-circuit")
	ps := h.Peerstore()
	ps.AddAddrs(relay, []ma.Multiaddr{direct, circuit}, time.Hour)
	ps.AddAddrs(other, []ma.Multiaddr{direct}, time.Hour)
	if err := ps.AddProtocols(relay, "/libp2p/circuit/relay/0.2.0/hop", "/reconcile/kad/1.0.0"); err != nil {
		t.Fatal(err)
	}
	if err := ps.AddProtocols(other, "/reconcile/kad/1.0.0"); err != nil {
		t.Fatal(err)
	}
	got := relaysIn(h, []lpeer.ID{relay, other, h.ID()})
	if len(got) != 1 || got[0].ID != relay || len(got[0].Addrs) != 1 || !got[0].Addrs[0].Equal(direct) {
		t.Fatalf("relaysIn = %v, want %s at %s only", got, relay, direct)
	}
}

// A host that knows it is not reachable and has no static relay reserves a
// slot on a relay it finds through the DHT (the relay is its bootstrap
// peer, a DHT server offering the hop protocol): a third peer then reaches
// it through that relay, which forwards only to peers holding a slot.
// (AutoRelay advertises public relay addresses only, so on loopback the
// test dials the circuit address itself.)
func TestRelayFromDHT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a relay and a DHT")
	}
	relayPeer := newTestPeer(t, WithReach(Reach{Reachability: network.ReachabilityPublic}), WithDiscovery(Discovery{DHT: DHTServer}))
	r, err := relayv2.New(relayPeer.Host(), relayv2.WithReservationAddressFilter(func(ma.Multiaddr) bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	boot := AddrInfo{ID: relayPeer.ID(), Addrs: relayPeer.Host().Addrs()}
	p := newTestPeer(t,
		WithReach(Reach{RelayClient: true, DHTRelays: true, Reachability: network.ReachabilityPrivate}),
		WithDiscovery(Discovery{DHT: DHTClient, Bootstrap: []AddrInfo{boot}}))
	other := newTestPeer(t, WithReach(Reach{RelayClient: true}))
	circuit := boot.Addrs[0].Encapsulate(ma.StringCast("/p2p/" + relayPeer.ID().String() + "/p2p-circuit"))
	target := AddrInfo{ID: p.ID(), Addrs: []ma.Multiaddr{circuit}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = other.Host().Connect(ctx, target)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection through the relay after 20 s: %v", err)
		}
		if sw, ok := other.Host().Network().(*swarm.Swarm); ok {
			sw.Backoff().Clear(p.ID()) // try again at once, not after the dial backoff
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range other.Host().Network().ConnsToPeer(p.ID()) {
		if !isRelayed(c.RemoteMultiaddr()) {
			t.Fatalf("connected directly (%s), want through the relay", c.RemoteMultiaddr())
		}
	}
}
