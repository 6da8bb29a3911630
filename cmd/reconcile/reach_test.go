package main

import (
	"testing"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/peer"
)

func TestTicketRelays(t *testing.T) {
	const relay = "12D3KooWT3RYFPMrYTjEkFRWQBK6uqt5q8gXhhcjWFHQNbjWiBNr"
	self, _ := lpeer.Decode("12D3KooWNEg2yymzcQLMuoKt88DmN2GWu1AU5gVHCTYP2h2SFMDy")
	tk := peer.Ticket{Peers: []peer.AddrInfo{{ID: self, Addrs: []ma.Multiaddr{
		ma.StringCast("/ip4/100.64.1.2/tcp/4001"),
		ma.StringCast("/ip4/198.18.0.1/tcp/4001/p2p/" + relay + "/p2p-circuit"),
		ma.StringCast("/ip4/198.18.0.1/udp/4001/quic-v1/p2p/" + relay + "/p2p-circuit"),
	}}}}
	got := ticketRelays(tk)
	if len(got) != 1 || got[0].ID.String() != relay || len(got[0].Addrs) != 2 {
		t.Fatalf("ticketRelays = %v, want relay %s with its 2 addresses", got, relay)
	}
	if got := ticketRelays(peer.Ticket{Peers: []peer.AddrInfo{{ID: self, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/1.2.3.4/tcp/1")}}}}); len(got) != 0 {
		t.Fatalf("a ticket without relay addresses names relays %v", got)
	}
}

func TestParseRootArgAndLoopback(t *testing.T) {
	if _, ok := parseRootArg("5646a2d583d2ebc23e9c5702658c3720554f7182e39abe8faf13538950775314"); !ok {
		t.Fatal("a root id was not taken for one")
	}
	if _, ok := parseRootArg("bafleniwvqpjoxqr6trlqezmmg4qfkt3rqlrzvpupv4jvhckqo5jribybeyacicab"); ok {
		t.Fatal("a ticket was taken for a root id")
	}
	for _, c := range []struct {
		addrs []string
		want  bool
	}{
		{nil, false},
		{[]string{"/ip4/127.0.0.1/tcp/0"}, true},
		{[]string{"/ip4/127.0.0.1/tcp/0", "/ip6/::1/udp/0/quic-v1"}, true},
		{[]string{"/ip4/127.0.0.1/tcp/0", "/ip4/0.0.0.0/tcp/0"}, false},
	} {
		if got := loopbackOnly(c.addrs); got != c.want {
			t.Errorf("loopbackOnly(%v) = %v, want %v", c.addrs, got, c.want)
		}
	}
}
