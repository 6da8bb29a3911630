package peer

import (
	"crypto/rand"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

func newKeyID(t testing.TB) lpeer.ID {
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := lpeer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func memStats() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

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
