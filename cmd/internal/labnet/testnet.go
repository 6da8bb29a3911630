package labnet

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labplot"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/testnet"
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
			"Peer stores live in a temporary folder (--dir to keep them); a soft memory limit\n" +
			"(--mem-limit) keeps the garbage collector's slack from doubling the peak.\n" +
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
			"1.2x T* where fetches alone take 2.1x, and 1.7x (median) with --churn 0.1 --liars 0.1.\n\n" +
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
			"   reconcile testnet --peers 200 --size 16MiB --block-size 16KiB --up 20Mbit --down 100Mbit --trees 16 --churn 0.1 --liars 0.1",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Aliases: []string{"peers"}, Usage: "peers", Value: 200},
			&cli.StringFlag{Name: "size", Usage: "file size (e.g. 16MiB)", Value: "16MiB"},
			&cli.StringFlag{Name: "block-size", Usage: "block size, 1KiB to 16MiB", Value: "256KiB"},
			&cli.Float64Flag{Name: "hold", Usage: "share of the blocks each peer starts with; 0: one seed, others empty", Value: 0},
			&cli.StringFlag{Name: "method", Usage: "complete, byers, both (the two), ccbf, bitfield, iblt, all, or a comma list", Value: "both"},
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
			&cli.DurationFlag{Name: "repair-after", Usage: "with --trees, how long a stripe may go without a push before the fetches ask their sources for its blocks, in the described network's time (0: package peer's default, 2s)"},
			&cli.StringFlag{Name: "trace", Usage: "write every block sent or pushed, reconciliation answered and request turned away busy, and the run's plan and events, to `FILE`, a line each (start METHOD SEED SCALE TSTAR; sent|pushed T FROM TO BLOCK; adopted T FROM TO STRIPE; answered T FROM TO FOUND OFFERED; busy T FROM TO; role N liar KIND|leave AT REJOIN|late AT; parent STRIPE CHILD PARENT; joined|left|back|done T N; T in seconds of real time from the start, FROM, TO and N node numbers); reconcile testnet trace FILE summarizes it"},
			cliutil.ProgressFlag(),
			labplot.Flag("draw the completion-time distribution of each method"),
		},
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
			runs, err := testnet.ReadTrace(f)
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
		if *r.dst, err = testnet.ParseRate(c.String(r.name)); err != nil {
			return fail("--%s %q: want a rate such as 20Mbit (bits/s, SI prefixes) or 2MiB/s (bytes/s, IEC prefixes), or none", r.name, c.String(r.name))
		}
	}
	if cfg.Classes, err = testnet.ParseClasses(c.String("classes")); err != nil {
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
		cfg.Topology = ts.Paper()
	case "large":
		cfg.Topology = ts.Large()
	case "small":
		cfg.Topology = ts.Small()
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
	methods, ok := parseMethods(c.String("method"))
	if !ok {
		return fail("--method %q: want complete, byers, both, ccbf, bitfield, iblt, all or a comma list", c.String("method"))
	}
	if cfg.Trees = c.Int("trees"); cfg.Trees < 0 {
		return fail("--trees must not be negative, got %d", cfg.Trees)
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
	if limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		// The garbage collector's slack (GOGC=100 lets the heap reach twice
		// what is live) would otherwise double the peak.
		debug.SetMemoryLimit(limit)
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

func printTestnet(out io.Writer, rep testnetReport) {
	if len(rep.Runs) == 0 {
		return
	}
	r0 := rep.Runs[0]
	scen := "one seed, the others empty"
	if r0.Hold > 0 {
		scen = fmt.Sprintf("every peer holding %.0f%% of the blocks", 100*r0.Hold)
	}
	bw := "no bandwidth cap"
	if r0.BandwidthBps > 0 {
		bw = testnet.FormatRate(r0.BandwidthBps) + " per link"
	}
	fmt.Fprintf(out, "%d peers over %s (latency %s, mean %.0f ms, %s), %s neighbours (mean %.1f), file of %.1f MiB in %d blocks, %s.\n",
		r0.Nodes, r0.Transport, r0.Latency, r0.MeanLatencyMS, bw, r0.Neighbours, r0.MeanDegree, float64(r0.Bytes)/(1<<20), r0.Blocks, scen)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "method\tcompleted\tidentical\tmedian s\tp95 s\tmax s\tfilter MiB\tblocks MiB\twant MiB\tpeers MiB\tfilter/blocks\tredundant\tmissed\tfalse offers\tpeak MiB\trun s\t\n")
	for _, r := range rep.Runs {
		ident := "-"
		if r.Identical >= 0 {
			ident = fmt.Sprintf("%d/%d", r.Identical, r.Checked)
		}
		ratio := "-" // no blocks moved
		if r.BlockBytes > 0 {
			ratio = fmt.Sprintf("%.2f%%", 100*float64(r.FilterBytes)/float64(r.BlockBytes))
		}
		fmt.Fprintf(w, "%s\t%d/%d\t%s\t%.2f\t%.2f\t%.2f\t%.3f\t%.1f\t%.3f\t%.3f\t%s\t%d\t%d\t%d\t%.0f\t%.1f\t\n",
			runName(r.Method, r.Choice), r.Completed, r.Fetchers, ident, r.MedianS, r.P95S, r.MaxS,
			cliutil.MiB(r.FilterBytes), cliutil.MiB(r.BlockBytes), cliutil.MiB(r.Wire[testnet.WireWant]), cliutil.MiB(r.Wire[testnet.WirePeers]),
			ratio, r.Redundant, r.Missed, r.FalseOffers, r.PeakMemMiB, r.RunSeconds)
	}
	w.Flush()
	if r0.UpBps > 0 || r0.DownBps > 0 || len(r0.Classes) > 0 || r0.SeedUpBps > 0 {
		fmt.Fprintf(out, "access links: %s; seed up %s\n", accessLine(r0.UpBps, r0.DownBps, r0.Classes), testnet.FormatRate(r0.SeedUpBps))
	}
	for _, r := range rep.Runs {
		if r.TimeScale != 1 {
			fmt.Fprintf(out, "testnet %s: time scale %g (the network ran %g times slower than described; times are the described network's)", runName(r.Method, r.Choice), r.TimeScale, r.TimeScale)
		} else {
			fmt.Fprintf(out, "testnet %s: real time", runName(r.Method, r.Choice))
		}
		fmt.Fprintf(out, "; CPU %.0f%% busy during the fetches; goroutines waited for a CPU up to %s (p99; %s at the described rates)\n",
			100*r.CPUUse, fmtMS(r.SchedP99S), fmtMS(r.SchedP99S/max(r.TimeScale, 1)))
		if warn := cpuWarning(r); warn != "" {
			fmt.Fprintf(out, "testnet %s: %s\n", runName(r.Method, r.Choice), warn)
		}
		printTStar(out, "testnet", runName(r.Method, r.Choice), r.TStarS, r.MedianS, r.P95S, r.MaxS)
		printUploads(out, "testnet", runName(r.Method, r.Choice), r.SeedSentBytes, r.Bytes, r.UploadUse)
		printSeedOut(out, "testnet", runName(r.Method, r.Choice), r.SeedOutS, r.TStarS)
		printSeedLeft(out, "testnet", runName(r.Method, r.Choice), r.SeedLeftS, r.TStarS)
		if r.Pushed > 0 && r.BlocksReceived > 0 {
			fmt.Fprintf(out, "testnet %s: %d of the %d blocks received came down the trees (%.1f%%), the rest were fetched; %d arrived twice\n",
				runName(r.Method, r.Choice), r.Pushed, r.BlocksReceived, 100*float64(r.Pushed)/float64(r.BlocksReceived), r.Redundant)
			if r.Adopted > 0 {
				fmt.Fprintf(out, "testnet %s: %d orphans (peers whose parent in a tree left or lied) were adopted\n", runName(r.Method, r.Choice), r.Adopted)
			}
		}
	}
	for k, r := range rep.Runs {
		printChurnLiars(out, r)
		if k < len(rep.Baselines) {
			b := rep.Baselines[k]
			fmt.Fprintf(out, "testnet %s without churn and liars: median %.2f s, p95 %.2f s, max %.2f s; with them %+.0f%% median, %+.0f%% max\n",
				runName(r.Method, r.Choice), b.MedianS, b.P95S, b.MaxS, 100*(r.MedianS/b.MedianS-1), 100*(r.MaxS/b.MaxS-1))
			printTStar(out, "testnet baseline", b.Method, b.TStarS, b.MedianS, b.P95S, b.MaxS)
		}
	}
	for _, r := range rep.Runs {
		for _, e := range r.Errors {
			fmt.Fprintf(out, "%s: %s\n", runName(r.Method, r.Choice), e)
		}
	}
	fmt.Fprintf(out, "total %.1f s, max RSS %.0f MiB, %d CPUs\n", rep.WallSeconds, rep.MaxRSSMiB, rep.CPUs)
}

// secondsOverTStar formats a time in seconds, with its ratio to T* when
// the run had one (tstar, in seconds, is 0 when not).
func secondsOverTStar(s, tstar float64) string {
	if tstar > 0 {
		return fmt.Sprintf("%.2f s (%.2fx T*)", s, s/tstar)
	}
	return fmt.Sprintf("%.2f s", s)
}

// printChurnLiars prints a run's churn events and what its liars did and
// cost, nothing when it had neither.
func printChurnLiars(out io.Writer, r *testnet.Result) {
	if r.Restarts > 0 {
		fmt.Fprintf(out, "testnet %s: %d fetches stored no block for a while and were started again (resuming)\n", runName(r.Method, r.Choice), r.Restarts)
	}
	if r.Churn != (testnet.Churn{}) {
		fmt.Fprintf(out, "testnet %s churn %s: %d peers left mid-fetch, %d came back (%d blocks resumed from their stores), %d joined late; %d/%d honest peers that stayed or came back completed\n",
			runName(r.Method, r.Choice), r.Churn, r.Left, r.Rejoined, r.ResumedBlocks, r.LateJoined, r.Completed, r.Fetchers)
		if r.Left > 0 && r.StayedMaxS > 0 {
			fmt.Fprintf(out, "testnet %s churn: the last of the peers that never left completed at %s",
				runName(r.Method, r.Choice), secondsOverTStar(r.StayedMaxS, r.TStarS))
			if r.BackMaxS > 0 {
				fmt.Fprintf(out, "; of the peers that came back, less the time each was away, at %s", secondsOverTStar(r.BackMaxS, r.TStarS))
			}
			fmt.Fprintln(out)
		}
	}
	if r.Liars > 0 {
		fmt.Fprintf(out, "testnet %s liars: %d (%d corrupt, %d phantom) sent %d corrupt blocks and answered %d offered blocks missing; honest peers received %d corrupt blocks, made %d bans (%d of honest peers)\n",
			runName(r.Method, r.Choice), r.Liars, r.CorruptLiars, r.PhantomLiars, r.LiedCorrupt, r.LiedMissing, r.CorruptReceived, r.Bans, r.HonestBans)
		if r.Rejoined > 0 {
			fmt.Fprintf(out, "testnet %s liars: the peers that came back received %d corrupt blocks after their return\n", runName(r.Method, r.Choice), r.BackCorrupt)
		}
	}
}

// accessLine describes access links: "up U, down D" or the classes.
func accessLine(up, down float64, classes []ts.AccessClass) string {
	if len(classes) == 0 {
		return fmt.Sprintf("up %s, down %s per peer", testnet.FormatRate(up), testnet.FormatRate(down))
	}
	var parts []string
	for _, c := range classes {
		parts = append(parts, fmt.Sprintf("%.0f%% down %s up %s", 100*c.Share, testnet.FormatRate(c.Down), testnet.FormatRate(c.Up)))
	}
	return strings.Join(parts, ", ")
}

// printTStar prints the line testnet and sim swarm share for comparing a
// method's completion times with the fluid lower bound T* (all in seconds);
// nothing when T* does not apply.
func printTStar(out io.Writer, what, method string, tstar, median, p95, maxS float64) {
	if tstar <= 0 {
		return
	}
	fmt.Fprintf(out, "%s %s: T* %.2f s; completion over T*: median %.2fx, p95 %.2fx, max %.2fx\n",
		what, method, tstar, median/tstar, p95/tstar, maxS/tstar)
}

// printUploads prints, as testnet and sim swarm share it, how many copies of
// the file the seed uploaded and how busy the uplinks were.
func printUploads(out io.Writer, what, method string, seedSent, file int64, use float64) {
	if seedSent <= 0 && use <= 0 {
		return
	}
	fmt.Fprintf(out, "%s %s: the seed uploaded %.1f copies of the file; uplinks %.0f%% busy until the last completion\n",
		what, method, float64(seedSent)/float64(max(1, file)), 100*use)
}

// printSeedLeft prints when the seed left (--seed-leaves), nothing when it
// did not.
func printSeedLeft(out io.Writer, what, method string, leftS, tstarS float64) {
	if leftS > 0 {
		fmt.Fprintf(out, "%s %s: the seed left at %s; the peers finished from each other\n", what, method, secondsOverTStar(leftS, tstarS))
	}
}

// printSeedOut prints when every block had left the seed, in seconds and
// over T* (nothing when either is unknown).
func printSeedOut(out io.Writer, what, method string, seedOutS, tstarS float64) {
	if seedOutS <= 0 || tstarS <= 0 {
		return
	}
	fmt.Fprintf(out, "%s %s: every block had left the seed at %.2f s (%.2fx T*)\n", what, method, seedOutS, seedOutS/tstarS)
}

// plotTestnet draws, for each run, the share of fetchers holding the whole
// file against time.
func plotTestnet(runs []*testnet.Result, file string) error {
	p := plot.New()
	p.Title.Text = "Testnet: share of peers holding the whole file"
	if len(runs) > 0 {
		p.Title.Text = fmt.Sprintf("Testnet: %d peers, %.0f MiB, %s latency — peers holding the whole file",
			runs[0].Nodes, float64(runs[0].Bytes)/(1<<20), runs[0].Latency)
	}
	p.X.Label.Text = "time since the fetches started (s)"
	p.Y.Label.Text = "share of fetching peers complete"
	for _, r := range runs {
		pts := make(plotter.XYs, 0, len(r.Completions)+1)
		pts = append(pts, plotter.XY{X: 0, Y: 0})
		for k, x := range r.Completions {
			pts = append(pts, plotter.XY{X: x, Y: float64(k+1) / float64(max(1, r.Fetchers))})
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("testnet: plot: %w", err)
		}
		l.Color = labplot.MethodColor(r.Method)
		l.Width = 2
		l.StepStyle = plotter.PostStep
		s.Color = labplot.MethodColor(r.Method)
		s.Shape = labplot.MethodShape(r.Method)
		s.Radius = 2
		p.Add(l, s)
		p.Legend.Add(fmt.Sprintf("%s (median %.1f s, p95 %.1f s)", runName(r.Method, r.Choice), r.MedianS, r.P95S), l, s)
	}
	// Top left: the curves rise from the bottom left to the top right.
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min, p.Y.Max = 0, 1.1 // room for the legend above the curves
	p.X.Min = 0
	p.Add(plotter.NewGrid())
	return labplot.Save(p, 8*vg.Inch, 5*vg.Inch, file)
}

// methodChoice is one run's method and block choice.
type methodChoice struct {
	method reconcile.Method
	choice peer.BlockChoice
}

// methodChoices pairs every method with every block choice, methods first.
func methodChoices(methods []reconcile.Method, choices []peer.BlockChoice) []methodChoice {
	var out []methodChoice
	for _, m := range methods {
		for _, c := range choices {
			out = append(out, methodChoice{m, c})
		}
	}
	return out
}

// rarityChoices parses --rarity: a comma list of exact, filters and random.
func rarityChoices(s string) ([]peer.BlockChoice, error) {
	var out []peer.BlockChoice
	for _, name := range strings.Split(strings.ToLower(s), ",") {
		var c peer.BlockChoice
		switch strings.TrimSpace(name) {
		case "exact":
			c = peer.BlockRarest
		case "filters":
			c = peer.BlockRarestFilters
		case "random":
			c = peer.BlockRandom
		default:
			return nil, cliutil.Usagef("--rarity %q: want exact, filters, random or a comma list of them", s)
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// runName names a run in the output: its method, and its block choice when
// it is not the default rarest-first from exact counts.
func runName(method, choice string) string {
	switch choice {
	case peer.BlockRarest.String(), "":
		return method
	case peer.BlockRarestFilters.String():
		return method + "/filters"
	}
	return method + "/" + choice
}

// fmtMS words s seconds in milliseconds: "0.8 ms", "12 ms".
func fmtMS(s float64) string {
	ms := s * 1000
	if ms < 10 {
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
