package hostkit

import (
	"bytes"
	"context"
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

// The relay source sends the static relays first, at most num peers, and
// closes its channel when it has no DHT to look in.
func TestRelaySourceStatic(t *testing.T) {
	ids := []string{
		"12D3KooWNEg2yymzcQLMuoKt88DmN2GWu1AU5gVHCTYP2h2SFMDy",
		"12D3KooWT3RYFPMrYTjEkFRWQBK6uqt5q8gXhhcjWFHQNbjWiBNr",
	}
	var static []lpeer.AddrInfo
	for _, s := range ids {
		id, err := lpeer.Decode(s)
		if err != nil {
			t.Fatal(err)
		}
		static = append(static, lpeer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/198.18.0.1/tcp/4001")}})
	}
	rs := &relaySource{static: static}
	for _, num := range []int{0, 1, 2, 5} {
		var got []lpeer.AddrInfo
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
// peer, a DHT server offering the hop protocol): a third host then reaches
// it through that relay, which forwards only to hosts holding a slot, and
// both see the path as relayed. (AutoRelay advertises public relay
// addresses only, so on loopback the test dials the circuit address
// itself.)
func TestRelayFromDHT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a relay and a DHT")
	}
	relayHost := newTestHost(t, Config{Reach: Reach{Reachability: network.ReachabilityPublic}, Discovery: Discovery{DHT: DHTServer}})
	r, err := relayv2.New(relayHost, relayv2.WithReservationAddressFilter(func(ma.Multiaddr) bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	boot := lpeer.AddrInfo{ID: relayHost.ID(), Addrs: relayHost.Addrs()}
	p := newTestHost(t, Config{
		Reach:     Reach{RelayClient: true, DHTRelays: true, Reachability: network.ReachabilityPrivate},
		Discovery: Discovery{DHT: DHTClient, Bootstrap: []lpeer.AddrInfo{boot}}})
	other := newTestHost(t, Config{Reach: Reach{RelayClient: true}})
	circuit := boot.Addrs[0].Encapsulate(ma.StringCast("/p2p/" + relayHost.ID().String() + "/p2p-circuit"))
	target := lpeer.AddrInfo{ID: p.ID(), Addrs: []ma.Multiaddr{circuit}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = other.Connect(ctx, target)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection through the relay after 20 s: %v", err)
		}
		if sw, ok := other.Network().(*swarm.Swarm); ok {
			sw.Backoff().Clear(p.ID()) // try again at once, not after the dial backoff
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range other.Network().ConnsToPeer(p.ID()) {
		if !IsRelayed(c.RemoteMultiaddr()) {
			t.Fatalf("connected directly (%s), want through the relay", c.RemoteMultiaddr())
		}
	}
	if got := other.Path(p.ID()); got != PathRelayed {
		t.Fatalf("Path = %q, want %q", got, PathRelayed)
	}
	if got := PathOf(other.Network(), p.ID()); got != PathRelayed {
		t.Fatalf("PathOf = %q, want %q", got, PathRelayed)
	}
}
