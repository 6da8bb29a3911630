package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/peer"
)

func seedCommand() *cli.Command {
	return &cli.Command{
		Name:      "seed",
		Usage:     "serve a file or folder to fetchers and print its ticket",
		ArgsUsage: "PATH",
		Description: "Chunks PATH into blocks, serves them over libp2p (TCP and QUIC, encrypted and\n" +
			"authenticated) and prints the peer's multiaddrs and a ticket: one token holding the\n" +
			"content's root id and this peer's id and addresses. Give the ticket to\n" +
			"\"reconcile fetch\" on other hosts. PATH may also be the output folder of an earlier\n" +
			"fetch (complete or not; every content fetched into it): its verified blocks are served.\n" +
			"Runs until interrupted.\n" +
			"If a seeded file changes meanwhile (its size or time, checked every 2 s, and every\n" +
			"block read after a change is re-hashed), the blocks that no longer match are no\n" +
			"longer served, with a warning naming them.\n\n" +
			"Example:\n" +
			"   reconcile seed movie.mkv --key ~/.reconcile/key --ticket-file movie.ticket\n" +
			"   reconcile seed ./data --listen /ip4/0.0.0.0/tcp/4001",
		Flags: append(peerFlags(),
			&cli.StringFlag{Name: "block-size", Usage: "cut fixed-size blocks of this size, 1KiB to 16MiB (e.g. 256KiB), not content-defined ones", DefaultText: "content-defined blocks of 56 KiB to 1 MiB, 121 KiB on average, that updates reuse; 256KiB with --byers"},
			&cli.BoolFlag{Name: "content-defined", Value: true, Hidden: true, Usage: "cut content-defined blocks (the default; --block-size cuts fixed ones)"},
			&cli.StringFlag{Name: "ticket-file", Usage: "also write the ticket to this file"},
			&cli.StringFlag{Name: "rate", Usage: "cap the upload rate in bytes per second, IEC units: 4MiB is 4 MiB/s = 4194304 B/s"},
			&cli.BoolFlag{Name: "byers", Usage: "also serve Reed-Solomon coded blocks for fetchers using --method byers"},
			&cli.BoolFlag{Name: "super-seed", Value: true, Usage: "offer each fetcher a few blocks at a time, those sent least often, every block once before any twice, so the fetchers trade the rest (a lone fetcher is served at full pace); --super-seed=false offers everything at once"},
			&cli.IntFlag{Name: "trees", Value: peer.DefaultTrees, Usage: "place the fetchers in this many stripe trees as they join: each passes one stripe on to the others, a piece at a time as it arrives, so the seed sends about one copy however many fetch; faster than pulling over wide-area latencies, slower on a LAN, where fetchers that reach the seed at a loopback or private address pull instead (docs/stripe-trees.md; 0: every block pulled)"},
			&cli.IntFlag{Name: "byers-k", Usage: "Byers: source blocks per generation", DefaultText: "64"},
			&cli.IntFlag{Name: "byers-n", Usage: "Byers: coded blocks per generation", DefaultText: "2k"},
			&cli.BoolFlag{Name: "json", Usage: "print the ticket and addresses as one JSON document"},
			&cli.DurationFlag{Name: "log-every", Value: 30 * time.Second, Usage: "every this long, log on stderr the bytes served and new peers (0: only the total at the end); a peer served for the first time is logged within a second"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "log nothing about the peers served (errors and warnings only)"},
			cliutil.ProgressFlag(), // of the chunking, on stderr
			memoryLimitFlag(),      // memory.go
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
	// More are the other contents seeded from a folder that holds the
	// stores of several (versions fetched into one --out).
	More []seedContent `json:"more,omitempty"`
}

// seedContent is one more content of a seed.
type seedContent struct {
	Root   string `json:"root"`
	Ticket string `json:"ticket"`
	Blocks int    `json:"blocks"`
	Held   int    `json:"held"`
}

// serveStores serves every store of the folder dir (the --out of fetches:
// one content, or several, such as versions fetched into it) and returns
// their tickets, in ListStores order, super-seeding if super and placing
// their fetchers in trees stripe trees (0: none) where a store is whole.
func serveStores(ctx context.Context, p *peer.Peer, dir string, super bool, trees int) ([]peer.Ticket, error) {
	ids, err := chunker.ListStores(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: %w: its %s folder holds no store", dir, chunker.ErrNotFound, chunker.MetaDir)
	}
	var tks []peer.Ticket
	for _, id := range ids {
		st, err := chunker.OpenStore(ctx, dir, chunker.WithID(id), chunker.WithoutRepair())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		so := []peer.ServeOption{peer.WithServeTrees(trees)}
		if super {
			so = append(so, peer.WithServeSuperSeeding())
		}
		tk, err := p.Serve(st, so...)
		if err != nil {
			st.Close()
			return nil, err
		}
		tks = append(tks, tk)
	}
	return tks, nil
}

func runSeed(c *cli.Context) error {
	if c.NArg() != 1 {
		return cliutil.Usagef("want exactly one PATH, got %d arguments", c.NArg())
	}
	path := c.Args().First()
	bs := int64(chunker.DefaultBlockSize)
	if c.IsSet("block-size") {
		var err error
		if bs, err = cliutil.FlagSize(c, "block-size", chunker.MinBlockSize, chunker.MaxBlockSize); err != nil {
			return err
		}
	}
	// Content-defined blocks unless fixed ones are asked for, or needed (the
	// Byers baseline codes fixed-size shards).
	contentDefined := !c.IsSet("block-size") && !c.Bool("byers")
	if c.IsSet("content-defined") {
		if c.Bool("content-defined") && c.IsSet("block-size") {
			return cliutil.Usagef("--content-defined cuts blocks of its own sizes: drop --block-size")
		}
		contentDefined = c.Bool("content-defined")
	}
	logEvery := c.Duration("log-every")
	if logEvery < 0 {
		return cliutil.Usagef("--log-every %v: want a positive duration such as 30s, or 0 for no log", logEvery)
	}
	if t := c.Int("trees"); t < 0 || t > peer.MaxStripes {
		return cliutil.Usagef("--trees %d: want 0 (no trees) to %d", t, peer.MaxStripes)
	}
	pr, err := cliutil.NewProgress(c, "chunking", true)
	if err != nil {
		return err
	}
	opts, err := peerOptions(c, c.App.ErrWriter)
	if err != nil {
		return err
	}
	stopProfile, err := cliutil.StartCPUProfile(c) // profile.go
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, stop := cliutil.SignalContext()
	defer stop()
	p, err := newCLIPeer(ctx, c, opts)
	if err != nil {
		return cliutil.OneLine(err)
	}
	defer p.Close()
	if err := applyMemoryLimit(c); err != nil { // memory.go
		return err
	}
	go returnMemory(ctx)
	waitForRelayAddrs(ctx, c, p, 10*time.Second) // reach.go: the ticket carries the relay address
	var tk peer.Ticket
	var more []peer.Ticket // the other contents of a folder of stores
	if fi, err := os.Stat(filepath.Join(path, chunker.MetaDir)); err == nil && fi.IsDir() {
		tks, err := serveStores(ctx, p, path, c.Bool("super-seed"), c.Int("trees"))
		if err != nil {
			return cliutil.OneLine(err)
		}
		tk, more = tks[0], tks[1:]
	} else {
		opts := []peer.SeedOption{peer.WithBlockSize(int(bs))}
		if contentDefined {
			opts = []peer.SeedOption{peer.WithContentDefined(chunker.Chunking{})}
		}
		if c.Bool("super-seed") {
			opts = append(opts, peer.WithSuperSeeding())
		}
		if !c.Bool("byers") {
			opts = append(opts, peer.WithTrees(c.Int("trees")))
		}
		if c.Bool("byers") {
			opts = append(opts, peer.WithByers(peer.ByersParams{K: c.Int("byers-k"), N: c.Int("byers-n")}))
		}
		opts = append(opts, peer.WithSeedProgress(pr.Bytes))
		tk, err = p.Seed(ctx, path, opts...)
		pr.Finish(false)
		if err != nil {
			return cliutil.OneLine(err)
		}
	}
	rep := seedReport{Root: tk.Root.String(), Peer: p.ID().String(), Ticket: tk.String()}
	for _, a := range p.Addrs() {
		rep.Addrs = append(rep.Addrs, a.String())
	}
	rep.Held, rep.Blocks, _ = p.Held(tk.Root)
	for _, t := range more {
		sc := seedContent{Root: t.Root.String(), Ticket: t.String()}
		sc.Held, sc.Blocks, _ = p.Held(t.Root)
		rep.More = append(rep.More, sc)
	}
	if f := c.String("ticket-file"); f != "" {
		if err := os.WriteFile(f, []byte(rep.Ticket+"\n"), 0o644); err != nil {
			return fmt.Errorf("--ticket-file: %w", err)
		}
	}
	w := c.App.Writer
	if c.Bool("json") {
		if err := cliutil.WriteJSON(w, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "seeding %s (root %s)\n", path, rep.Root)
		fmt.Fprintf(w, "serving %d of %d blocks\n", rep.Held, rep.Blocks)
		fmt.Fprintln(w, "listening on:")
		for _, a := range rep.Addrs {
			fmt.Fprintln(w, "   "+a)
		}
		fmt.Fprintln(w, "ticket:")
		fmt.Fprintln(w, rep.Ticket)
		fmt.Fprintf(w, "fetch it with: %s   (Ctrl-C stops seeding)\n", fetchHint(path, c.String("ticket-file")))
		for _, sc := range rep.More {
			fmt.Fprintf(w, "also seeding root %s from the same folder (%d of %d blocks); ticket:\n%s\n", sc.Root, sc.Held, sc.Blocks, sc.Ticket)
		}
	}
	quiet := c.Bool("quiet")
	if quiet {
		<-ctx.Done()
		return cliutil.OneLine(p.Close())
	}
	sl := &servedLog{w: c.App.ErrWriter}
	// Every second: a line for each peer served for the first time; every
	// logEvery: the bytes served.
	peers := time.NewTicker(time.Second)
	defer peers.Stop()
	var every <-chan time.Time
	if logEvery > 0 {
		t := time.NewTicker(logEvery)
		defer t.Stop()
		every = t.C
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-peers.C:
			sl.announce(p.ServedBytes(tk.Root))
		case <-every:
			sl.log(p.ServedBytes(tk.Root), false)
		}
	}
	sl.log(p.ServedBytes(tk.Root), true)
	fmt.Fprintln(c.App.ErrWriter, "reconcile seed: shutting down")
	return cliutil.OneLine(p.Close())
}

// fetchHint is the fetch command a seed of path suggests: the ticket from the
// --ticket-file if one was written, and --out the file's name for a single
// file (a folder for a tree).
func fetchHint(path, ticketFile string) string {
	tk := "TICKET"
	if ticketFile != "" {
		tk = "--ticket-file " + ticketFile
	}
	out := "DIR"
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		out = filepath.Base(path)
	}
	return fmt.Sprintf("reconcile fetch %s --out %s", tk, out)
}

