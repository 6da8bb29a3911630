package main

// Reachability (relay, hole punching, AutoNAT, port mapping) and discovery
// (DHT, mDNS) flags of seed and fetch, and `reconcile fetch ROOT`.

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	relayclient "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
)

// netFlags are the reachability and discovery flags of seed and fetch, in
// the network category of their help.
func netFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "relay", Category: categoryNetwork, Usage: "reserve a slot on relay `ADDR` when behind NAT (repeatable)"},
		&cli.StringSliceFlag{Name: "bootstrap", Category: categoryNetwork, Usage: "join the DHT through peer `ADDR` (repeatable; the ticket's relays too)"},
		&cli.BoolFlag{Name: "amino", Category: categoryNetwork, Usage: "use the public IPFS Amino DHT, not the private /reconcile one"},
		&cli.StringFlag{Name: "dht-mode", Value: "auto", Category: categoryNetwork, Usage: "`MODE`: auto (server once reachable), client or server"},
		&cli.DurationFlag{Name: "reannounce", Value: time.Hour, Category: categoryNetwork, Usage: "announce the content in the DHT again this often"},
		&cli.BoolFlag{Name: "no-dht", Category: categoryNetwork, Usage: "run no DHT: neither announce nor look up the content"},
		&cli.BoolFlag{Name: "no-mdns", Category: categoryNetwork, Usage: "do not announce or look for peers on the LAN (mDNS)"},
		&cli.BoolFlag{Name: "no-relay", Category: categoryNetwork, Usage: "use no relays, accept no relayed connections (no hole punching)"},
		&cli.BoolFlag{Name: "no-dht-relays", Category: categoryNetwork, Usage: "take relays from --relay and the ticket only, none found in the DHT"},
		&cli.BoolFlag{Name: "no-holepunch", Category: categoryNetwork, Usage: "do not upgrade relayed connections to direct ones (DCUtR)"},
		&cli.BoolFlag{Name: "no-autonat", Category: categoryNetwork, Usage: "do not ask peers whether this host is reachable (AutoNAT)"},
		&cli.BoolFlag{Name: "no-portmap", Category: categoryNetwork, Usage: "do not ask the router for a port mapping (UPnP, NAT-PMP)"},
		&cli.StringFlag{Name: "reachability", Value: "auto", Category: categoryNetwork, Usage: "auto (AutoNAT), private (use relays at once) or public"},
		&cli.StringSliceFlag{Name: "treat-as-public", Hidden: true, Usage: "CIDR that libp2p is to take as public internet (testbeds only; repeatable)"},
		&cli.IntFlag{Name: "observers-needed", Hidden: true, Usage: "peers that must see the same external address before it is advertised (libp2p default 4; testbeds use 1)"},
	}
}

// parseAddrInfos parses full multiaddrs (…/p2p/ID) into peers, merging
// addresses of the same peer.
func parseAddrInfos(flag string, ss []string) ([]lpeer.AddrInfo, error) {
	var addrs []ma.Multiaddr
	for _, s := range ss {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %v", flag, s, err)
		}
		addrs = append(addrs, a)
	}
	infos, err := lpeer.AddrInfosFromP2pAddrs(addrs...)
	if err != nil {
		return nil, fmt.Errorf("--%s: %v (want a multiaddr ending in /p2p/ID)", flag, err)
	}
	return infos, nil
}

// ticketRelays are the relays named by the relay addresses of a ticket's peers.
func ticketRelays(t peer.Ticket) []lpeer.AddrInfo {
	var addrs []ma.Multiaddr
	for _, ai := range t.Peers {
		for _, a := range ai.Addrs {
			relay, _ := ma.SplitFunc(a, func(c ma.Component) bool { return c.Protocol().Code == ma.P_CIRCUIT })
			if len(relay) == 0 || len(relay) == len(a) {
				continue
			}
			if _, err := relay.ValueForProtocol(ma.P_P2P); err == nil {
				addrs = append(addrs, relay)
			}
		}
	}
	infos, _ := lpeer.AddrInfosFromP2pAddrs(addrs...)
	return infos
}

