package peer

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	relayclient "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"
)

// TestPreferDirectSource: a fetcher that reaches one seed through a relay
// only and another directly, both holding every block, takes the blocks
// from the direct one: nothing crosses the relay, and the summary names the
// relayed peer's path, relay and transport.
func TestPreferDirectSource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	relayHost := startRelay(t, relayv2.WithInfiniteLimits())
	var err error

	src := writeRandomFile(t, dir, "data.bin", 1<<20, 3)
	behind := newTestPeer(t, WithReach(Reach{RelayClient: true}))
	direct := newTestPeer(t)
	var tk Ticket
	for _, s := range []*Peer{behind, direct} {
		if tk, err = s.Seed(ctx, src, WithBlockSize(32<<10)); err != nil {
			t.Fatal(err)
		}
	}
	circuit := reserveOn(ctx, t, behind, relayHost)
	fetcher := newTestPeer(t, WithReach(Reach{RelayClient: true}))
	tk.Peers = nil
	sum, err := fetcher.Fetch(ctx, tk, dir+"/out", WithPeers(circuit), WithPeers(direct.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	var sawRelayed bool
	for _, ps := range sum.Peers {
		t.Logf("%s: %d blocks, path %q, relay %q, transport %q", ps.Peer, ps.Blocks, ps.Path, ps.Relay, ps.Transport)
		if ps.Peer == behind.ID().String() {
			sawRelayed = true
			if ps.Path != "relayed" || ps.Relay != relayHost.ID().String() || ps.Transport != "tcp" {
				t.Errorf("the relayed seed's share: %+v", ps)
			}
		}
	}
	if !sawRelayed {
		t.Error("the relayed seed is not among the fetch's peers")
	}
	if sum.RelayedBytes != 0 {
		t.Errorf("%d bytes came through the relay although the direct seed offered every block", sum.RelayedBytes)
	}
}

// TestMoveToDirect: a fetch that began through a relay (no hole punching
// here) moves onto a direct connection that opens while it runs: the
// blocks stream over the relay closes once its blocks have come, and the
// rest come directly, so the relay carries a part of the file only.
func TestMoveToDirect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	dir := t.TempDir()
	relayHost := startRelay(t, relayv2.WithInfiniteLimits())
	const size = 1 << 20
	src := writeRandomFile(t, dir, "data.bin", size, 5)
	// 32 blocks at 256 KiB/s: 4 s, for the direct connection to open midway.
	behind := newTestPeer(t, WithReach(Reach{RelayClient: true}), WithServeRate(256<<10))
	tk, err := behind.Seed(ctx, src, WithBlockSize(32<<10))
	if err != nil {
		t.Fatal(err)
	}
	circuit := reserveOn(ctx, t, behind, relayHost)
	fetcher := newTestPeer(t, WithReach(Reach{RelayClient: true}))
	tk.Peers = nil
	direct := make(chan struct{})
	var once sync.Once
	opened := make(chan error, 1)
	sum, err := fetcher.Fetch(ctx, tk, dir+"/out", WithPeers(circuit), WithProgress(func(p Progress) {
		once.Do(func() {
			go func() {
				err := fetcher.Host().Connect(network.WithForceDirectDial(ctx, "test"), lpeer.AddrInfo{ID: behind.ID(), Addrs: behind.Addrs()})
				close(direct)
				opened <- err
			}()
		})
	}))
	if err != nil {
		t.Fatal(err)
	}
	<-direct
	if err := <-opened; err != nil {
		t.Fatalf("direct connection: %v", err)
	}
	t.Logf("relayed %d of %d bytes", sum.RelayedBytes, size)
	if sum.RelayedBytes == 0 {
		t.Fatal("no block came through the relay: the fetch did not begin relayed")
	}
	if sum.RelayedBytes > size*3/4 {
		t.Errorf("%d of %d bytes came through the relay after a direct connection opened in the first quarter", sum.RelayedBytes, size)
	}
	if got := fetcher.Host().Network().ConnsToPeer(behind.ID()); len(got) == 0 {
		t.Error("no connection to the seed at the end")
	}
}

