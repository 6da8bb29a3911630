package serve

import (
	"strings"
	"testing"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
)

// TestShareKey: peers on public addresses share by IPv4 address or IPv6
// /48; on loopback, private networks and through relays, by peer id.
func TestShareKey(t *testing.T) {
	cases := []struct{ addr, want string }{
		{"/ip4/8.8.8.8/tcp/4001", "ip4/8.8.8.8"},
		{"/ip4/8.8.8.8/udp/4001/quic-v1", "ip4/8.8.8.8"},
		{"/ip6/2001:4860:4860:1234:5678::1/tcp/4001", "ip6/2001:4860:4860::"},
		{"/ip4/127.0.0.1/tcp/4001", "peer/P"},
		{"/ip4/192.168.1.5/tcp/4001", "peer/P"},
		{"/ip4/8.8.8.8/tcp/4001/p2p/12D3KooWGRUVh9RR6kN6Xv9Mhq5Lb8DyAhJBJ9sSJUTyPzbsbKyB/p2p-circuit", "peer/P"},
	}
	for _, tc := range cases {
		a, err := ma.NewMultiaddr(tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(tc.want, "peer/P", "peer/"+lpeer.ID("P").String(), 1)
		if got := shareKey(addrConn{id: "P", addr: a}); got != want {
			t.Errorf("%s: %q, want %q", tc.addr, got, want)
		}
	}
}

// addrConn is a connection with only a remote peer and address.
type addrConn struct {
	network.Conn
	id   lpeer.ID
	addr ma.Multiaddr
}

func (c addrConn) RemotePeer() lpeer.ID          { return c.id }
func (c addrConn) RemoteMultiaddr() ma.Multiaddr { return c.addr }
