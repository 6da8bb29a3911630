package labnet

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labplot"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
	"github.com/reconcile-p2p/reconcile/testnet"
	"github.com/reconcile-p2p/reconcile/testnet/rates"
	"github.com/reconcile-p2p/reconcile/testnet/tracestats"
)

// testnetReport is what --json prints.
type testnetReport struct {
	Runs []*testnet.Result `json:"runs"`
	// Baselines are the same runs without churn and liars (--baseline), in
	// the order of Runs.
	Baselines []*testnet.Result `json:"baselines,omitempty"`
	// MaxRSSMiB is the process's peak resident set size.
	MaxRSSMiB   float64 `json:"max_rss_mib"`
	WallSeconds float64 `json:"wall_seconds"`
	CPUs        int     `json:"cpus"`
}

func testnetCommand() *cli.Command {
	return &cli.Command{
		Name:  "testnet",
		Usage: "run hundreds of real peers in one process and distribute a file among them",
		Description: "Starts --nodes peers of package peer over go-libp2p's in-process mock network, each\n" +
			"attached to a router of a transit-stub topology (link latency = the underlay's\n" +
			"shortest-path delay), or over real loopback TCP (--transport tcp, no added latency).\n" +
			"One peer seeds a file of --size random bytes and the others start empty, or every\n" +
			"peer starts with a random --hold share; peers fetch from their Chord (or random)\n" +
			"neighbours until all hold the file, then every file is re-hashed and its root id\n" +
			"checked. Prints completion time per peer, bytes on the wire by message type,\n" +
			"redundant and missed blocks and peak memory, for each --method side by side.\n" +
			"With access links (--up, --down, --classes) every peer's upload and download capacity\n" +
			"is shared by all its connections, on top of the link latencies, and the run prints the\n" +
			"fluid lower bound T* = max(F/u_s, F/min d_i, N·F/(u_s + Σ u_i)) (Kumar and Ross 2006)\n" +
			"and each method's completion time over T* (one seed only). Rates are printed in Mbit/s.\n" +
			"A write crosses the writer's uplink, the latency and the reader's downlink, in order,\n" +
			"as on a TCP flow. The network runs --time-scale times slower than described (auto: as\n" +
			"much as this machine needs to keep pace with the bytes to hash and store; the peers'\n" +
			"timers stretched alike) and times are reported at the described rates, with the CPU\n" +
			"share used. --rarity random,exact,filters runs each block choice side by side: rarest\n" +
			"first from exact counts (the default), from the sum of the neighbours' CBFs, or random.\n" +
			"Peer stores live in a temporary folder (--dir to keep them); the garbage collector\n" +
			"runs once the heap has grown --gc-percent over what is live (50, not Go's 100, which\n" +
			"let the slack add a third to the peak), and a soft memory limit (--mem-limit) caps it.\n" +
			"--churn LEAVE makes that share of the fetching peers leave mid-fetch (service closed,\n" +
			"cut from their neighbours), half of them come back after a pause and resume from their\n" +
			"stores (re-hashed on opening), and half as many again join late; --churn LEAVE,REJOIN,LATE\n" +
			"gives each share. --liars F makes that share of the peers lie (--liar-kind): corrupt ones\n" +
			"flip bytes in every block they send, phantom ones claim the whole file in their filters and\n" +
			"offers and answer every block as missing. Every honest peer that stays or comes back must\n" +
			"end byte-identical; liars and peers that leave for good are not checked. --baseline also\n" +
			"runs each method without churn and liars, for what they cost. --trees K places the peers in\n" +
			"K stripe trees (block i in stripe i mod K; each fetcher an inner node of one tree and a leaf\n" +
			"of the others, under the parent it hears from first): the seed pushes every block once to\n" +
			"its stripe's root and every peer passes each block it gains on to its children, while the\n" +
			"fetches ask for the blocks of a stripe only once its pushes stop for --repair-after (a\n" +
			"parent that left or lies), and an inner node whose parent left or lies asks its\n" +
			"grandparent to adopt it (late joiners are leaves only): 16 trees of 16 KiB blocks reach\n" +
			"1.2x T* where fetches alone take 2.1x, and 1.7x (median) with --churn 0.1 --liars 0.1.\n" +
			"Without --trees (or --hold, byers, --seed-leaves) the seed places the fetchers in --join\n" +
			"trees as they join, as reconcile seed does: 8 by default, each passing a block on 16 KiB\n" +
			"at a time as it arrives (1.5x to 1.6x T* with 256 KiB blocks); --join 0 pulls every block.\n" +
			"--update F makes it an update: every fetching peer holds version 1 (the file) and the seed\n" +
			"serves version 2, F of its bytes overwritten in --update-places places; each fetcher's new\n" +
			"store, staged beside version 1, takes the blocks they share from it and fetches the new ones\n" +
			"(B_new) from the swarm, then replaces version 1. The run prints B_new, the blocks each\n" +
			"fetcher reused, the seed's block bytes over B_new (copies) and T* of B_new.\n" +
			"--content-defined cuts content-defined blocks instead of --block-size ones.\n" +
			natHelp + "\n" +
			"Examples:\n" +
			"   reconcile testnet --nodes 200 --size 16MiB --method both --plot testnet.png\n" +
			"   reconcile testnet --peers 200 --size 16MiB --up 20Mbit --down 100Mbit --method complete\n" +
			"   reconcile testnet --peers 200 --size 16MiB --block-size 64KiB --up 20Mbit --down 100Mbit --rarity random,exact,filters\n" +
			"   reconcile testnet --peers 100 --classes 0.5:10Mbit/2Mbit,0.5:100Mbit/20Mbit --seed-up 20Mbit\n" +
			"   reconcile testnet --nodes 100 --hold 0.3 --method byers --json\n" +
			"   reconcile testnet --nodes 100 --method all\n" +
			"   reconcile testnet --nodes 20 --transport tcp\n" +
			"   reconcile testnet --peers 200 --size 16MiB --up 20Mbit --down 100Mbit --method complete --churn 0.1 --liars 0.1 --baseline\n" +
			"   reconcile testnet --peers 200 --size 16MiB --block-size 16KiB --up 20Mbit --down 100Mbit --trees 16\n" +
			"   reconcile testnet --peers 200 --size 16MiB --block-size 16KiB --up 20Mbit --down 100Mbit --trees 16 --churn 0.1 --liars 0.1\n" +
			"   reconcile testnet --peers 200 --size 16MiB --block-size 16KiB --up 20Mbit --down 100Mbit --update 0.01\n" +
			"   reconcile testnet --peers 200 --size 16MiB --content-defined --up 20Mbit --down 100Mbit --update 0.01\n" +
			"   reconcile testnet --peers 200 --size 16MiB --content-defined --up 20Mbit --down 100Mbit --update 0.01 --join 4\n" +
			"   reconcile testnet --peers 200 --size 16MiB --up 20Mbit --down 100Mbit --nat 0.5 --punch 0.7 --relays 4",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "nodes", Aliases: []string{"peers"}, Usage: "peers", Value: 200},
			&cli.StringFlag{Name: "size", Usage: "file size (e.g. 16MiB)", Value: "16MiB"},
			&cli.StringFlag{Name: "block-size", Usage: "block size, 1KiB to 16MiB", Value: "256KiB"},
			&cli.BoolFlag{Name: "content-defined", Usage: "cut the file into content-defined blocks (56 KiB to 1 MiB, about 121 KiB on average) instead of --block-size ones; block methods only (default method: complete)"},
			&cli.Float64Flag{Name: "update", Usage: "every fetching peer holds version 1 (the file) and the seed serves version 2, with this share of the bytes overwritten (e.g. 0.01); each fetcher takes the blocks they share from its copy and fetches the rest; T* is that of the new blocks; 0: off (default method: complete; not with --hold, --churn, --liars or --trees)"},
			&cli.IntFlag{Name: "update-places", Usage: "with --update, the places the overwritten bytes are in, spread evenly", Value: 10},
			&cli.Float64Flag{Name: "hold", Usage: "share of the blocks each peer starts with; 0: one seed, others empty", Value: 0},
			&cli.StringFlag{Name: "method", Usage: "complete (the default, as reconcile fetch), byers, both (the two), ccbf, bitfield, iblt, all, or a comma list", Value: "complete"},
			&cli.StringFlag{Name: "latency", Usage: "link latency: transitstub (shortest-path delay) or none", Value: "transitstub"},
			&cli.StringFlag{Name: "bandwidth", Usage: "cap per neighbour link, both directions: bits/s with SI prefixes (10Mbit, 1Gbit/s) or bytes/s with IEC prefixes (2MiB/s); none for no cap", Value: "none"},
			&cli.StringFlag{Name: "up", Usage: "every peer's upload capacity, shared by its connections (e.g. 20Mbit; units as --bandwidth); none for no cap", Value: "none"},
			&cli.StringFlag{Name: "down", Usage: "every peer's download capacity, shared by its connections (e.g. 100Mbit); none for no cap", Value: "none"},
			&cli.StringFlag{Name: "classes", Usage: "heterogeneous access links share:down/up,... (e.g. 0.5:10Mbit/2Mbit,0.5:100Mbit/20Mbit; shares sum to 1); replaces --up and --down"},
			&cli.StringFlag{Name: "seed-up", Usage: "the seed's upload capacity (default: as the other peers')", Value: "none"},
			&cli.StringFlag{Name: "transport", Usage: "mock (in-process, shaped) or tcp (real loopback sockets)", Value: "mock"},
			&cli.StringFlag{Name: "neighbours", Usage: "chord (fingers and successors) or random", Value: "chord"},
			&cli.IntFlag{Name: "degree", Usage: "random: neighbours per peer; chord: cap on neighbours (0: all)", Value: 0},
			&cli.IntFlag{Name: "successors", Usage: "Chord successor-list length", Value: 8},
			&cli.StringFlag{Name: "preset", Usage: "topology preset: paper (5050 routers), large (50100), small (110)", Value: "paper"},
			&cli.IntFlag{Name: "window", Usage: "blocks requested at a time from one peer (0: package peer's default)"},
			&cli.IntFlag{Name: "max-sources", Usage: "peers one fetch watches and downloads from at once (memory, contention and the CPU, so the auto time scale, grow with it)", Value: 16},
			&cli.BoolFlag{Name: "super-seed", Usage: "the seed offers each peer only the few blocks it sent least often (super-seeding), so it sends every block once before any twice; --super-seed=false to offer everything", Value: true},
			&cli.BoolFlag{Name: "seed-leaves", Usage: "the seed leaves once it has sent every block and each is stored by another peer (with --super-seed, after its first copy): the peers finish from each other alone, the case rarest-first (--rarity) is meant for; default method complete; not with --churn, --liars or --hold"},
			&cli.DurationFlag{Name: "timeout", Usage: "give up on fetches after this long", Value: 10 * time.Minute},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the topology, the overlay, the file and the holdings", Value: 1},
			&cli.StringFlag{Name: "dir", Usage: "folder for the peers' stores (default: a temporary folder, removed after)"},
			&cli.StringFlag{Name: "mem-limit", Usage: "soft memory limit of the Go runtime (e.g. 3GiB; 0: none); ignored when GOMEMLIMIT is set", Value: "3GiB"},
			&cli.IntFlag{Name: "gc-percent", Usage: "the garbage collector runs once the heap has grown this percent over what is live (Go's GOGC; -1: only at --mem-limit); ignored when GOGC is set", Value: 50},
			&cli.BoolFlag{Name: "no-verify", Usage: "do not re-hash every peer's file at the end"},
			&cli.StringFlag{Name: "churn", Usage: "share of the fetching peers that leave mid-fetch (half of them come back, half as many join late), or LEAVE,REJOIN,LATE; none for no churn", Value: "none"},
			&cli.Float64Flag{Name: "liars", Usage: "share of the peers (never the seed) that lie, in [0, 1)"},
			&cli.StringFlag{Name: "liar-kind", Usage: "what liars do: corrupt (flip bytes of the blocks they send), phantom (claim every block, send none) or mixed (half each)", Value: "mixed"},
			&cli.DurationFlag{Name: "stuck-after", Usage: "start again (resuming) an honest fetch that stored no block for this long", Value: 30 * time.Second},
			&cli.BoolFlag{Name: "baseline", Usage: "with --churn or --liars, also run each method without them and print what they cost"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document"},
			&cli.StringFlag{Name: "rarity", Value: "exact", Usage: "how fetches choose which offered block to ask for first, a comma list run side by side: exact (rarest first, counted from the sources' offers and haves, as bitfields would), filters (rarest first, estimated from the sum of the neighbours' counting Bloom filters, T8), random"},
			&cli.StringFlag{Name: "time-scale", Value: "auto", Usage: "run the network this many times slower than described (rates divided, latencies and the peers' timers multiplied) and report times at the described rates, so that the machine keeps pace; auto: from the bytes and blocks to move, the sources of a fetch, T* and the cores; 1: real time"},
			&cli.IntFlag{Name: "trees", Usage: "place the peers in this many stripe trees: the seed pushes each block once down its stripe's tree, the fetches repair what the trees do not bring (as sim swarm --trees --trees-by-delay, placed by latency; one seed, block methods; default method: complete)"},
			&cli.IntFlag{Name: "join", Usage: "the seed places the fetchers in this many stripe trees as they join, as reconcile seed --trees does (no membership list, no latencies; one seed, block methods; excludes --trees; 0: every block pulled)", DefaultText: "8, as reconcile seed, where one seed serves block methods without --trees or --seed-leaves; else 0"},
			&cli.DurationFlag{Name: "repair-after", Usage: "with --trees, how long a stripe may go without a push before the fetches ask their sources for its blocks, in the described network's time (0: package peer's default, 2s)"},
			&cli.StringFlag{Name: "trace", Usage: "write every block sent or pushed, reconciliation answered and request turned away busy, and the run's plan and events, to `FILE`, a line each (start METHOD SEED SCALE TSTAR; sent|pushed T FROM TO BLOCK; adopted T FROM TO STRIPE; answered T FROM TO FOUND OFFERED; busy T FROM TO; role N liar KIND|leave AT REJOIN|late AT; parent STRIPE CHILD PARENT; joined|left|back|done T N; T in seconds of real time from the start, FROM, TO and N node numbers); reconcile testnet trace FILE summarizes it"},
			cliutil.ProgressFlag(),
			labplot.Flag("draw the completion-time distribution of each method"),
		}, natFlags()...),
		Action:      runTestnet,
		Subcommands: []*cli.Command{testnetTraceCommand()},
	}
}

