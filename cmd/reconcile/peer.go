package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

func init() {
	// quic-go warns on stderr when it cannot enlarge UDP buffers; that is not
	// something a user of these commands can act on.
	os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")
	register(seedCommand())
	register(fetchCommand())
}

// peerFlags are the flags shared by seed and fetch.
func peerFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringSliceFlag{Name: "listen", Usage: "multiaddr to listen on (repeatable; default: every interface, TCP and QUIC, random ports)"},
		&cli.StringFlag{Name: "key", Usage: "identity key file, created (mode 0600) on first use; default: a fresh identity"},
		&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "log level on stderr: debug, info, warn, error"},
	}, netFlags()...) // reach.go
}

// newCLIPeer starts a peer from the shared flags; fromTicket are relays a
// ticket names (reach.go).
func newCLIPeer(ctx context.Context, c *cli.Context, fromTicket ...lpeer.AddrInfo) (*peer.Peer, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	opts := []peer.Option{peer.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))}
	if l := c.StringSlice("listen"); len(l) > 0 {
		for _, a := range l {
			if _, err := ma.NewMultiaddr(a); err != nil {
				return nil, fmt.Errorf("--listen %q: %v", a, err)
			}
		}
		opts = append(opts, peer.WithListenAddrs(l...))
	}
	if r := c.String("rate"); r != "" {
		n, err := parseByteSize(r)
		if err != nil {
			return nil, fmt.Errorf("--rate: %v", err)
		}
		opts = append(opts, peer.WithServeRate(float64(n)))
	}
	if n := c.Int("sync-every"); n > 0 {
		opts = append(opts, peer.WithSyncEvery(n))
	}
	if d := c.Duration("stall-timeout"); d > 0 {
		opts = append(opts, peer.WithStallTimeout(d))
	}
	if k := c.String("key"); k != "" {
		opts = append(opts, peer.WithKeyFile(k))
	}
	nopts, err := netOptions(c, fromTicket) // reach.go
	if err != nil {
		return nil, err
	}
	opts = append(opts, nopts...)
	return peer.New(ctx, opts...)
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// parseByteSize parses "262144", "256K", "256KiB", "4M", "1GiB" (powers of 1024).
func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a number of bytes such as 262144, 256KiB or 1GiB", s)
	}
	return n * mult, nil
}

// oneLine flattens an error to one line (errors.Join puts each on its own).
func oneLine(err error) error {
	if err == nil {
		return nil
	}
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	return errors.New(msg)
}

func seedCommand() *cli.Command {
	return &cli.Command{
		Name:      "seed",
		Usage:     "serve a file or folder to fetchers and print its ticket",
		ArgsUsage: "PATH",
		Description: "Chunks PATH into blocks, serves them over libp2p (TCP and QUIC, encrypted and\n" +
			"authenticated) and prints the peer's multiaddrs and a ticket: one token holding the\n" +
			"content's root id and this peer's id and addresses. Give the ticket to\n" +
			"\"reconcile fetch\" on other hosts. PATH may also be the output folder of an earlier\n" +
			"fetch (complete or not): its verified blocks are served. Runs until interrupted.\n\n" +
			"Example:\n" +
			"   reconcile seed movie.mkv --key ~/.reconcile/key --ticket-file movie.ticket\n" +
			"   reconcile seed ./data --listen /ip4/0.0.0.0/tcp/4001 --block-size 1MiB",
		Flags: append(peerFlags(),
			&cli.StringFlag{Name: "block-size", Value: "256KiB", Usage: "block size (1KiB to 16MiB)"},
			&cli.StringFlag{Name: "ticket-file", Usage: "also write the ticket to this file"},
			&cli.StringFlag{Name: "rate", Usage: "cap the upload rate, e.g. 4MiB (per second)"},
			&cli.BoolFlag{Name: "byers", Usage: "also serve Reed-Solomon coded blocks for fetchers using --method byers"},
			&cli.IntFlag{Name: "byers-k", Usage: "Byers: source blocks per generation", DefaultText: "64"},
			&cli.IntFlag{Name: "byers-n", Usage: "Byers: coded blocks per generation", DefaultText: "2k"},
			&cli.BoolFlag{Name: "json", Usage: "print the ticket and addresses as one JSON document"},
		),
		Action: runSeed,
	}
}

