package swarm

import (
	"testing"

	ma "github.com/multiformats/go-multiaddr"
)

// TestNearAddr: loopback, private and link-local addresses are near (a
// fetch there pulls rather than join a seed's trees); public ones, the
// testnet's mock addresses and a relayed address through a public relay
// are not. Addresses are only parsed.
func TestNearAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		near bool
	}{
		{"/ip4/127.0.0.1/tcp/4001", true},
		{"/ip6/::1/udp/4001/quic-v1", true},
		{"/ip4/10.1.2.3/tcp/4001", true},
		{"/ip4/192.168.1.20/udp/4001/quic-v1", true},
		{"/ip4/172.16.5.4/tcp/4001", true},
		{"/ip4/100.64.0.7/tcp/4001", true},
		{"/ip6/fe80::1/tcp/4001", true},
		{"/ip6/fd00::7/tcp/4001", true},
		{"/ip4/198.51.100.7/tcp/4001", false}, // documentation range: public to manet
		{"/ip4/203.0.113.9/udp/4001/quic-v1", false},
		{"/ip6/2001:db8::1/tcp/4001", false},
		{"/ip6/100::1/tcp/4242", false}, // mocknet's (the testnet's)
		{"/ip4/203.0.113.9/tcp/4001/p2p/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN/p2p-circuit", false},
	} {
		a, err := ma.NewMultiaddr(tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := NearAddr(a); got != tc.near {
			t.Errorf("NearAddr(%s) = %v, want %v", tc.addr, got, tc.near)
		}
	}
	if NearAddr(nil) {
		t.Error("NearAddr(nil) = true")
	}
}