func testnetTraceCommand() *cli.Command {
	return &cli.Command{
		Name:      "trace",
		Usage:     "summarize a trace that reconcile testnet --trace wrote",
		ArgsUsage: "FILE",
		Description: "Reads a trace (reconcile testnet --trace FILE) and prints, for each run in it: when\n" +
			"the peers that never left were done (median, the last, over T*); how many of the units\n" +
			"honest peers received from honest peers they had received already, pushed and fetched,\n" +
			"until the seed had sent every unit once and after; the pushes to peers already done;\n" +
			"what the seed pushed and sent on request (and how much of that while ten or more honest\n" +
			"peers held the unit); with --trees, the stripes by when the peers that never left got\n" +
			"their last unit, slowest first, with the stripe's inner nodes that left or lied. Times\n" +
			"are at the described rates (the trace's, divided by its time scale).\n\n" +
			"Example:\n" +
			"   reconcile testnet --trees 16 --churn 0.1 --liars 0.1 --up 20Mbit --down 100Mbit --trace run.trace\n" +
			"   reconcile testnet trace run.trace",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print one JSON array, a document per run"}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cliutil.Usagef("want one trace FILE, got %d arguments", c.NArg())
			}
			f, err := os.Open(c.Args().First())
			if err != nil {
				return err
			}
			defer f.Close()
			runs, err := tracestats.Read(f)
			if err != nil {
				return fmt.Errorf("%s: %w", c.Args().First(), err)
			}
			if c.Bool("json") {
				return cliutil.WriteJSON(c.App.Writer, runs)
			}
			for _, st := range runs {
				if err := st.WriteText(c.App.Writer); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func testnetConfig(c *cli.Context) (testnet.Config, []reconcile.Method, error) {
	var cfg testnet.Config
	var err error
	fail := func(format string, a ...any) (testnet.Config, []reconcile.Method, error) {
		return cfg, nil, fmt.Errorf("testnet: "+format, a...)
	}
	if c.NArg() > 0 {
		return fail("unexpected argument %q (every setting is a flag)", c.Args().First())
	}
	cfg.Nodes = c.Int("nodes")
	if cfg.Nodes < 2 {
		return fail("--nodes must be at least 2, got %d", cfg.Nodes)
	}
	if cfg.Size, err = cliutil.FlagSize(c, "size", 1, 0); err != nil {
		return cfg, nil, err
	}
	bs, err := cliutil.FlagSize(c, "block-size", chunker.MinBlockSize, chunker.MaxBlockSize)
	if err != nil {
		return cfg, nil, err
	}
	cfg.BlockSize = int(bs)
	if c.Bool("content-defined") {
		if c.IsSet("block-size") {
			return fail("--content-defined cuts blocks of its own: it takes no --block-size")
		}
		cfg.Chunking = chunker.DefaultChunking
	}
	cfg.Update, cfg.UpdatePlaces = c.Float64("update"), c.Int("update-places")
	if !(cfg.Update >= 0 && cfg.Update <= 1) || cfg.UpdatePlaces < 1 {
		return fail("--update %g in --update-places %d: want a share in [0, 1] and a place at least", cfg.Update, cfg.UpdatePlaces)
	}
	cfg.Hold = c.Float64("hold")
	if !(cfg.Hold >= 0 && cfg.Hold <= 1) {
		return fail("--hold must be in [0, 1], got %g", cfg.Hold)
	}
	if cfg.Latency, err = testnet.ParseLatency(c.String("latency")); err != nil {
		return fail("--latency %q: want transitstub or none", c.String("latency"))
	}
	for _, r := range []struct {
		name string
		dst  *float64
	}{{"bandwidth", &cfg.Bandwidth}, {"up", &cfg.Up}, {"down", &cfg.Down}, {"seed-up", &cfg.SeedUp}} {
		if *r.dst, err = rates.ParseRate(c.String(r.name)); err != nil {
			return fail("--%s %q: want a rate such as 20Mbit (bits/s, SI prefixes) or 2MiB/s (bytes/s, IEC prefixes), or none", r.name, c.String(r.name))
		}
	}
	if cfg.Classes, err = rates.ParseClasses(c.String("classes")); err != nil {
		return fail("--classes %q: want share:down/up,... such as 0.5:10Mbit/2Mbit,0.5:100Mbit/20Mbit, shares summing to 1", c.String("classes"))
	}
	if len(cfg.Classes) > 0 && (c.IsSet("up") || c.IsSet("down")) {
		return fail("--classes replaces --up and --down: give one or the other")
	}
	if cfg.Transport, err = testnet.ParseTransport(c.String("transport")); err != nil {
		return fail("--transport %q: want mock or tcp", c.String("transport"))
	}
	if cfg.Neighbours, err = testnet.ParseNeighbours(c.String("neighbours")); err != nil {
		return fail("--neighbours %q: want chord or random", c.String("neighbours"))
	}
	cfg.Degree, cfg.Successors, cfg.Window, cfg.MaxSources = c.Int("degree"), c.Int("successors"), c.Int("window"), c.Int("max-sources")
	cfg.SuperSeed = c.Bool("super-seed")
	cfg.SeedLeaves = c.Bool("seed-leaves")
	if cfg.Degree < 0 || cfg.Successors < 1 || cfg.Window < 0 || cfg.MaxSources < 1 {
		return fail("--degree and --window must not be negative, --successors and --max-sources must be at least 1")
	}
	switch strings.ToLower(c.String("preset")) {
	case "paper":
		cfg.Topology = topology.Paper()
	case "large":
		cfg.Topology = topology.Large()
	case "small":
		cfg.Topology = topology.Small()
	default:
		return fail("unknown --preset %q (want paper, large or small)", c.String("preset"))
	}
	cfg.Timeout = c.Duration("timeout")
	if cfg.Timeout <= 0 {
		return fail("--timeout must be positive")
	}
	cfg.Seed, cfg.SkipVerify = c.Uint64("seed"), c.Bool("no-verify")
	if s := c.String("time-scale"); s != "auto" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 1) || math.IsInf(v, 0) {
			return fail("--time-scale %q: want auto or a number of at least 1", s)
		}
		cfg.TimeScale = v
	}
	if cfg.Churn, err = testnet.ParseChurn(c.String("churn")); err != nil {
		return fail("--churn %q: want a share such as 0.1, or LEAVE,REJOIN,LATE with rejoin <= leave and leave + late <= 1", c.String("churn"))
	}
	cfg.Liars = c.Float64("liars")
	if cfg.StuckAfter = c.Duration("stuck-after"); cfg.StuckAfter <= 0 {
		return fail("--stuck-after must be positive")
	}
	if !(cfg.Liars >= 0 && cfg.Liars < 1) {
		return fail("--liars must be in [0, 1), got %g", cfg.Liars)
	}
	if cfg.LiarKind, err = testnet.ParseLiarKind(c.String("liar-kind")); err != nil {
		return fail("--liar-kind %q: want mixed, corrupt or phantom", c.String("liar-kind"))
	}
	if cfg.NAT, err = natConfig(c); err != nil {
		return cfg, nil, err
	}
	methods, ok := parseMethods(c.String("method"))
	if !ok {
		return fail("--method %q: want complete, byers, both, ccbf, bitfield, iblt, all or a comma list", c.String("method"))
	}
	if cfg.Trees = c.Int("trees"); cfg.Trees < 0 {
		return fail("--trees must not be negative, got %d", cfg.Trees)
	}
	cfg.Join = c.Int("join")
	if !c.IsSet("join") {
		cfg.Join = defaultJoin(cfg, methods)
	}
	switch {
	case cfg.Join < 0:
		return fail("--join must not be negative, got %d", cfg.Join)
	case cfg.Join > 0 && (cfg.Trees > 0 || cfg.Hold != 0):
		return fail("--join %d: the seed places the fetchers; it takes no --trees and no --hold", cfg.Join)
	case cfg.Join > 0 && !c.IsSet("method"):
		methods = []reconcile.Method{reconcile.Complete}
	case cfg.Join > 0 && slices.Contains(methods, reconcile.Byers):
		return fail("--join needs block methods (complete, ccbf, bitfield, iblt), not byers")
	}
	if cfg.RepairAfter = c.Duration("repair-after"); cfg.RepairAfter < 0 || cfg.RepairAfter > 0 && cfg.Trees == 0 {
		return fail("--repair-after %v: want a duration of at least 0, with --trees", cfg.RepairAfter)
	}
	if cfg.Trees > 0 {
		if cfg.Hold != 0 {
			return fail("--trees needs one seed: it takes no --hold")
		}
		if !c.IsSet("method") {
			methods = []reconcile.Method{reconcile.Complete}
		}
		if slices.Contains(methods, reconcile.Byers) {
			return fail("--trees needs block methods (complete, ccbf, bitfield, iblt), not byers")
		}
	}
	if cfg.SeedLeaves {
		switch {
		case cfg.Hold != 0:
			return fail("--seed-leaves needs one seed: it takes no --hold")
		case cfg.Liars > 0 || cfg.Churn != testnet.Churn{}:
			return fail("--seed-leaves takes no --churn or --liars: a block only a leaver or a liar held would be lost")
		}
		if !c.IsSet("method") {
			methods = []reconcile.Method{reconcile.Complete}
		}
		if slices.Contains(methods, reconcile.Byers) {
			return fail("--seed-leaves needs block methods (complete, ccbf, bitfield, iblt), not byers")
		}
	}
	if cfg.Update > 0 || !cfg.Chunking.IsZero() {
		switch {
		case cfg.Update > 0 && (cfg.Hold != 0 || cfg.Trees > 0 || cfg.Liars > 0 || cfg.Churn != testnet.Churn{}):
			return fail("--update needs one seed, and takes no --hold, --trees, --churn or --liars")
		case !c.IsSet("method"):
			methods = []reconcile.Method{reconcile.Complete}
		case slices.Contains(methods, reconcile.Byers):
			return fail("--update and --content-defined need block methods (complete, ccbf, bitfield, iblt), not byers")
		}
	}
	if (cfg.Liars > 0 || cfg.Churn != testnet.Churn{}) && slices.Contains(methods, reconcile.Byers) {
		return fail("--churn and --liars need block methods (complete, ccbf, bitfield, iblt), not byers")
	}
	return cfg, methods, nil
}