type seedReport struct {
	Root   string   `json:"root"`
	Peer   string   `json:"peer"`
	Addrs  []string `json:"addrs"`
	Ticket string   `json:"ticket"`
	Blocks int      `json:"blocks"`
	Held   int      `json:"held"`
}

func runSeed(c *cli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("seed: want exactly one PATH, got %d arguments (see reconcile seed --help)", c.NArg())
	}
	path := c.Args().First()
	bs, err := parseByteSize(c.String("block-size"))
	if err != nil {
		return fmt.Errorf("--block-size: %v", err)
	}
	ctx, stop := signalContext()
	defer stop()
	p, err := newCLIPeer(ctx, c)
	if err != nil {
		return oneLine(err)
	}
	defer p.Close()
	waitForRelayAddrs(ctx, c, p, 10*time.Second) // reach.go: the ticket carries the relay address
	var tk peer.Ticket
	if fi, err := os.Stat(filepath.Join(path, chunker.MetaDir)); err == nil && fi.IsDir() {
		st, err := chunker.OpenStore(path)
		if err != nil {
			return oneLine(fmt.Errorf("seed %s: %w", path, err))
		}

		tk, err = p.Serve(st)
		if err != nil {
			st.Close()
			return oneLine(err)
		}
	} else {
		opts := []peer.SeedOption{peer.WithBlockSize(int(bs))}
		if c.Bool("byers") {
			opts = append(opts, peer.WithByers(peer.ByersParams{K: c.Int("byers-k"), N: c.Int("byers-n")}))
		}
		tk, err = p.Seed(ctx, path, opts...)
		if err != nil {
			return oneLine(err)
		}
	}
	rep := seedReport{Root: tk.Root.String(), Peer: p.ID().String(), Ticket: tk.String()}
	for _, a := range p.Addrs() {
		rep.Addrs = append(rep.Addrs, a.String())
	}
	rep.Held, rep.Blocks, _ = p.Held(tk.Root)
	if f := c.String("ticket-file"); f != "" {
		if err := os.WriteFile(f, []byte(rep.Ticket+"\n"), 0o644); err != nil {
			return fmt.Errorf("--ticket-file: %v", err)
		}
	}
	if c.Bool("json") {
		if err := writeJSON(os.Stdout, rep); err != nil {
			return err
		}
	} else {
		fmt.Printf("seeding %s (root %s)\n", path, rep.Root)
		fmt.Printf("serving %d of %d blocks\n", rep.Held, rep.Blocks)
		fmt.Println("listening on:")
		for _, a := range rep.Addrs {
			fmt.Println("   " + a)
		}
		fmt.Println("ticket:")
		fmt.Println(rep.Ticket)
		fmt.Println("fetch it with: reconcile fetch TICKET --out DIR   (Ctrl-C stops seeding)")
	}
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "reconcile: seed: shutting down")
	return oneLine(p.Close())
}

