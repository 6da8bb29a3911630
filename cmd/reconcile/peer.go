package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/urfave/cli/v2"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/peer"
)

// The categories of the flags of seed and fetch in their help, after the
// flags most users need.
const (
	categoryNetwork = "network:" // reachability and discovery
	categoryTuning  = "tuning:"  // timeouts, windows, logs
)

// peerFlags are the flags shared by seed and fetch.
func peerFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringSliceFlag{Name: "listen", Category: categoryNetwork, Usage: "listen on `ADDR` (repeatable; default: all interfaces, TCP and QUIC)"},
		&cli.StringFlag{Name: "key", Category: categoryNetwork, Usage: "identity key `FILE`, made (mode 0600) if missing (default: a new identity)"},
		&cli.StringFlag{Name: "log-level", Value: "warn", Category: categoryTuning, Usage: "`LEVEL` of logs on stderr: debug, info, warn or error"},
		cliutil.CPUProfileFlag(), // profile.go
	}, netFlags()...) // reach.go
}

// peerOptions checks the shared flags of seed and fetch and returns the peer's
// options, with a logger writing to logTo; it starts nothing, so a bad value
// is refused before any work.
func peerOptions(c *cli.Context, logTo io.Writer) ([]peer.Option, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, cliutil.Usagef("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	if cliutil.Verbose(c.App) && !c.IsSet("log-level") {
		level = slog.LevelInfo
	}
	opts := []peer.Option{peer.WithLogger(slog.New(cliutil.NewLineHandler(logTo, level)))}
	if l := c.StringSlice("listen"); len(l) > 0 {
		for _, a := range l {
			if _, err := ma.NewMultiaddr(a); err != nil {
				return nil, cliutil.Usagef("--listen %q: %v", a, err)
			}
		}
		opts = append(opts, peer.WithListenAddrs(l...))
	}
	if c.String("rate") != "" {
		n, err := cliutil.FlagSize(c, "rate", 1, 0)
		if err != nil {
			return nil, err
		}
		opts = append(opts, peer.WithServeRate(float64(n)))
	}
	if cliutil.FindFlag(c.Command.Flags, "sync-every") != nil {
		n, err := cliutil.FlagAtLeast(c, "sync-every", 0)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			opts = append(opts, peer.WithSyncEvery(n))
		}
	}
	if cliutil.FindFlag(c.Command.Flags, "window") != nil && c.IsSet("window") {
		n, err := cliutil.FlagAtLeast(c, "window", 1)
		if err != nil {
			return nil, err
		}
		opts = append(opts, peer.WithWindow(n))
	}
	if cliutil.FindFlag(c.Command.Flags, "stall-timeout") != nil {
		d := c.Duration("stall-timeout")
		if d <= 0 {
			return nil, cliutil.Usagef("--stall-timeout %v: want a positive duration such as 10s", d)
		}
		opts = append(opts, peer.WithStallTimeout(d))
	}
	if k := c.String("key"); k != "" {
		opts = append(opts, peer.WithKeyFile(k))
	}
	return opts, nil
}

// newCLIPeer starts a peer with opts and the options of the reachability and
// discovery flags; fromTicket are relays a ticket names (reach.go).
func newCLIPeer(ctx context.Context, c *cli.Context, opts []peer.Option, fromTicket ...lpeer.AddrInfo) (*peer.Peer, error) {
	nopts, err := netOptions(c, fromTicket)
	if err != nil {
		return nil, err
	}
	return peer.New(ctx, append(opts, nopts...)...)
}