func runTestnet(c *cli.Context) error {
	cfg, methods, err := testnetConfig(c)
	if err != nil {
		return err
	}
	choices, err := rarityChoices(c.String("rarity"))
	if err != nil {
		return err
	}
	plotFile, err := labplot.CheckPath(c)
	if err != nil {
		return err
	}
	if _, err := cliutil.ProgressModeOf(c); err != nil {
		return err
	}
	limit, err := cliutil.FlagSize(c, "mem-limit", 0, 0)
	if err != nil {
		return err
	}
	if gc := c.Int("gc-percent"); gc < -1 || gc == -1 && limit == 0 {
		return cliutil.Usagef("--gc-percent %d: want 0 or more, or -1 with a --mem-limit", gc)
	}
	if limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
	if os.Getenv("GOGC") == "" {
		// The garbage collector's slack (GOGC=100 lets the heap reach twice
		// what is live) would otherwise add a third to the peak: the live
		// heap is little of it beside the goroutines' stacks.
		debug.SetGCPercent(c.Int("gc-percent"))
	}
	if name := c.String("trace"); name != "" {
		f, err := os.Create(name)
		if err != nil {
			return cliutil.Usagef("--trace %s: %v", name, err)
		}
		defer f.Close()
		cfg.Trace = f
	}
	ctx, stop := cliutil.SignalContext()
	defer stop()
	t0 := time.Now()
	dir, done, err := cliutil.WorkFolder(c, "testnet")
	if err != nil {
		return err
	}
	defer done()
	rep := testnetReport{CPUs: runtime.NumCPU()}
	var runErr error
	baseline := c.Bool("baseline") && (cfg.Liars > 0 || cfg.Churn != testnet.Churn{})
	for _, mc := range methodChoices(methods, choices) {
		m := mc.method
		runs := []testnet.Config{cfg}
		if baseline {
			b := cfg
			b.Liars, b.Churn = 0, testnet.Churn{}
			runs = append(runs, b)
		}
		for k, rc := range runs {
			rc.Method, rc.Choice = m, mc.choice
			rc.Dir = dir
			what := runName(m.String(), mc.choice.String())
			if rc.Trees > 0 {
				what += fmt.Sprintf("-trees-%d", rc.Trees)
			}
			if rc.Join > 0 {
				what += fmt.Sprintf("-join-%d", rc.Join)
			}
			if k == 1 {
				rc.Dir, what = filepath.Join(dir, "baseline"), what+" baseline"
			}
			pr, err := cliutil.NewProgress(c, what+" blocks stored", false)
			if err != nil {
				return err
			}
			rc.Progress = testnetProgress(pr)
			res, err := testnet.Run(ctx, rc)
			pr.Finish(false)
			if res != nil {
				if k == 0 {
					rep.Runs = append(rep.Runs, res)
				} else {
					rep.Baselines = append(rep.Baselines, res)
				}
			}
			if err != nil {
				if res == nil || !errors.Is(err, testnet.ErrIncomplete) {
					return fmt.Errorf("testnet: %v: %w", what, cliutil.OneLine(err))
				}
				runErr = fmt.Errorf("testnet: %v: %w", what, cliutil.OneLine(err))
			}
			if c.String("dir") == "" && res != nil {
				// Free the disk between runs.
				os.RemoveAll(res.Dir)
			}
		}
	}
	rep.WallSeconds = time.Since(t0).Seconds()
	rep.MaxRSSMiB = maxRSSMiB()
	if c.Bool("json") {
		if err := cliutil.WriteJSON(c.App.Writer, rep); err != nil {
			return err
		}
	} else {
		printTestnet(c.App.Writer, rep)
	}
	if plotFile != "" {
		if err := plotTestnet(rep.Runs, plotFile); err != nil {
			return err
		}
	}
	return runErr
}