func fetchCommand() *cli.Command {
	return &cli.Command{
		Name:      "fetch",
		Usage:     "download the content of a ticket from every peer that has it",
		ArgsUsage: "TICKET|ROOT",
		Description: "Connects to the ticket's peers (and --peer ones, and the peers they know), gets and\n" +
			"checks the manifest, reconciles with every peer (complete reconciliation of counting\n" +
			"Bloom filters by default) so that each sends only blocks this side lacks, downloads\n" +
			"from all of them in parallel, verifies every block before storing it and serves what\n" +
			"it holds to other fetchers meanwhile. Interrupted (Ctrl-C, kill -9), it resumes from\n" +
			"the verified blocks when started again with the same --out. The content is written\n" +
			"under --out at its own name (OUT/movie.mkv).\n\n" +
			"Methods (--method; every peer serves the first four, the seed needs --byers for the last):\n" +
			"   complete  counting Bloom filter of the blocks held (r*m bits, m ~ 8 per block); never misses a block\n" +
			"   ccbf      the same filter entropy coded (~40% of its size); the same answers\n" +
			"   bitfield  one bit per block of the file; answered exactly, in one round trip\n" +
			"   iblt      rateless IBLT cells until the peer decodes the difference; exact, bytes grow with\n" +
			"             the difference, not the file, at the cost of extra round trips\n" +
			"   byers     Bloom filter of Reed-Solomon coded blocks (the paper's baseline); decodes the file\n\n" +
			"Example:\n" +
			"   reconcile fetch bafy...ticket --out ./downloads\n" +
			"   reconcile fetch bafy...ticket --out ./downloads --method iblt\n" +
			"   reconcile fetch --ticket-file movie.ticket --out dl --seed-after --json",
		Flags: append(peerFlags(),
			&cli.StringFlag{Name: "out", Value: ".", Usage: "output folder (the content is written inside it)"},
			&cli.StringFlag{Name: "ticket-file", Usage: "read the ticket from this file instead of the argument"},
			&cli.StringSliceFlag{Name: "peer", Usage: "another peer to fetch from, as a full multiaddr ending in /p2p/ID (repeatable)"},
			&cli.StringFlag{Name: "method", Value: "complete", Usage: "reconciliation method: complete, ccbf, bitfield, iblt or byers (see above)"},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as one JSON document"},
			&cli.BoolFlag{Name: "seed-after", Usage: "keep serving the content after the fetch, until interrupted"},
			&cli.DurationFlag{Name: "no-peer-timeout", Value: 10 * time.Second, Usage: "give up after this long with no peer to download from"},
			&cli.IntFlag{Name: "sync-every", Value: 16, Usage: "blocks per fsync group; above 1 means fewer fsyncs, and a resumed fetch then re-hashes the output to find blocks stored but not yet recorded"},
			&cli.DurationFlag{Name: "stall-timeout", Value: 10 * time.Second, Usage: "move a peer's blocks to others after it sends nothing for this long"},
		),
		Action: runFetch,
	}
}

func readTicket(c *cli.Context) (peer.Ticket, error) {
	var s string
	switch {
	case c.String("ticket-file") != "" && c.NArg() > 0:
		return peer.Ticket{}, errors.New("fetch: give the ticket as the argument or with --ticket-file, not both")
	case c.String("ticket-file") != "":
		b, err := os.ReadFile(c.String("ticket-file"))
		if err != nil {
			return peer.Ticket{}, fmt.Errorf("--ticket-file: %v", err)
		}
		s = string(b)
	case c.NArg() == 1:
		s = c.Args().First()
	default:
		return peer.Ticket{}, fmt.Errorf("fetch: want one TICKET, got %d arguments (see reconcile fetch --help)", c.NArg())
	}
	if root, ok := parseRootArg(s); ok { // reach.go: reconcile fetch ROOT
		return peer.Ticket{Root: root}, nil
	}
	t, err := peer.ParseTicket(s)
	if err != nil {
		return peer.Ticket{}, fmt.Errorf("%v (copy the whole token printed by reconcile seed)", err)
	}
	return t, nil
}