// netOptions are the peer options of the reachability and discovery flags;
// fromTicket are relays a ticket names (used as relays and bootstrap peers).
func netOptions(c *cli.Context, fromTicket []lpeer.AddrInfo) ([]peer.Option, error) {
	relays, err := parseAddrInfos("relay", c.StringSlice("relay"))
	if err != nil {
		return nil, err
	}
	boot, err := parseAddrInfos("bootstrap", c.StringSlice("bootstrap"))
	if err != nil {
		return nil, err
	}
	relays = append(relays, fromTicket...)
	r := peer.Reach{
		AutoNAT:         !c.Bool("no-autonat"),
		PortMap:         !c.Bool("no-portmap"),
		RelayClient:     !c.Bool("no-relay"),
		HolePunch:       !c.Bool("no-relay") && !c.Bool("no-holepunch"),
		ObserversNeeded: c.Int("observers-needed"),
	}
	if r.RelayClient {
		r.Relays = relays
		r.DHTRelays = !c.Bool("no-dht") && !c.Bool("no-dht-relays")
	}
	for _, s := range c.StringSlice("treat-as-public") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("--treat-as-public %q: %v", s, err)
		}
		r.TreatAsPublic = append(r.TreatAsPublic, p)
	}
	switch c.String("reachability") {
	case "auto", "":
		// AutoNAT takes many seconds (and peers to ask) to find a host
		// unreachable; a user who names a relay wants its address in the
		// ticket now: reserve a slot at once.
		if len(c.StringSlice("relay")) > 0 && !c.Bool("no-relay") {
			r.Reachability = network.ReachabilityPrivate
		}
	case "private":
		r.Reachability = network.ReachabilityPrivate
	case "public":
		r.Reachability = network.ReachabilityPublic
	default:
		return nil, fmt.Errorf("--reachability %q: want auto, private or public", c.String("reachability"))
	}
	d := peer.Discovery{MDNS: !c.Bool("no-mdns"), Amino: c.Bool("amino"), Reannounce: c.Duration("reannounce")}
	if loopbackOnly(c.StringSlice("listen")) {
		// Nobody outside this host can reach the peer: ask no router for a
		// port, send nothing to the LAN, ask nobody whether it is reachable.
		r.PortMap, r.AutoNAT, d.MDNS = false, false, false
	}
	if !c.Bool("no-dht") {
		switch c.String("dht-mode") {
		case "auto", "":
			d.DHT = peer.DHTAuto
		case "client":
			d.DHT = peer.DHTClient
		case "server":
			d.DHT = peer.DHTServer
		default:
			return nil, fmt.Errorf("--dht-mode %q: want auto, client or server", c.String("dht-mode"))
		}
		d.Bootstrap = append(boot, fromTicket...)
		if !d.Amino && len(d.Bootstrap) == 0 {
			d.Bootstrap = relays
		}
	}
	if d.Reannounce <= 0 {
		return nil, fmt.Errorf("--reannounce %v: want a positive duration such as 1h", d.Reannounce)
	}
	return []peer.Option{peer.WithReach(r), peer.WithDiscovery(d)}, nil
}

// parseRootArg reads a bare root id (64 hex digits) given instead of a
// ticket: `reconcile fetch ROOT`.
func parseRootArg(s string) (chunker.ID, bool) {
	id, err := chunker.ParseID(strings.TrimSpace(s))
	return id, err == nil
}