// waitShare is the share of the mean latency that the goroutines' p99 wait
// for a CPU, at the described rates, may reach before a run's times are
// said to measure the machine too. Measured here (200 peers, 16 MiB in 16
// KiB blocks, 16 stripe trees, 373 ms mean latency): waits of 1.3 and 1.7 ms
// gave a median of 1.22x T*, waits of 16 ms (time scale 15 on a slower day,
// the CPU 43 % busy) 1.26x, and 1.22x again at time scale 25.
const waitShare = 0.02

// cpuWarning says, for a run the machine's CPU may have slowed, why and what
// to do ("" when it did not): the CPU near its limit, or goroutines waiting
// for it a noticeable share of the latency.
func cpuWarning(r *testnet.Result) string {
	scale := max(r.TimeScale, 1)
	wait := r.SchedP99S / scale
	switch {
	case r.CPUUse > 0.8:
		return "the machine was near its limit: the times measure it as much as the protocol (raise --time-scale)"
	case r.MeanLatencyMS > 0 && wait > waitShare*r.MeanLatencyMS/1000:
		return fmt.Sprintf("goroutines waited for a CPU up to %s (p99 at the described rates), %.0f%% of the mean latency: "+
			"the times may hold the machine's delays; run again with --time-scale %g or more to measure the protocol alone",
			fmtMS(wait), 100*wait/(r.MeanLatencyMS/1000), math.Ceil(scale*1.5))
	}
	return ""
}

