package hostkit

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"
)

// TestRelayDialRanker: a known relay's QUIC addresses are dialed first, its
// TCP ones after; other peers' the other way round (TCPFirst).
func TestRelayDialRanker(t *testing.T) {
	relay := []ma.Multiaddr{ma.StringCast("/ip4/198.18.0.1/tcp/4002"), ma.StringCast("/ip4/198.18.0.1/udp/4002/quic-v1")}
	other := []ma.Multiaddr{ma.StringCast("/ip4/198.18.0.9/tcp/1"), ma.StringCast("/ip4/198.18.0.9/udp/1/quic-v1")}
	var d relayDials
	id, _ := lpeer.Decode("12D3KooWNEg2yymzcQLMuoKt88DmN2GWu1AU5gVHCTYP2h2SFMDy")
	d.add(lpeer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{relay[0].Encapsulate(ma.StringCast("/p2p/" + id.String())), relay[1]}})
	rank := d.ranker(TCPFirst)
	first := func(rs []network.AddrDelay) string {
		best := rs[0]
		for _, r := range rs {
			if r.Delay < best.Delay {
				best = r
			}
		}
		return TransportOf(best.Addr)
	}
	if got := first(rank(slices.Clone(relay))); got != "quic" {
		t.Fatalf("a relay is dialed over %s first, want quic", got)
	}
	if got := first(rank(slices.Clone(other))); got != "tcp" {
		t.Fatalf("another peer is dialed over %s first, want tcp", got)
	}
}

// TestRelayReachedOverQUIC: a host behind NAT with a static relay that
// listens on TCP and QUIC reaches it over QUIC, so that it learns the
// address its NAT gives it for QUIC.
func TestRelayReachedOverQUIC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a relay")
	}
	rh, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer rh.Close()
	r, err := relayv2.New(rh, relayv2.WithReservationAddressFilter(func(ma.Multiaddr) bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := newTestHost(t, Config{Listen: []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"},
		Reach: Reach{RelayClient: true, Reachability: network.ReachabilityPrivate, Relays: []lpeer.AddrInfo{{ID: rh.ID(), Addrs: rh.Addrs()}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		var got []string
		for _, c := range h.Network().ConnsToPeer(rh.ID()) {
			got = append(got, TransportOf(c.RemoteMultiaddr()))
		}
		if slices.Contains(got, "quic") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("connections to the relay over %v, want quic", got)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