func runFetch(c *cli.Context) error {
	method, err := reconcile.ParseMethod(c.String("method"))
	if err != nil {
		return fmt.Errorf("--method: %v", err)
	}
	for _, name := range []string{"no-peer-timeout", "stall-timeout"} {
		if d := c.Duration(name); d <= 0 {
			return fmt.Errorf("--%s %v: want a positive duration such as 10s", name, d)
		}
	}
	tk, err := readTicket(c)
	if err != nil {
		return err
	}
	var extra []ma.Multiaddr
	for _, s := range c.StringSlice("peer") {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return fmt.Errorf("--peer %q: %v", s, err)
		}
		extra = append(extra, a)
	}
	ctx, stop := signalContext()
	defer stop()
	p, err := newCLIPeer(ctx, c, ticketRelays(tk)...)
	if err != nil {
		return oneLine(err)
	}
	defer p.Close()
	opts := []peer.FetchOption{peer.WithPeers(extra...), peer.WithMethod(method), peer.WithNoPeerTimeout(c.Duration("no-peer-timeout"))}
	var bar *progressbar.ProgressBar
	if isTerminal(os.Stderr) && !c.Bool("json") {
		bar = newFetchBar()
		opts = append(opts, peer.WithProgress(func(pr peer.Progress) {
			if bar.GetMax64() != pr.TotalBytes {
				bar.ChangeMax64(pr.TotalBytes)
			}
			bar.Describe(fmt.Sprintf("%d/%d blocks, %s", pr.Blocks, pr.TotalBlocks, count(pr.Peers, "peer")))
			bar.Set64(pr.Bytes)
		}))
	}
	if bar == nil {
		opts = append(opts, firstBlockLog(processStart)) // reach.go
	}
	var sum *peer.Summary
	if len(tk.Peers) == 0 && len(extra) == 0 { // reach.go: a root id alone, found through the DHT or mDNS
		sum, err = p.FetchRoot(ctx, tk.Root, c.String("out"), opts...)
	} else {
		sum, err = p.Fetch(ctx, tk, c.String("out"), opts...)
	}
	if bar != nil {
		if err == nil {
			bar.Finish()
		} else {
			bar.Exit() // keep what was done: an interrupted fetch is not at 100 %
		}
		fmt.Fprintln(os.Stderr)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return errors.New("fetch: interrupted; every verified block is kept, run the same command to resume")
		}
		if sum != nil && sum.Resumed+sum.Fetched > 0 {
			return oneLine(fmt.Errorf("fetch: %w (verified blocks are kept in %s; run again to resume)", err, c.String("out")))
		}
		return oneLine(fmt.Errorf("fetch: %w", err))
	}
	if c.Bool("json") {
		if err := writeJSON(os.Stdout, sum); err != nil {
			return err
		}
	} else {
		printSummary(os.Stdout, sum)
	}
	if c.Bool("seed-after") {
		fmt.Fprintln(os.Stderr, "seeding the content; ticket:")
		fmt.Fprintln(os.Stderr, peer.Ticket{Root: tk.Root, Peers: append(tk.Peers[:0:0], p.AddrInfo())}.String())
		<-ctx.Done()
	}
	return oneLine(p.Close())
}

func newFetchBar() *progressbar.ProgressBar {
	return progressbar.NewOptions64(1,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetDescription("connecting"),
	)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func printSummary(w io.Writer, s *peer.Summary) {
	rate := 0.0
	if s.Seconds > 0 {
		rate = mib(s.Received) / s.Seconds
	}
	fmt.Fprintf(w, "fetched %s into %s\n", s.Root, s.Out)
	fmt.Fprintf(w, "  time        %.2f s (%.1f MiB/s)\n", s.Seconds, rate)
	fmt.Fprintf(w, "  blocks      %d total, %d resumed, %d fetched, %d redundant, %d rejected\n", s.Blocks, s.Resumed, s.Fetched, s.Redundant, s.Rejected)
	fmt.Fprintf(w, "  bytes       %.2f MiB received, %.1f KiB of %s reconciliation (%d false offers)\n", mib(s.Received), float64(s.FilterBytes)/1024, s.Method, s.FalseOffers)
	if s.Cells > 0 {
		fmt.Fprintf(w, "  iblt        %d cells sent\n", s.Cells)
	}
	if s.DecodeSeconds > 0 {
		fmt.Fprintf(w, "  decoding    %.3f s\n", s.DecodeSeconds)
	}
	peers := append([]peer.PeerShare(nil), s.Peers...)
	sort.SliceStable(peers, func(i, j int) bool { return peers[i].Bytes > peers[j].Bytes })
	total := 0
	for _, ps := range peers {
		total += ps.Blocks
	}
	for _, ps := range peers {
		share := 0.0
		if total > 0 {
			share = 100 * float64(ps.Blocks) / float64(total)
		}
		line := fmt.Sprintf("  peer %s  %5.1f%%  %s, %.2f MiB, %s (%s)", shortID(ps.Peer), share, count(ps.Blocks, "block"), mib(ps.Bytes), count(ps.Rounds, "round"), count(ps.RoundTrips, "round trip"))
		if ps.Path != "" {
			line += "  " + ps.Path
		}
		if ps.Dropped != "" {
			line += "  dropped: " + ps.Dropped
		}
		fmt.Fprintln(w, line)
	}
}

// shortID abbreviates a peer id for tables.
func shortID(id string) string {
	if len(id) <= 14 {
		return id
	}
	return id[:6] + "…" + id[len(id)-6:]
}