// testnetProgress shows the blocks the honest fetches stored of all they
// lacked (the time left comes from them: the fetchers themselves end
// together, in the last seconds), and the fetchers done.
func testnetProgress(pr *cliutil.Progress) func(testnet.Progress) {
	return func(p testnet.Progress) {
		pr.Update(testnetProgressState(p))
	}
}

// testnetProgressState is the progress line's figures for p: 100% only once
// every fetcher is done (peers that leave for good never store all they
// lacked, and coded blocks may take more than the blocks).
func testnetProgressState(p testnet.Progress) cliutil.ProgressState {
	total := max(p.Need, 1)
	done := min(p.Blocks, total-1)
	if p.Done >= p.Fetchers {
		done = total
	}
	return cliutil.ProgressState{Done: done, Total: total, Session: -1,
		Extra: fmt.Sprintf("%d/%d fetchers done", p.Done, p.Fetchers)}
}

// defaultJoin is --join's default: reconcile seed's trees
// (peer.DefaultTrees) where a run has one seed and block methods only, no
// planned trees and no seed that leaves; 0 elsewhere.
func defaultJoin(cfg testnet.Config, methods []reconcile.Method) int {
	if cfg.Hold != 0 || cfg.Trees > 0 || cfg.SeedLeaves || slices.Contains(methods, reconcile.Byers) {
		return 0
	}
	return peer.DefaultTrees
}
