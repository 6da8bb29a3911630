package hostkit

import (
	"testing"
	"time"

	ma "github.com/multiformats/go-multiaddr"
)

func TestTCPFirst(t *testing.T) {
	addrs := func(ss ...string) []ma.Multiaddr {
		out := make([]ma.Multiaddr, len(ss))
		for i, s := range ss {
			out[i] = ma.StringCast(s)
		}
		return out
	}
	cases := []struct {
		name  string
		addrs []ma.Multiaddr
		// first is the address dialed first, at once; quicAfter says whether
		// every QUIC address waits for the TCP ones.
		first     string
		quicAfter bool
	}{
		{"tcp and quic", addrs("/ip4/1.2.3.4/udp/4001/quic-v1", "/ip4/1.2.3.4/tcp/4001"), "/ip4/1.2.3.4/tcp/4001", true},
		{"loopback", addrs("/ip4/127.0.0.1/udp/5/quic-v1", "/ip6/::1/udp/5/quic-v1", "/ip4/127.0.0.1/tcp/5", "/ip6/::1/tcp/5"), "/ip6/::1/tcp/5", true},
		{"quic only", addrs("/ip4/1.2.3.4/udp/4001/quic-v1"), "/ip4/1.2.3.4/udp/4001/quic-v1", false},
		{"tcp only", addrs("/ip4/1.2.3.4/tcp/4001", "/ip4/5.6.7.8/tcp/4001"), "/ip4/1.2.3.4/tcp/4001", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := TCPFirst(tc.addrs)
			if len(got) != len(tc.addrs) {
				t.Fatalf("ranked %d of %d addresses: %v", len(got), len(tc.addrs), got)
			}
			if got[0].Addr.String() != tc.first || got[0].Delay != 0 {
				t.Errorf("first dial %v after %v, want %s at once", got[0].Addr, got[0].Delay, tc.first)
			}
			var lastTCP time.Duration
			for _, r := range got {
				if !isQUIC(r.Addr) {
					lastTCP = max(lastTCP, r.Delay)
				}
			}
			for _, r := range got {
				if tc.quicAfter && isQUIC(r.Addr) && r.Delay < lastTCP+quicAfterTCP {
					t.Errorf("%v dialed after %v, before the TCP dials (last %v) had %v", r.Addr, r.Delay, lastTCP, quicAfterTCP)
				}
			}
		})
	}
}

func isQUIC(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_QUIC_V1)
	return err == nil
}