// TestRelayLimitExplained: a fetch whose only source is reached through a
// relay whose connections carry less than a block fails, and its error says
// the peer was reached only through that relay, that no block came through
// it, why and what to do. (With libp2p's default of 128 KiB, a fetch
// completes, slowly: each new relayed connection carries 128 KiB more.)
func TestRelayLimitExplained(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	dir := t.TempDir()
	// A relay whose connections carry 16 KiB, less than a block: every
	// relayed connection closes before a block is through.
	res := relayv2.DefaultResources()
	res.Limit.Data = 16 << 10
	relayHost := startRelay(t, relayv2.WithResources(res))
	src := writeRandomFile(t, dir, "data.bin", 1<<20, 4)
	tk, circuit := seedBehindRelay(ctx, t, relayHost, src, WithBlockSize(32<<10))
	_, err := newTestPeer(t, WithReach(Reach{RelayClient: true})).Fetch(ctx, tk, dir+"/out", WithPeers(circuit), WithNoPeerTimeout(2*time.Second))
	if err == nil {
		t.Fatal("a fetch through a relay of 16 KiB per connection succeeded")
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"reached only through relay " + relayHost.ID().String()[:6], "no block came through the relay", "relays cap what a connection carries", "reconcile relay"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
}

// seedBehindRelay seeds src with opts from a peer behind a NAT, reached
// only through relay r (it listens on nothing else): the ticket, naming
// no address, and its circuit address.
func seedBehindRelay(ctx context.Context, t *testing.T, r host.Host, src string, opts ...SeedOption) (Ticket, ma.Multiaddr) {
	t.Helper()
	behind := newTestPeer(t, WithReach(Reach{RelayClient: true}))
	tk, err := behind.Seed(ctx, src, opts...)
	if err != nil {
		t.Fatal(err)
	}
	circuit := reserveOn(ctx, t, behind, r)
	// Behind a NAT: nothing dials it directly.
	for _, a := range behind.Host().Network().ListenAddresses() {
		if _, err := a.ValueForProtocol(ma.P_CIRCUIT); err != nil {
			behind.Host().Network().(*swarm.Swarm).ListenClose(a)
		}
	}
	tk.Peers = nil
	return tk, circuit
}

// reserveOn has p reserve a slot on relay r and returns p's circuit address
// through it.
func reserveOn(ctx context.Context, t *testing.T, p *Peer, r host.Host) ma.Multiaddr {
	t.Helper()
	info := lpeer.AddrInfo{ID: r.ID(), Addrs: r.Addrs()}
	if err := p.Host().Connect(ctx, info); err != nil {
		t.Fatal(err)
	}
	if _, err := relayclient.Reserve(ctx, p.Host(), info); err != nil {
		t.Fatal(err)
	}
	return r.Addrs()[0].Encapsulate(ma.StringCast("/p2p/" + r.ID().String() + "/p2p-circuit/p2p/" + p.ID().String()))
}

// startRelay starts a circuit relay v2 on loopback with opts (it takes
// reservations from loopback peers), stopped at the end of the test.
func startRelay(t *testing.T, opts ...relayv2.Option) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	r, err := relayv2.New(h, append(opts, relayv2.WithReservationAddressFilter(func(ma.Multiaddr) bool { return true }))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return h
}

// TestRelayedNoJoin: a fetch that reaches a placing seed (WithTrees) only
// through a relay does not join its trees, even with WithJoinNear: it
// pulls every block, and completes byte-identical.
func TestRelayedNoJoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	dir := t.TempDir()
	relayHost := startRelay(t, relayv2.WithInfiniteLimits())
	src := writeRandomFile(t, dir, "data.bin", 512<<10, 5)
	tk, circuit := seedBehindRelay(ctx, t, relayHost, src, WithBlockSize(32<<10), WithTrees(2))
	sum, err := newTestPeer(t, WithReach(Reach{RelayClient: true})).Fetch(ctx, tk, dir+"/out", WithPeers(circuit), WithJoinNear())
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, dir+"/out/data.bin")
	if sum.Pushed != 0 || sum.RelayedBytes == 0 {
		t.Errorf("through the relay: %d blocks pushed (want 0), %d bytes relayed", sum.Pushed, sum.RelayedBytes)
	}
}
