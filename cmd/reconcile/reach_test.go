package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
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

// TestReserveProblem: a relay that runs no relay service is named, with
// libp2p's reason, and one that gives a slot is no problem.
func TestReserveProblem(t *testing.T) {
	ctx := context.Background()
	p, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"), peer.WithReach(peer.Reach{RelayClient: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	norelay, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer norelay.Close()
	why := reserveProblem(ctx, p, []lpeer.AddrInfo{{ID: norelay.ID(), Addrs: norelay.Addrs()}})
	if !strings.Contains(why, shortID(norelay.ID().String())) || strings.Contains(why, "\n") {
		t.Fatalf("a host with no relay service: %q", why)
	}
	relayHost, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer relayHost.Close()
	r, err := relayv2.New(relayHost, relayv2.WithReservationAddressFilter(func(ma.Multiaddr) bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if why := reserveProblem(ctx, p, []lpeer.AddrInfo{{ID: relayHost.ID(), Addrs: relayHost.Addrs()}}); why != "" {
		t.Fatalf("a relay that gives slots: %q", why)
	}
}

// TestSeedPrivateRelayWarns: a seed given a relay at a private address
// says at once that the ticket will carry no relay address.
func TestSeedPrivateRelayWarns(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "f.bin")
	if err := os.WriteFile(src, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, e2eBinary(t), "seed", src, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-dht", "--no-mdns", "--relay", "/ip4/127.0.0.1/tcp/9/p2p/12D3KooWM5VxzGiP6FhEohELVZGFX8snPRY2ZVYyTipqdcfbjyDn")
	cmd.Stderr = &buf
	cmd.Run() // killed at the deadline: a seed runs until interrupted
	stderr := buf.String()
	if !strings.Contains(stderr, "is at a private address") || !strings.Contains(stderr, "ticket will carry none") {
		t.Fatalf("stderr: %q", stderr)
	}
}

// TestLookupProgress: fetch ROOT's lookup is shown from its first second,
// then every 5 s, and a DHT that knows no peer is said so, with the fix.
func TestLookupProgress(t *testing.T) {
	pr, buf, _ := newTestProgress(cliutil.ProgressPlain)
	show := lookupProgress(pr, "0123456789abcdef", true)
	show(peer.Lookup{Seconds: 0.2})
	show(peer.Lookup{Asked: 3, Known: 5, Seconds: 1.1})
	show(peer.Lookup{Asked: 4, Known: 5, Seconds: 2})
	show(peer.Lookup{Asked: 9, Known: 0, Found: 1, Seconds: 6.3})
	got := buf.String()
	want := "fetch: looking for peers that have 0123456789abcdef…: 3 DHT peers asked, 0 providers found, 1 s\n" +
		"fetch: looking for peers that have 0123456789abcdef…: 9 DHT peers asked, 1 provider found, 6 s (the DHT knows no peer: give --bootstrap ADDR of a reconcile relay, or the ticket)\n"
	if got != want {
		t.Fatalf("plain lines:\n%q\nwant\n%q", got, want)
	}
	// A fetch with a ticket whose peers are gone: no hint to give one.
	pr, buf, _ = newTestProgress(cliutil.ProgressPlain)
	show = lookupProgress(pr, "0123456789abcdef", false)
	show(peer.Lookup{Asked: 0, Known: 0, Seconds: 2.5})
	if got, want := buf.String(), "fetch: looking for peers that have 0123456789abcdef…: 0 DHT peers asked, 0 providers found, 2 s (the DHT knows no peer: give --bootstrap ADDR of a reconcile relay)\n"; got != want {
		t.Fatalf("plain line:\n%q\nwant\n%q", got, want)
	}
}
