package peer

import (
	"errors"
	"strings"
	"testing"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/reconcile-p2p/reconcile/internal/testkit"
)

// newKeyID is testkit.NewKeyID.
var newKeyID = testkit.NewKeyID

func TestTicketRoundTrip(t *testing.T) {
	var tk Ticket
	copy(tk.Root[:], randomBytes(32))
	tk.Peers = testAddrInfos(t, 2)
	s := tk.String()
	if !strings.HasPrefix(s, "b") || strings.ContainsAny(s, " \n/+=") {
		t.Fatalf("ticket %q is not one copyable base32 token", s)
	}
	got, err := ParseTicket("  " + s + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if got.Root != tk.Root || len(got.Peers) != 2 || got.Peers[1].ID != tk.Peers[1].ID || !got.Peers[0].Addrs[1].Equal(tk.Peers[0].Addrs[1]) {
		t.Fatalf("got %+v, want %+v", got, tk)
	}
	var viaText Ticket
	if err := viaText.UnmarshalText([]byte(s)); err != nil || viaText.Root != tk.Root {
		t.Fatalf("UnmarshalText: %v", err)
	}
}

func TestParseTicketErrors(t *testing.T) {
	var tk Ticket
	tk.Peers = testAddrInfos(t, 1)
	good := tk.String()
	noPeer := Ticket{}.String()
	for name, s := range map[string]string{
		"empty":       "",
		"not base":    "hello world",
		"truncated":   good[:len(good)-5],
		"no peer":     noPeer,
		"too long":    "b" + strings.Repeat("a", maxTicketLen),
		"bad version": "baeaqaaaa",
	} {
		if _, err := ParseTicket(s); !errors.Is(err, ErrBadTicket) {
			t.Errorf("%s: %v, want ErrBadTicket", name, err)
		}
	}
}

// TestTicketErrorText: a mangled ticket gets one plain line that names the
// problem, without internal wire-format wording.
func TestTicketErrorText(t *testing.T) {
	good := Ticket{Peers: testAddrInfos(t, 1)}.String()
	for _, tc := range []struct{ in, want string }{
		{"garbage", "not a ticket token"},
		{good[:60], "cut short or damaged"},
		{good + "a", "cut short or damaged"},
	} {
		_, err := ParseTicket(tc.in)
		if !errors.Is(err, ErrBadTicket) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "malformed") {
			t.Errorf("ParseTicket(%.20q…) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func testAddrInfos(t testing.TB, n int) []lpeer.AddrInfo {
	var out []lpeer.AddrInfo
	for i := range n {
		p := newKeyID(t)
		a := ma.StringCast("/ip4/127.0.0.1/tcp/" + string(rune('1'+i%9)) + "000")
		b := ma.StringCast("/ip6/::1/udp/4001/quic-v1")
		out = append(out, lpeer.AddrInfo{ID: p, Addrs: []ma.Multiaddr{a, b}})
	}
	return out
}

func TestTicketAddrs(t *testing.T) {
	const relay = "/ip4/198.51.100.1/tcp/4001/p2p/12D3KooWGzh9qyUmzcFmXhxBZRVqpr2mCYNNn9kxqxN4vsdGR1Ba/p2p-circuit"
	const relayLoop = "/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWGzh9qyUmzcFmXhxBZRVqpr2mCYNNn9kxqxN4vsdGR1Ba/p2p-circuit"
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		{"empty", nil, nil},
		{"public kept, loopback and link-local dropped",
			[]string{"/ip4/127.0.0.1/tcp/4001", "/ip4/203.0.113.7/tcp/4001", "/ip6/::1/udp/4001/quic-v1", "/ip4/169.254.3.4/tcp/4001", "/ip6/fe80::1/udp/4001/quic-v1", "/ip6zone/eth0/ip6/fe80::1/tcp/4001", "/ip4/203.0.113.7/udp/4001/quic-v1"},
			[]string{"/ip4/203.0.113.7/tcp/4001", "/ip4/203.0.113.7/udp/4001/quic-v1"}},
		{"private addresses stay",
			[]string{"/ip4/127.0.0.1/tcp/4001", "/ip4/10.1.2.3/tcp/4001", "/ip4/192.168.1.5/udp/4001/quic-v1", "/ip4/172.16.0.9/tcp/4001", "/ip4/100.64.1.1/tcp/4001", "/ip6/fd00::5/tcp/4001"},
			[]string{"/ip4/10.1.2.3/tcp/4001", "/ip4/192.168.1.5/udp/4001/quic-v1", "/ip4/172.16.0.9/tcp/4001", "/ip4/100.64.1.1/tcp/4001", "/ip6/fd00::5/tcp/4001"}},
		{"relay stays", []string{"/ip4/127.0.0.1/tcp/4001", "/ip4/203.0.113.7/tcp/4001", relay, relayLoop},
			[]string{"/ip4/203.0.113.7/tcp/4001", relay, relayLoop}},
		{"loopback only: kept", []string{"/ip4/127.0.0.1/tcp/4001", "/ip6/::1/udp/4001/quic-v1"},
			[]string{"/ip4/127.0.0.1/tcp/4001", "/ip6/::1/udp/4001/quic-v1"}},
		{"loopback and link-local only: kept", []string{"/ip4/127.0.0.1/tcp/4001", "/ip4/169.254.3.4/tcp/4001"},
			[]string{"/ip4/127.0.0.1/tcp/4001", "/ip4/169.254.3.4/tcp/4001"}},
		{"loopback and a relay: kept", []string{"/ip4/127.0.0.1/tcp/4001", relay},
			[]string{"/ip4/127.0.0.1/tcp/4001", relay}},
		{"relay only", []string{relay}, []string{relay}},
		{"dns stays", []string{"/ip4/127.0.0.1/tcp/4001", "/dns4/seed.example.com/tcp/4001"}, []string{"/dns4/seed.example.com/tcp/4001"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in []ma.Multiaddr
			for _, s := range tc.in {
				in = append(in, ma.StringCast(s))
			}
			got := TicketAddrs(in)
			var gs []string
			for _, a := range got {
				gs = append(gs, a.String())
			}
			if strings.Join(gs, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("TicketAddrs(%v)\n got %v\nwant %v", tc.in, gs, tc.want)
			}
			if len(got) > 0 && len(in) > 0 && &got[0] == &in[0] {
				t.Fatal("TicketAddrs returned its argument's array")
			}
		})
	}
}

// TestTicketLength checks issue 34's bound: a ticket for a seed with one
// public TCP address, one QUIC address and one relay address (Ed25519 peer
// ids) is under 240 characters.
func TestTicketLength(t *testing.T) {
	var tk Ticket
	copy(tk.Root[:], randomBytes(32))
	tk.Peers = []lpeer.AddrInfo{{ID: newKeyID(t), Addrs: TicketAddrs([]ma.Multiaddr{
		ma.StringCast("/ip4/127.0.0.1/tcp/4001"),
		ma.StringCast("/ip6/::1/udp/4001/quic-v1"),
		ma.StringCast("/ip4/203.0.113.7/tcp/4001"),
		ma.StringCast("/ip4/203.0.113.7/udp/4001/quic-v1"),
		ma.StringCast("/ip4/198.51.100.1/tcp/4001/p2p/" + newKeyID(t).String() + "/p2p-circuit"),
	})}}
	s := tk.String()
	t.Logf("ticket of %d characters: %s", len(s), s)
	if len(tk.Peers[0].Addrs) != 3 || len(s) >= 240 {
		t.Fatalf("ticket of %d addresses, %d characters; want 3 addresses, under 240", len(tk.Peers[0].Addrs), len(s))
	}
}
