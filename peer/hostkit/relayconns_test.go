package hostkit

import (
	"context"
	"net/netip"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"
)

var bothTransports = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}

// transportsTo lists the transports of h's direct connections to id.
func transportsTo(h *Host, id lpeer.ID) []string {
	var out []string
	for _, c := range h.Network().ConnsToPeer(id) {
		if a := c.RemoteMultiaddr(); !IsRelayed(a) {
			out = append(out, TransportOf(a))
		}
	}
	sort.Strings(out)
	return out
}

// TestConnectOver: a host connected to another over TCP opens a second
// connection over QUIC, which the swarm keeps beside the first and
// identify runs on; asked again, it returns the connection it has.
func TestConnectOver(t *testing.T) {
	a := newTestHost(t, Config{Listen: bothTransports})
	b := newTestHost(t, Config{Listen: bothTransports})
	var tcpAddr, quicAddr ma.Multiaddr
	for _, x := range b.Addrs() {
		switch TransportOf(x) {
		case "tcp":
			tcpAddr = x
		case "quic":
			quicAddr = x
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Connect(ctx, lpeer.AddrInfo{ID: b.ID(), Addrs: []ma.Multiaddr{tcpAddr}}); err != nil {
		t.Fatal(err)
	}
	if got := transportsTo(a, b.ID()); !slices.Equal(got, []string{"tcp"}) {
		t.Fatalf("after Connect over TCP: %v", got)
	}
	c, err := a.ConnectOver(ctx, b.ID(), quicAddr)
	if err != nil {
		t.Fatal(err)
	}
	if got := transportsTo(a, b.ID()); !slices.Equal(got, []string{"quic", "tcp"}) {
		t.Fatalf("after ConnectOver QUIC: %v, want both", got)
	}
	s, err := c.NewStream(ctx)
	if err != nil {
		t.Fatalf("a stream on the second connection: %v", err)
	}
	s.Reset()
	again, err := a.ConnectOver(ctx, b.ID(), quicAddr)
	if err != nil || again != c {
		t.Fatalf("ConnectOver again = %v, %v; want the connection it has", again, err)
	}
	waitFor(t, func() bool { return slices.Equal(transportsTo(b, a.ID()), []string{"quic", "tcp"}) }, "b to see both connections")
	if _, err := a.ConnectOver(ctx, b.ID(), ma.StringCast("/ip4/127.0.0.1/tcp/1/p2p/"+b.ID().String()+"/p2p-circuit")); err == nil {
		t.Fatal("ConnectOver a relay address: no error")
	}
}

// TestRelayOverBothTransports: a host that punches holes, having reached a
// relay over TCP, connects to it over QUIC too (after identify), so that
// it learns its observed address on both; ReachRelays does the same before
// a relayed dial, from the circuit address alone. A host that does not
// punch holes keeps one connection.
func TestRelayOverBothTransports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a relay")
	}
	relayHost := newTestHost(t, Config{Listen: bothTransports, Reach: Reach{Reachability: network.ReachabilityPublic}})
	r, err := relayv2.New(relayHost)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var tcpAddr ma.Multiaddr
	for _, x := range relayHost.Addrs() {
		if TransportOf(x) == "tcp" {
			tcpAddr = x
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	punching := newTestHost(t, Config{Listen: bothTransports, Reach: Reach{RelayClient: true, HolePunch: true}})
	if err := punching.Connect(ctx, lpeer.AddrInfo{ID: relayHost.ID(), Addrs: []ma.Multiaddr{tcpAddr}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return slices.Equal(transportsTo(punching, relayHost.ID()), []string{"quic", "tcp"}) }, "a connection to the relay over each transport")

	plain := newTestHost(t, Config{Listen: bothTransports, Reach: Reach{RelayClient: true}})
	if err := plain.Connect(ctx, lpeer.AddrInfo{ID: relayHost.ID(), Addrs: []ma.Multiaddr{tcpAddr}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if got := transportsTo(plain, relayHost.ID()); !slices.Equal(got, []string{"tcp"}) {
		t.Fatalf("a host that does not punch: %v, want tcp only", got)
	}

	fetcher := newTestHost(t, Config{Listen: bothTransports, Reach: Reach{RelayClient: true, HolePunch: true}})
	circuit := tcpAddr.Encapsulate(ma.StringCast("/p2p/" + relayHost.ID().String() + "/p2p-circuit"))
	fetcher.ReachRelays(ctx, lpeer.AddrInfo{ID: plain.ID(), Addrs: []ma.Multiaddr{circuit}})
	if got := transportsTo(fetcher, relayHost.ID()); !slices.Equal(got, []string{"quic", "tcp"}) {
		t.Fatalf("after ReachRelays: %v, want both", got)
	}
}

// TestHelperConnRate: a relay admits a burst of 64 new connections from one
// IPv4 address (go-libp2p's default admits 16), then one a second; another
// address has its own budget, and loopback is not limited.
func TestHelperConnRate(t *testing.T) {
	l := helperConnRate()
	one, other, lo := netip.MustParseAddr("198.18.0.7"), netip.MustParseAddr("198.18.0.8"), netip.MustParseAddr("127.0.0.1")
	for i := range 64 {
		if !l.Allow(one) {
			t.Fatalf("connection %d of a burst refused", i+1)
		}
	}
	if l.Allow(one) {
		t.Fatal("the 65th connection at once admitted")
	}
	if !l.Allow(other) {
		t.Fatal("another address refused")
	}
	for range 1000 {
		if !l.Allow(lo) {
			t.Fatal("loopback limited")
		}
	}
}