// servedLog writes what a seed has served: a line when a peer is served for
// the first time or the bytes served grew, and a total at the end.
type servedLog struct {
	w    io.Writer
	last map[string]int64
	// known holds the peers announce has logged.
	known map[string]bool
}

// announce writes a line for each peer of served not announced before.
func (l *servedLog) announce(served map[string]int64) {
	ids := make([]string, 0, len(served))
	for id := range served {
		if !l.known[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		if l.known == nil {
			l.known = make(map[string]bool)
		}
		l.known[id] = true
		fmt.Fprintf(l.w, "serving peer %s (%s so far)\n", shortID(id), cliutil.HumanBytes(served[id]))
	}
}

// log writes the changes since the last call (peer ids shortened, IEC units);
// final writes the total even when nothing changed.
func (l *servedLog) log(served map[string]int64, final bool) {
	var total, grown int64
	var news []string
	ids := make([]string, 0, len(served))
	for id := range served {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		n := served[id]
		total += n
		old, seen := l.last[id]
		if n > old {
			grown += n - old
		}
		if !seen {
			news = append(news, shortID(id))
		}
	}
	if final {
		fmt.Fprintf(l.w, "served %s to %s in all\n", cliutil.HumanBytes(total), cliutil.Count(len(served), "peer"))
		return
	}
	if grown == 0 && len(news) == 0 {
		return
	}
	line := fmt.Sprintf("served %s to %s so far (+%s)", cliutil.HumanBytes(total), cliutil.Count(len(served), "peer"), cliutil.HumanBytes(grown))
	if len(news) > 0 {
		line += "; new: " + strings.Join(news, ", ")
	}
	fmt.Fprintln(l.w, line)
	l.last = served
}
