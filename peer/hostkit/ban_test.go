package hostkit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// bannedSet is a deny-list for SetBanned.
type bannedSet struct {
	mu  sync.Mutex
	ids map[lpeer.ID]bool
}

func (b *bannedSet) ban(id lpeer.ID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ids == nil {
		b.ids = map[lpeer.ID]bool{}
	}
	b.ids[id] = true
}

func (b *bannedSet) has(id lpeer.ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ids[id]
}

// TestBan: a banned peer's connection is closed and its redials refused:
// from an address of its own before the handshake, for AddrBanFor (a new
// identity from there too), and from an address it shares with a peer
// that is not banned after the handshake only, so that the other peer is
// never refused. Peers on other addresses connect all along. Addresses
// are 127.0.0.x, each host dialling from its listen address.
func TestBan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clk := clockwork.NewFakeClock()
	target := newTestHost(t, Config{Clock: clk})
	var deny bannedSet
	target.SetBanned(deny.has)
	on := func(ip string) *Host { return newTestHost(t, Config{Listen: []string{"/ip4/" + ip + "/tcp/0"}}) }
	connect := func(h *Host) error {
		return h.Connect(ctx, lpeer.AddrInfo{ID: target.ID(), Addrs: target.Addrs()})
	}

	evil := on("127.0.0.2")
	if err := connect(evil); err != nil {
		t.Fatal(err)
	}
	if got := target.Network().ConnsToPeer(evil.ID()); len(got) != 1 || got[0].RemoteMultiaddr().String()[:14] != "/ip4/127.0.0.2" {
		t.Fatalf("the attacker's connection: %v (it should come from its listen address)", got)
	}
	deny.ban(evil.ID())
	target.Ban(evil.ID())
	waitFor(t, func() bool { return len(target.Network().ConnsToPeer(evil.ID())) == 0 }, "the banned peer's connection closed")
	evil.Network().ClosePeer(target.ID())
	if err := connect(evil); err == nil {
		t.Fatal("the banned peer connected again")
	}
	again := on("127.0.0.2") // a new identity from the banned address
	if err := connect(again); err == nil {
		t.Fatal("a new identity from the banned address connected")
	}
	if before, _ := target.Refused(); before < 2 {
		t.Fatalf("%d connections refused before the handshake, want 2", before)
	}
	if err := connect(on("127.0.0.3")); err != nil {
		t.Fatalf("a peer on another address: %v", err)
	}
	clk.Advance(AddrBanFor + time.Second)
	if err := connect(on("127.0.0.2")); err != nil {
		t.Fatalf("a new identity from the address after AddrBanFor: %v", err)
	}

	// The host's own address (every peer on this machine has it) is
	// never refused.
	local := on("127.0.0.1")
	if err := connect(local); err != nil {
		t.Fatal(err)
	}
	deny.ban(local.ID())
	target.Ban(local.ID())
	waitFor(t, func() bool { return len(target.Network().ConnsToPeer(local.ID())) == 0 }, "the local peer's connection closed")
	if err := connect(on("127.0.0.1")); err != nil {
		t.Fatalf("a new identity from the host's own address after a ban: %v", err)
	}

	// An address shared with a peer that is not banned is not refused.
	honest, liar := on("127.0.0.4"), on("127.0.0.4")
	for _, h := range []*Host{honest, liar} {
		if err := connect(h); err != nil {
			t.Fatal(err)
		}
	}
	deny.ban(liar.ID())
	target.Ban(liar.ID())
	waitFor(t, func() bool { return len(target.Network().ConnsToPeer(liar.ID())) == 0 }, "the liar's connection closed")
	liar.Network().ClosePeer(target.ID())
	_, after := target.Refused()
	// Refused once authenticated: its dial may see the handshake through
	// before the target closes the connection.
	connect(liar)
	waitFor(t, func() bool { _, a := target.Refused(); return a == after+1 }, "the banned peer on a shared address refused after its handshake")
	if n := len(target.Network().ConnsToPeer(liar.ID())); n != 0 {
		t.Fatalf("the banned peer on a shared address has %d connections", n)
	}
	honest.Network().ClosePeer(target.ID())
	waitFor(t, func() bool { return len(target.Network().ConnsToPeer(honest.ID())) == 0 }, "the honest peer's connection closed")
	if err := connect(honest); err != nil {
		t.Fatalf("the honest peer on the shared address: %v", err)
	}
}

// waitFor polls cond for a few seconds.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestAddrIP: an address is refused by its IP, never for a relayed
// connection (the relay's IP is not the peer's).
func TestAddrIP(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ip   string // "" for none
	}{
		{"/ip4/203.0.113.7/tcp/4001", "203.0.113.7"},
		{"/ip4/203.0.113.7/udp/4001/quic-v1", "203.0.113.7"},
		{"/ip6/2001:db8::1/tcp/4001", "2001:db8::1"},
		{"/ip4/203.0.113.7/tcp/4001/p2p/12D3KooWRBy97UB99e3J6hiPesre1MZeuNQvfan4gBziswrRJsNK/p2p-circuit", ""},
		{"/dns4/example.com/tcp/4001", ""},
	} {
		ip, ok := addrIP(ma.StringCast(tc.addr))
		if got := ""; ok {
			got = ip.String()
			if got != tc.ip {
				t.Errorf("%s: %s, want %q", tc.addr, got, tc.ip)
			}
		} else if tc.ip != "" {
			t.Errorf("%s: no IP, want %s", tc.addr, tc.ip)
		}
	}
}
