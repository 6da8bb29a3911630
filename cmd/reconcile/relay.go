package main

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/peer"
)

func relayCommand() *cli.Command {
	return &cli.Command{
		Name:  "relay",
		Usage: "run a public helper node: circuit relay v2, DHT server and bootstrap peer",
		Description: "Runs on a host that others can dial (a public address, or a forwarded port). Peers\n" +
			"behind NAT reserve a slot on it (reconcile seed/fetch --relay ADDR, or without\n" +
			"--relay once they find it in the DHT they join with --bootstrap ADDR) and are reached\n" +
			"through it; two such peers then try to punch a hole (DCUtR) and move the blocks\n" +
			"directly. It is also a server of the private /reconcile DHT (or of Amino with\n" +
			"--amino) that seeds announce their content on, and a bootstrap peer\n" +
			"(--bootstrap ADDR). By default a relayed connection carries at most 128 KiB each way\n" +
			"for 2 minutes (libp2p's defaults: enough to meet and punch a hole); raise\n" +
			"--data-limit and --duration-limit (0 and 0: no limit) to let blocks flow through it\n" +
			"when hole punching fails (symmetric NATs).\n\n" +
			"Example:\n" +
			"   reconcile relay --listen /ip4/0.0.0.0/tcp/4001 --listen /ip4/0.0.0.0/udp/4001/quic-v1 --key relay.key\n" +
			"   reconcile relay --data-limit 1GiB --duration-limit 1h",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "listen", Value: cli.NewStringSlice("/ip4/0.0.0.0/tcp/4001", "/ip4/0.0.0.0/udp/4001/quic-v1", "/ip6/::/tcp/4001", "/ip6/::/udp/4001/quic-v1"), Usage: "multiaddr to listen on (repeatable)"},
			&cli.StringFlag{Name: "key", Usage: "identity key file, created (mode 0600) on first use (keep the relay's peer id stable); default: a fresh identity"},
			&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "log level on stderr: debug, info, warn, error"},
			&cli.StringSliceFlag{Name: "bootstrap", Usage: "other DHT peers to join through (repeatable)"},
			&cli.BoolFlag{Name: "amino", Usage: "serve the public IPFS Amino DHT instead of the private /reconcile one"},
			&cli.StringFlag{Name: "data-limit", Value: "128KiB", Usage: "bytes one relayed connection may carry each way (0 with --duration-limit 0: no limit)"},
			&cli.DurationFlag{Name: "duration-limit", Value: 2 * time.Minute, Usage: "how long one relayed connection may last (0 with --data-limit 0: no limit)"},
			&cli.IntFlag{Name: "max-reservations", Value: 128, Usage: "most peers holding a relay slot at once"},
			&cli.IntFlag{Name: "max-circuits", Value: 16, Usage: "most relayed connections per peer"},
			&cli.BoolFlag{Name: "allow-private", Usage: "also hand out private and reserved addresses (LANs, testbeds)"},
			&cli.StringSliceFlag{Name: "treat-as-public", Hidden: true, Usage: "CIDR that libp2p is to take as public internet (testbeds only; repeatable)"},
			&cli.BoolFlag{Name: "json", Usage: "print the peer id and addresses as one JSON document"},
		},
		Action: runRelay,
	}
}

type relayReport struct {
	Peer  string   `json:"peer"`
	Addrs []string `json:"addrs"`
}

func runRelay(c *cli.Context) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	data, err := cliutil.ParseByteSize(c.String("data-limit"))
	if err != nil {
		return fmt.Errorf("--data-limit: %v", err)
	}
	dur := c.Duration("duration-limit")
	if dur < 0 {
		return fmt.Errorf("--duration-limit %v: want zero or a positive duration", dur)
	}
	boot, err := parseAddrInfos("bootstrap", c.StringSlice("bootstrap"))
	if err != nil {
		return err
	}
	for _, a := range c.StringSlice("listen") {
		if _, err := ma.NewMultiaddr(a); err != nil {
			return fmt.Errorf("--listen %q: %v", a, err)
		}
	}
	rc := relayv2.DefaultResources()
	rc.MaxReservations = c.Int("max-reservations")
	rc.MaxCircuits = c.Int("max-circuits")
	switch {
	case data == 0 && dur == 0:
		rc.Limit = nil
	default:
		if data == 0 {
			data = 1 << 62
		}
		if dur == 0 {
			dur = 100 * 365 * 24 * time.Hour
		}
		rc.Limit = &relayv2.RelayLimit{Data: data, Duration: dur}
	}
	var pub []netip.Prefix
	for _, s := range c.StringSlice("treat-as-public") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("--treat-as-public %q: %v", s, err)
		}
		pub = append(pub, p)
	}
	ctx, stop := cliutil.SignalContext()
	defer stop()
	opts := []peer.Option{
		peer.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))),
		peer.WithListenAddrs(c.StringSlice("listen")...),
		peer.WithReach(peer.Reach{AutoNAT: true, AutoNATService: true, Reachability: network.ReachabilityPublic, TreatAsPublic: pub}),
		peer.WithDiscovery(peer.Discovery{DHT: peer.DHTServer, Amino: c.Bool("amino"), Bootstrap: boot}),
	}
	if k := c.String("key"); k != "" {
		opts = append(opts, peer.WithKeyFile(k))
	}
	p, err := peer.New(ctx, opts...)
	if err != nil {
		return cliutil.OneLine(err)
	}
	defer p.Close()
	ropts := []relayv2.Option{relayv2.WithResources(rc)}
	if c.Bool("allow-private") {
		ropts = append(ropts, relayv2.WithReservationAddressFilter(func(ma.Multiaddr) bool { return true }))
	}
	r, err := relayv2.New(p.Host(), ropts...)
	if err != nil {
		return fmt.Errorf("relay: %v", err)
	}
	defer r.Close()
	rep := relayReport{Peer: p.ID().String()}
	for _, a := range p.Addrs() {
		rep.Addrs = append(rep.Addrs, a.String())
	}
	if c.Bool("json") {
		if err := cliutil.WriteJSON(os.Stdout, rep); err != nil {
			return err
		}
	} else {
		fmt.Printf("relay %s\n", rep.Peer)
		fmt.Println("listening on (give one to seed and fetch as --relay and --bootstrap):")
		for _, a := range rep.Addrs {
			fmt.Println("   " + a)
		}
		limit := "none"
		if rc.Limit != nil {
			limit = fmt.Sprintf("%s each way, %v per relayed connection", c.String("data-limit"), rc.Limit.Duration)
		}
		fmt.Printf("relay limits: %s; %d reservations, %d circuits per peer (Ctrl-C stops)\n", limit, rc.MaxReservations, rc.MaxCircuits)
	}
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "reconcile: relay: shutting down")
	return nil
}