// waitForRelayAddrs waits up to d for the peer to hold a relay reservation
// when relays were given and the host is not known to be public, so that the
// ticket printed carries its relay address. It says at once when a relay is
// at a private address (libp2p advertises relay addresses through public
// relays only), and, if no reservation came within relayAsk, reserves a
// slot itself to learn why, and says so with the fix.
func waitForRelayAddrs(ctx context.Context, c *cli.Context, p *peer.Peer, d time.Duration) {
	if c.Bool("no-relay") || c.String("reachability") == "public" || (len(c.StringSlice("relay")) == 0) {
		return
	}
	w := c.App.ErrWriter
	var public []lpeer.AddrInfo
	for _, s := range c.StringSlice("relay") {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			continue // peerOptions refused it already
		}
		if !manet.IsPublicAddr(a) {
			fmt.Fprintf(w, "reconcile seed: warning: relay %s is at a private address, and libp2p advertises relay addresses through public relays only: the ticket will carry none. Run the relay on a public address; on a LAN, fetchers reach this seed at its own addresses.\n", s)
			continue
		}
		if ai, err := lpeer.AddrInfoFromP2pAddr(a); err == nil {
			public = append(public, *ai)
		}
	}
	if len(public) == 0 {
		return
	}
	hasRelayAddr := func() bool {
		for _, a := range p.Addrs() {
			if _, err := a.ValueForProtocol(ma.P_CIRCUIT); err == nil {
				return true
			}
		}
		return false
	}
	start := time.Now()
	asked := false
	for time.Since(start) < d && ctx.Err() == nil {
		if hasRelayAddr() {
			return
		}
		if !asked && time.Since(start) >= relayAsk {
			asked = true
			if why := reserveProblem(ctx, p, public); why != "" {
				fmt.Fprintf(w, "reconcile seed: warning: no slot on a relay after %.0f s (%s): the ticket carries no relay address, so fetchers behind NAT cannot reach this seed. Check that reconcile relay runs there and is reachable from here, or give another --relay.\n", time.Since(start).Seconds(), why)
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ctx.Err() == nil && !hasRelayAddr() {
		fmt.Fprintf(w, "reconcile seed: warning: a relay gave a slot, but no relay address came within %.0f s: the ticket carries none (run with -v to see libp2p's AutoRelay logs).\n", d.Seconds())
	}
}

// relayAsk is how long a seed waits for AutoRelay's reservation before it
// reserves a slot itself to find out what goes wrong.
const relayAsk = 3 * time.Second

// reserveProblem reserves a slot on each relay and returns why none gave one
// ("" if one did).
func reserveProblem(ctx context.Context, p *peer.Peer, relays []lpeer.AddrInfo) string {
	var why []string
	for _, ai := range relays {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := p.Host().Connect(rctx, ai)
		if err == nil {
			_, err = relayclient.Reserve(rctx, p.Host(), ai)
		}
		cancel()
		if err == nil {
			return ""
		}
		why = append(why, fmt.Sprintf("relay %s: %s", shortID(ai.ID.String()), strings.Join(strings.Fields(err.Error()), " ")))
	}
	return strings.Join(why, "; ")
}

// firstBlock records how long after start the first block arrived (the
// testbed's time to first block, a diagnostic): fetch --json reports it as
// first_block_seconds, and with -v it is logged on log as it happens.
type firstBlock struct {
	start time.Time
	log   io.Writer // nil: no log line

	mu    sync.Mutex
	first int     // blocks held at the first progress report (resumed), -1 before
	secs  float64 // 0 until a block arrives
}

// newFirstBlock starts a record from start, logging on log if it is not nil.
func newFirstBlock(start time.Time, log io.Writer) *firstBlock {
	return &firstBlock{start: start, log: log, first: -1}
}

// wrap returns the progress callback next, which also records the first block.
func (f *firstBlock) wrap(next func(peer.Progress)) func(peer.Progress) {
	return func(pr peer.Progress) {
		f.mu.Lock()
		if f.first < 0 {
			f.first = pr.Blocks
		}
		if pr.Blocks > f.first && f.secs == 0 {
			f.secs = max(time.Since(f.start).Seconds(), 1e-9)
			if f.log != nil {
				fmt.Fprintf(f.log, "reconcile: first block after %.3f s\n", f.secs)
			}
		}
		f.mu.Unlock()
		next(pr)
	}
}

// seconds returns the time to the first block, 0 if none arrived.
func (f *firstBlock) seconds() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.secs
}

// processStart is when the command started (for the time to first block).
var processStart = time.Now()

// loopbackOnly says whether addrs is not empty and listens on loopback only.
func loopbackOnly(addrs []string) bool {
	for _, s := range addrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil || !manet.IsIPLoopback(a) {
			return false
		}
	}
	return len(addrs) > 0
}
