package labnet

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labplot"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/testnet"
)

// simCommand is reconcile sim and its subcommands.
func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "simulate reconciliation time on a transit-stub network with a Chord overlay",
		Description: "A GT-ITM-style transit-stub topology (link delay = rounded length in ms), peers on\n" +
			"random routers joined by Chord, and an event-driven model of reconciliation time:\n" +
			"the protocol outcome comes from the real filter code, message sizes from the real\n" +
			"encoder, compute costs from timing the real code on this machine.\n\n" +
			"Examples:\n" +
			"   reconcile sim topology --preset paper --json\n" +
			"   reconcile sim table4 --preset paper --nodes 200 --trials 100   (also: reconcile sim)\n" +
			"   reconcile sim swarm --nodes 500 --method both --plot swarm.png",
		Subcommands: []*cli.Command{simTopologyCommand(), simTable4Command(), simSwarmCommand()},
		// "reconcile sim" alone runs table4.
		Flags:  simTable4Command().Flags,
		Action: simTable4Command().Action,
	}
}

// simMins are the lowest sensible values of the sim commands' int flags.
var simMins = map[string]int{"nodes": 2, "ring-bits": 1, "successors": 1, "m": 1, "k": 1, "trials": 1, "n": 1,
	"reps": 1, "blocks": 2, "lookups": 1, "sources": 0}

// simNetFlags are the flags that describe the network, shared by every sim command.
func simNetFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "preset", Usage: "topology preset: paper (5050 routers), large (50100), small (110)", Value: "paper"},
		&cli.IntFlag{Name: "transit", Usage: "transit domains T (overrides the preset)"},
		&cli.IntFlag{Name: "transit-routers", Usage: "routers per transit domain Nt"},
		&cli.IntFlag{Name: "stubs", Usage: "stub domains per transit router K"},
		&cli.IntFlag{Name: "stub-routers", Usage: "routers per stub domain Ns"},
		&cli.Float64Flag{Name: "stub-p", Usage: "edge probability inside stub domains (pure random graph)"},
		&cli.IntFlag{Name: "nodes", Usage: "Chord peers", Value: 200},
		&cli.IntFlag{Name: "ring-bits", Usage: "Chord identifier bits (160 = SHA-1)", Value: 160},
		&cli.IntFlag{Name: "successors", Usage: "Chord successor-list length", Value: 8},
		&cli.Float64Flag{Name: "transit-mbps", Usage: "bandwidth of transit links, Mbit/s", Value: ts.DefaultBandwidth.Transit / 1e6},
		&cli.Float64Flag{Name: "transit-stub-mbps", Usage: "bandwidth of transit-stub links, Mbit/s", Value: ts.DefaultBandwidth.TransitStub / 1e6},
		&cli.Float64Flag{Name: "stub-mbps", Usage: "bandwidth of stub links, Mbit/s", Value: ts.DefaultBandwidth.Stub / 1e6},
		&cli.Float64Flag{Name: "access-mbps", Usage: "bandwidth of a peer's access link, Mbit/s", Value: ts.DefaultBandwidth.Access / 1e6},
		&cli.Uint64Flag{Name: "seed", Usage: "seed of the topology, the overlay and the experiment", Value: 1},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON document"},
		labplot.Flag("draw a figure (topology: link delays; table4: Byers/complete time ratios, this run and the paper's; swarm: peers complete over time)"),
	}
}

// simParams returns the topology parameters from --preset and the overrides.
func simParams(c *cli.Context) (ts.Params, error) {
	var p ts.Params
	switch strings.ToLower(c.String("preset")) {
	case "paper":
		p = ts.Paper()
	case "large":
		p = ts.Large()
	case "small":
		p = ts.Small()
	default:
		return p, fmt.Errorf("sim: unknown --preset %q (want paper, large or small)", c.String("preset"))
	}
	for name, dst := range map[string]*int{"transit": &p.Transit, "transit-routers": &p.TransitRouters,
		"stubs": &p.Stubs, "stub-routers": &p.StubRouters} {
		if c.IsSet(name) {
			*dst = c.Int(name)
		}
	}
	if c.IsSet("stub-p") {
		p.StubGraph = ts.GraphModel{Method: ts.PureRandom, Alpha: c.Float64("stub-p")}
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("sim: %w", err)
	}
	return p, nil
}

func simBandwidth(c *cli.Context) ts.Bandwidth {
	return ts.Bandwidth{Transit: c.Float64("transit-mbps") * 1e6, TransitStub: c.Float64("transit-stub-mbps") * 1e6,
		Stub: c.Float64("stub-mbps") * 1e6, Access: c.Float64("access-mbps") * 1e6}
}

// simNetwork builds the topology, paths and overlay the flags describe.
func simNetwork(c *cli.Context) (*ts.Network, error) {
	p, err := simParams(c)
	if err != nil {
		return nil, err
	}
	bw := simBandwidth(c)
	if err := bw.Validate(); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if c.Int("nodes") < 2 {
		return nil, cliutil.Usagef("--nodes %d: want at least 2", c.Int("nodes"))
	}
	if b := c.Int("ring-bits"); b > 160 {
		return nil, cliutil.Usagef("--ring-bits %d: want 1 to 160", b)
	}
	net, err := ts.NewNetwork(p, bw, c.Int("nodes"),
		ts.ChordConfig{Bits: c.Int("ring-bits"), Successors: c.Int("successors")}, c.Uint64("seed"))
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	return net, nil
}

// simMethods parses --method.
func simMethods(c *cli.Context) ([]reconcile.Method, error) {
	methods, ok := parseMethods(c.String("method"))
	if !ok {
		return nil, fmt.Errorf("sim: --method %q: want complete, byers, bitfield, iblt, ccbf, both (complete and byers), all, or a comma list", c.String("method"))
	}
	return methods, nil
}

// parseMethods reads a --method value: a method's name, both (complete and
// byers), all, or a comma list of those. The methods come sorted, each
// once; ok is false if a name is unknown.
func parseMethods(list string) (methods []reconcile.Method, ok bool) {
	for _, s := range strings.Split(strings.ToLower(list), ",") {
		switch s = strings.TrimSpace(s); s {
		case "both":
			methods = append(methods, reconcile.Methods...)
		case "all":
			methods = append(methods, reconcile.AllMethods...)
		default:
			m, err := reconcile.ParseMethod(s)
			if err != nil {
				return nil, false
			}
			methods = append(methods, m)
		}
	}
	slices.Sort(methods)
	return slices.Compact(methods), true
}

// simFilter returns the filter parameters from the flags.
func simFilter(c *cli.Context) (ts.FilterConfig, error) {
	f := ts.PaperFilter()
	bs, err := cliutil.FlagSize(c, "block-size", 1, 16<<20)
	if err != nil {
		return f, err
	}
	f.M, f.K, f.BlockBytes = c.Int("m"), c.Int("k"), int(bs)
	return f, nil
}

func simFilterFlags() []cli.Flag {
	f := ts.PaperFilter()
	return []cli.Flag{
		&cli.IntFlag{Name: "m", Usage: "filter counters (bits for Byers)", Value: f.M},
		&cli.IntFlag{Name: "k", Usage: "hash functions", Value: f.K},
		&cli.StringFlag{Name: "block-size", Usage: "bytes per block (a multiple of 64 for the RS(8191, kk) code of Byers), up to 16MiB", Value: strconv.Itoa(f.BlockBytes)},
		&cli.StringFlag{Name: "method", Usage: "complete, byers, bitfield, iblt, ccbf, both (complete and byers) or all", Value: "both"},
	}
}

// ---- topology ----

type simTopologyReport struct {
	ts.Stats
	Params ts.Params      `json:"params"`
	Seed   uint64         `json:"seed"`
	Chord  ts.LookupStats `json:"chord"`
	// Paper's figures for comparison.
	PaperRouters       int     `json:"paper_routers"`
	PaperLinks         int     `json:"paper_links"`
	PaperMeanLinkDelay float64 `json:"paper_mean_link_delay_ms"`
	Seconds            float64 `json:"seconds"`
}

func simTopologyCommand() *cli.Command {
	return &cli.Command{
		Name:  "topology",
		Usage: "generate a transit-stub topology and print its figures and Chord lookup figures",
		Description: "Prints routers, links (undirected), arcs (GT-ITM counts each link twice), mean link\n" +
			"delay, mean shortest-path delay and diameter (exact: all sources, unless --sources),\n" +
			"and the mean hop count and latency of random Chord lookups among --nodes peers.\n\n" +
			"Example:\n   reconcile sim topology --preset paper --json",
		Flags: append(simNetFlags(),
			&cli.IntFlag{Name: "sources", Usage: "path figures from this many random sources (0 = all routers; default all up to 10000 routers, else 500)"},
			&cli.IntFlag{Name: "lookups", Usage: "random Chord lookups to measure", Value: 10000},
		),
		Action: func(c *cli.Context) error {
			t0 := time.Now()
			if err := cliutil.CheckAtLeast(c, simMins); err != nil {
				return err
			}
			plotFile, err := labplot.CheckPath(c)
			if err != nil {
				return err
			}
			net, err := simNetwork(c)
			if err != nil {
				return err
			}
			sources := c.Int("sources")
			if !c.IsSet("sources") && net.Topology.Routers() > 10000 {
				sources = 500 // all-pairs on a large topology takes minutes
			}
			rep := simTopologyReport{Stats: net.Topology.Stats(sources), Params: net.Topology.Params(),
				Seed: c.Uint64("seed"), PaperRouters: 5050, PaperLinks: 25168, PaperMeanLinkDelay: 40.5}
			if rep.Chord, err = net.Overlay.MeasureLookups(c.Int("lookups"), c.Uint64("seed")); err != nil {
				return fmt.Errorf("sim topology: %w", err)
			}
			rep.Seconds = time.Since(t0).Seconds()
			if c.Bool("json") {
				if err := cliutil.WriteJSON(c.App.Writer, rep); err != nil {
					return err
				}
				return plotLinkDelays(net.Topology, plotFile)
			}
			w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
			fmt.Fprintf(w, "\tthis run\tpaper\n")
			fmt.Fprintf(w, "routers\t%d\t%d\n", rep.Routers, rep.PaperRouters)
			fmt.Fprintf(w, "links (undirected)\t%d\t%d / 2 = %d ?\n", rep.Links, rep.PaperLinks, rep.PaperLinks/2)
			fmt.Fprintf(w, "arcs (2 per link)\t%d\t%d ?\n", rep.Arcs, rep.PaperLinks)
			fmt.Fprintf(w, "mean link delay ms\t%.2f\t%.1f\n", rep.MeanLinkDelayMS, rep.PaperMeanLinkDelay)
			fmt.Fprintf(w, "mean path delay ms\t%.1f\t\n", rep.MeanPathDelayMS)
			fmt.Fprintf(w, "diameter ms\t%.0f\t\n", rep.DiameterMS)
			fmt.Fprintf(w, "links transit / transit-stub / stub\t%d / %d / %d\t\n", rep.TransitLinks, rep.TransitStubLinks, rep.StubLinks)
			fmt.Fprintf(w, "Chord peers\t%d\t200\n", net.Overlay.Len())
			fmt.Fprintf(w, "Chord mean hops (½·log2 N = %.2f)\t%.2f\t\n", rep.Chord.HalfLog2N, rep.Chord.MeanHops)
			fmt.Fprintf(w, "Chord lookup ms median / p95\t%.0f / %.0f\t\n", rep.Chord.MedianMS, rep.Chord.P95MS)
			fmt.Fprintf(w, "seconds\t%.2f\t\n", rep.Seconds)
			if err := w.Flush(); err != nil {
				return err
			}
			return plotLinkDelays(net.Topology, plotFile)
		},
	}
}

// ---- table4 ----

type simTable4Report struct {
	Rows        []ts.Table4Row `json:"rows"`
	Costs       *ts.Costs      `json:"costs,omitempty"`
	Compute     string         `json:"compute"`
	DecodeCost  string         `json:"decode_cost"`
	Chord       ts.LookupStats `json:"chord"`
	Topology    ts.Stats       `json:"topology"`
	Peers       int            `json:"peers"`
	Trials      int            `json:"trials"`
	Seed        uint64         `json:"seed"`
	WallSeconds float64        `json:"wall_seconds"`
}

func simTable4Command() *cli.Command {
	return &cli.Command{
		Name:  "table4",
		Usage: "the paper's Table 4: reconciliation time of complete vs Byers between Chord peers",
		Description: "For each row (kk, n0 as in Table 3; n = 4000, m = 32768, k = 6) and method, --trials\n" +
			"reconciliations between random pairs of peers (the same pairs for both methods):\n" +
			"Chord lookup of B, then real reconcile sessions whose messages cross the simulated\n" +
			"network: A's filter to B, B's compute, B's blocks back, Byers' RS decode.\n" +
			"--decode-cost paper prices the decode with the paper's Table 3 times instead of\n" +
			"measuring the real erasure code here.\n\n" +
			"Example:\n   reconcile sim table4 --preset paper --nodes 200 --trials 100 --plot table4.png",
		Flags: append(append(simNetFlags(), simFilterFlags()...),
			&cli.IntFlag{Name: "trials", Usage: "trials per row and method", Value: 100},
			&cli.IntFlag{Name: "n", Usage: "blocks held by each of A and B", Value: 4000},
			&cli.StringFlag{Name: "decode-cost", Usage: "measured (real erasure code here) or paper (Table 3's decode times)", Value: "measured"},
			&cli.StringFlag{Name: "compute", Usage: "model (step costs calibrated once from the real code, medians: robust to machine load, deterministic for a calibration) or measured (wall clock around every real session step)", Value: "model"},
			&cli.IntFlag{Name: "reps", Usage: "timed runs per cost calibration (median), with --compute model", Value: 5},
		),
		Action: func(c *cli.Context) error {
			t0 := time.Now()
			if err := cliutil.CheckAtLeast(c, simMins); err != nil {
				return err
			}
			plotFile, err := labplot.CheckPath(c)
			if err != nil {
				return err
			}
			methods, err := simMethods(c)
			if err != nil {
				return err
			}
			n := c.Int("n")
			if n < 1 {
				return fmt.Errorf("sim table4: --n must be positive, got %d", n)
			}
			if c.Int("trials") < 1 { // the library would take 0 for its default of 100
				return fmt.Errorf("sim table4: --trials must be at least 1, got %d", c.Int("trials"))
			}
			net, err := simNetwork(c)
			if err != nil {
				return err
			}
			f, err := simFilter(c)
			if err != nil {
				return err
			}
			rows := []ts.Row{}
			for _, r := range ts.PaperTable4 {
				rows = append(rows, ts.Row{KK: 2*n - r.N0*n/4000, N0: r.N0 * n / 4000})
			}
			cfg := ts.Table4Config{Filter: f, N: n, Rows: rows, Trials: c.Int("trials"), Methods: methods, Seed: c.Uint64("seed")}
			switch c.String("decode-cost") {
			case "measured":
			case "paper":
				cfg.DecodeMS = ts.PaperDecodeMS
			default:
				return fmt.Errorf("sim table4: --decode-cost %q: want measured or paper", c.String("decode-cost"))
			}
			switch c.String("compute") {
			case "measured":
			case "model":
				if cfg.Costs, err = ts.Calibrate(f, n, 2*n, c.Int("reps"), c.Uint64("seed")); err != nil {
					return fmt.Errorf("sim table4: %w", err)
				}
			default:
				return fmt.Errorf("sim table4: --compute %q: want measured or model", c.String("compute"))
			}
			res, err := ts.RunTable4(net, cfg)
			if err != nil {
				return fmt.Errorf("sim table4: %w", err)
			}
			rep := simTable4Report{Rows: res, Costs: cfg.Costs, Compute: c.String("compute"), DecodeCost: c.String("decode-cost"), Peers: net.Overlay.Len(),
				Trials: c.Int("trials"), Seed: c.Uint64("seed"), Topology: net.Topology.Stats(200)}
			if rep.Chord, err = net.Overlay.MeasureLookups(2000, c.Uint64("seed")); err != nil {
				return fmt.Errorf("sim table4: %w", err)
			}
			rep.WallSeconds = time.Since(t0).Seconds()
			if c.Bool("json") {
				if err := cliutil.WriteJSON(c.App.Writer, rep); err != nil {
					return err
				}
			} else {
				printTable4(c.App.Writer, rep)
			}
			return plotTable4(res, plotFile)
		},
	}
}

func printTable4(out io.Writer, rep simTable4Report) {
	fmt.Fprintf(out, "Reconciliation time (ms), mean of %d trials; %d Chord peers on %d routers (%d links, mean link delay %.1f ms).\n",
		rep.Trials, rep.Peers, rep.Topology.Routers, rep.Topology.Links, rep.Topology.MeanLinkDelayMS)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "kk\tn0\tByers\tcomplete\tByers/complete\tByers-complete\tpaper Byers\tpaper complete\tpaper ratio\tpaper diff\tByers decode\tmissed\tredundant\tlookup\t\n")
	for _, r := range rep.Rows {
		cell := func(m *ts.MethodResult, f func(*ts.MethodResult) string) string {
			if m == nil {
				return "-"
			}
			return f(m)
		}
		ms := func(m *ts.MethodResult) string { return fmt.Sprintf("%.0f", m.MeanMS) }
		pb, pc, pr, pd := "-", "-", "-", "-"
		if r.Paper != nil {
			pb, pc, pr = fmt.Sprintf("%.0f", r.Paper.ByersMS), fmt.Sprintf("%.0f", r.Paper.CompleteMS), fmt.Sprintf("%.3f", r.Paper.ByersMS/r.Paper.CompleteMS)
			pd = fmt.Sprintf("%.0f", r.Paper.ByersMS-r.Paper.CompleteMS)
		}
		ratio, diff := "-", "-"
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.3f", r.Ratio)
			diff = fmt.Sprintf("%.0f", r.Byers.MeanMS-r.Complete.MeanMS)
		}
		lookup := r.Complete
		if lookup == nil {
			lookup = r.Byers
		}
		if lookup == nil && len(r.Others) > 0 {
			lookup = r.Others[0]
		}
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t\n", r.KK, r.N0,
			cell(r.Byers, ms), cell(r.Complete, ms), ratio, diff, pb, pc, pr, pd,
			cell(r.Byers, func(m *ts.MethodResult) string { return fmt.Sprintf("%.1f", m.DecodeMS) }),
			cell(r.Byers, func(m *ts.MethodResult) string { return fmt.Sprintf("%.1f", m.Missed) }),
			cell(r.Complete, func(m *ts.MethodResult) string { return fmt.Sprintf("%.2f", m.Redundant) }),
			lookup.LookupMS)
	}
	w.Flush()
	printTable4Others(out, rep)
	fmt.Fprintf(out, "Chord: mean %.2f hops (½·log2 N = %.2f), lookup median %.0f ms, p95 %.0f ms.\n",
		rep.Chord.MeanHops, rep.Chord.HalfLog2N, rep.Chord.MedianMS, rep.Chord.P95MS)
	if rep.Costs != nil {
		fmt.Fprintf(out, "Compute model (calibrated here): CBF subtract %.3f ms, query %.3f µs/block; Bloom query %.3f µs/block.\n",
			rep.Costs.SubtractMS, rep.Costs.CBFQueryUS, rep.Costs.BloomQueryUS)
	}
	fmt.Fprintf(out, "Compute: %s; decode cost: %s.\n", rep.Compute, rep.DecodeCost)
	fmt.Fprintf(out, "%.2f s\n", rep.WallSeconds)
}

// printTable4Others prints the methods beyond the paper's (bitfield, iblt, ccbf),
// timed by the wall clock around their real sessions.
func printTable4Others(out io.Writer, rep simTable4Report) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, r := range rep.Rows {
		for _, m := range r.Others {
			if !header {
				fmt.Fprintln(out, "Other methods (compute timed by the wall clock):")
				fmt.Fprintf(w, "kk\tn0\tmethod\tmean ms\tfilter ms\tcompute ms\tblocks ms\tfilter B\tsent\tredundant\tmissed\t\n")
				header = true
			}
			fmt.Fprintf(w, "%d\t%d\t%v\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%.1f\t%.2f\t%.1f\t\n", r.KK, r.N0, m.Method,
				m.MeanMS, m.FilterMS, m.ComputeMS, m.BlocksMS, m.FilterBytes, m.Sent, m.Redundant, m.Missed)
		}
	}
	w.Flush()
}

// ---- swarm ----

type simSwarmReport struct {
	Runs        []*ts.SwarmResult `json:"runs"`
	Costs       *ts.Costs         `json:"costs"`
	Topology    ts.Stats          `json:"topology"`
	Share       float64           `json:"share"`
	Seed        uint64            `json:"seed"`
	WallSeconds float64           `json:"wall_seconds"`
	// SetupSeconds covers topology generation, overlay construction and calibration.
	SetupSeconds float64 `json:"setup_seconds"`
	MaxRSSMiB    float64 `json:"max_rss_mib"`
}

func simSwarmCommand() *cli.Command {
	return &cli.Command{
		Name:  "swarm",
		Usage: "distribute a file over the Chord swarm by repeated reconciliation with neighbours",
		Description: "Every peer starts with a random --share of the blocks (--share 0: one peer seeds the\n" +
			"whole file, the others start empty) and reconciles with its Chord neighbours (successor\n" +
			"list, then fingers) until it holds the file, --parallel neighbours at a time, taking at\n" +
			"most --window blocks per exchange; prints completion time per peer (median, p95, max)\n" +
			"and bytes by message type for each method. With --watch, peers behave as package\n" +
			"peer's fetches do (as in reconcile testnet): one reconciliation per source keeps a\n" +
			"watch, new blocks are announced by have messages and asked for in windows sized to each\n" +
			"source's rate, a seed super-seeds (--super-seed=false: offers every block) and idle\n" +
			"sources give way to spare peers; --seed-leaves makes the seed leave once every block is\n" +
			"held by a fetcher. The seed is the peer reconcile testnet seeds from for the same --seed.\n" +
			"With --central or --trees it times a push schedule instead of a protocol of pulls:\n" +
			"the central schedule (free decisions from instant knowledge of every peer's blocks)\n" +
			"or pushes down stripe trees; they say how close to T* a schedule can come.\n" +
			"With access links (--up, --down, --classes; the model testnet uses: every peer's upload\n" +
			"and download shared by its transfers, plus the route's delay) and one seed, it prints\n" +
			"the fluid lower bound T* and the completion times over T*, in the same lines as\n" +
			"reconcile testnet for the same parameters (--blocks x --block-size = testnet's --size).\n\n" +
			"Example:\n" +
			"   reconcile sim swarm --preset paper --nodes 200 --method both --plot swarm.png\n" +
			"   reconcile sim swarm --preset large --nodes 10000 --method complete\n" +
			"   reconcile sim swarm --nodes 200 --blocks 64 --block-size 256KiB --share 0 --up 20Mbit --down 100Mbit \\\n" +
			"       --parallel 8 --window 16 --method complete,bitfield\n" +
			"   reconcile sim swarm --nodes 200 --blocks 64 --block-size 256KiB --share 0 --up 20Mbit --down 100Mbit \\\n" +
			"       --watch --method complete   # the model of reconcile testnet --peers 200 --size 16MiB ...\n" +
			"   reconcile sim swarm --nodes 200 --blocks 256 --block-size 64KiB --share 0 --up 20Mbit --down 100Mbit \\\n" +
			"       --trees 8 --trees-by-delay --method complete",
		Flags: append(append(simNetFlags(), simFilterFlags()...),
			&cli.IntFlag{Name: "blocks", Usage: "source blocks of the file (kk)", Value: 5000},
			&cli.Float64Flag{Name: "share", Usage: "fraction of the blocks each peer starts with; 0: one seed, the others empty", Value: 0.25},
			&cli.StringFlag{Name: "up", Usage: "every peer's upload capacity, shared by its transfers: bits/s with SI prefixes (20Mbit) or bytes/s with IEC prefixes (2MiB/s); none for no cap", Value: "none"},
			&cli.StringFlag{Name: "down", Usage: "every peer's download capacity (e.g. 100Mbit); none for no cap", Value: "none"},
			&cli.StringFlag{Name: "classes", Usage: "heterogeneous access links share:down/up,... (e.g. 0.5:10Mbit/2Mbit,0.5:100Mbit/20Mbit); replaces --up and --down"},
			&cli.StringFlag{Name: "seed-up", Usage: "the seed's upload capacity with --share 0 (default: as the other peers')", Value: "none"},
			&cli.IntFlag{Name: "parallel", Usage: "exchanges a peer runs at once, each with another neighbour", Value: 1},
			&cli.IntFlag{Name: "window", Usage: "most blocks one exchange carries, chosen at random (0: all the neighbour offers)", Value: 0},
			&cli.BoolFlag{Name: "rarest-first", Usage: "with --window: take the blocks the fewest neighbours hold (exact counts), not random ones"},
			&cli.StringFlag{Name: "rarity", Usage: "with --window, block choices to run side by side: random, exact (rarest-first, exact counts), filters (rarest-first, counts from the sum of the neighbours' CBFs), or a comma list (default: as --rarest-first)"},
			&cli.IntFlag{Name: "upload-slots", Usage: "exchanges a peer sends blocks to at once; others get nothing and move on (0: no limit)"},
			&cli.BoolFlag{Name: "watch", Usage: "model the peers as package peer's fetches are: one reconciliation per source keeps a watch, new blocks are announced by have messages and asked for with a window, a seed super-seeds (--parallel: sources, default 16; --window: default 16; rarest-first by default); without it, peers reconcile again and again in rounds"},
			&cli.StringFlag{Name: "latency", Usage: "with --watch, --central or --trees: transitstub (the routes' delays) or none (only the access links take time, as testnet's --latency none)", Value: "transitstub"},
			&cli.BoolFlag{Name: "free-control", Usage: "with --watch: haves, requests and answers cross in no time, blocks still over the routes' delays (the best any way of announcing blocks could do with this schedule)"},
			&cli.BoolFlag{Name: "super-seed", Value: true, Usage: "with --watch and --share 0: the seed super-seeds, as the testnet's does by default (each watcher offered a few blocks, those sent least often first); --super-seed=false to offer every block and answer busy as any peer, so that the fetchers' block choice decides which blocks leave the seed first"},
			&cli.BoolFlag{Name: "seed-leaves", Usage: "with --watch and --share 0: the seed leaves once every block is held by a fetcher, as testnet's --seed-leaves (the blocks still on its uplink are lost); the fetchers finish from each other"},
			&cli.BoolFlag{Name: "upload-rarest", Usage: "with --watch: each peer sends the blocks asked of it one at a time, the one fewest of its watchers hold first, not in the order asked (a what-if)"},
			&cli.BoolFlag{Name: "central", Usage: "time the central schedule instead of a protocol: a scheduler that knows every peer's blocks and costs nothing keeps every uplink sending the rarest block it holds to the neediest peer lacking it (any peer); a real schedule, so an upper bound on the best one, to set beside T*; needs --share 0 and access links (--latency none applies)"},
			&cli.IntFlag{Name: "trees", Usage: "time pushes down this many stripe trees instead of the pulls of reconcile testnet (SplitStream-like: every fetcher an inner node of one tree, a leaf of the others; no knowledge of what other peers hold needed); needs --share 0 and access links"},
			&cli.BoolFlag{Name: "trees-by-delay", Usage: "with --trees: place each fetcher under the parent it would hear from first, not breadth first in random order"},
			&cli.BoolFlag{Name: "central-lag", Usage: "with --central: decisions see other peers' blocks as a push protocol's announcements would, a delay late (pushes a peer turns out to hold already are wasted)"},
			&cli.BoolFlag{Name: "central-neighbours", Usage: "with --central: peers send only to their overlay neighbours and to the peers that have them as one"},
			&cli.StringFlag{Name: "central-receiver", Usage: "with --central: who gets a block among the peers lacking it: neediest (fewest blocks), random or nearest", Value: "neediest"},
			&cli.StringFlag{Name: "central-block", Usage: "with --central: which block a sender sends: rarest, or random (the seed then sends some blocks twice before others once)", Value: "rarest"},
			&cli.BoolFlag{Name: "least-served", Usage: "with --window: the sender offers the blocks it has sent least often first (super-seeding)"},
			&cli.IntFlag{Name: "reps", Usage: "timed runs per cost measurement (median)", Value: 5},
		),
		Action: func(c *cli.Context) error {
			t0 := time.Now()
			if err := cliutil.CheckAtLeast(c, simMins); err != nil {
				return err
			}
			plotFile, err := labplot.CheckPath(c)
			if err != nil {
				return err
			}
			methods, err := simMethods(c)
			if err != nil {
				return err
			}
			if slices.Contains(strings.Split(strings.ReplaceAll(strings.ToLower(c.String("method")), " ", ""), ","), "all") {
				// The swarm model runs no iblt, the watch model no byers.
				methods = slices.DeleteFunc(slices.Clone(methods), func(m reconcile.Method) bool {
					return m == reconcile.IBLT || (m == reconcile.Byers && c.Bool("watch"))
				})
			}
			net, err := simNetwork(c)
			if err != nil {
				return err
			}
			f, err := simFilter(c)
			if err != nil {
				return err
			}
			kk := c.Int("blocks")
			if kk < 2 {
				return fmt.Errorf("sim swarm: --blocks must be at least 2, got %d", kk)
			}
			if sh := c.Float64("share"); !(sh >= 0 && sh <= 1) {
				return fmt.Errorf("sim swarm: --share must be in [0, 1], got %g", sh)
			}
			acc, err := simAccess(c)
			if err != nil {
				return err
			}
			if acc.Central != nil || acc.Trees > 0 {
				// A push schedule moves blocks with no reconciliation: one run,
				// labelled complete (the default).
				if c.IsSet("method") && !slices.Equal(methods, []reconcile.Method{reconcile.Complete}) || c.IsSet("rarity") || c.IsSet("rarest-first") {
					return cliutil.Usagef("--central and --trees time a schedule of pushes, not a reconciliation method or block choice: give no --rarity or --rarest-first, and no --method but complete")
				}
				methods = []reconcile.Method{reconcile.Complete}
			}
			choices, err := swarmChoices(c)
			if err != nil {
				return err
			}
			costs, err := ts.Calibrate(f, max(1, int(float64(kk)*c.Float64("share"))), kk, c.Int("reps"), c.Uint64("seed"))
			if err != nil {
				return fmt.Errorf("sim swarm: %w", err)
			}
			rep := simSwarmReport{Costs: costs, Share: c.Float64("share"), Seed: c.Uint64("seed"),
				Topology: net.Topology.Stats(50)}
			rep.SetupSeconds = time.Since(t0).Seconds()
			for _, m := range methods {
				for _, choose := range choices {
					sc := acc
					sc.Filter, sc.Blocks, sc.Share, sc.OneSeed, sc.Method = f, kk, c.Float64("share"), c.Float64("share") == 0, m
					sc.Seed, sc.DecodeReps = c.Uint64("seed"), c.Int("reps")
					choose(&sc)
					r, err := ts.RunSwarm(net, sc, costs)
					if err != nil {
						return fmt.Errorf("sim swarm: %v: %w", m, err)
					}
					rep.Runs = append(rep.Runs, r)
				}
			}
			rep.WallSeconds = time.Since(t0).Seconds()
			rep.MaxRSSMiB = maxRSSMiB()
			if c.Bool("json") {
				if err := cliutil.WriteJSON(c.App.Writer, rep); err != nil {
					return err
				}
				return plotSwarm(rep.Runs, plotFile)
			}
			scen := fmt.Sprintf("each peer starting with %.0f%%", 100*rep.Share)
			if rep.Share == 0 {
				scen = "one seed, the others empty"
			}
			how := fmt.Sprintf("%d exchanges at a time per peer, window %d", acc.Parallel, acc.MaxBlocks)
			if acc.Trees > 0 {
				how = fmt.Sprintf("pushes down %d stripe trees", acc.Trees)
				if acc.TreesByDelay {
					how += " placed by delay"
				}
				if acc.NoDelay {
					how += ", no route delays"
				}
			}
			if cs := acc.Central; cs != nil {
				how = "the central schedule (free decisions, knowledge "
				if cs.Lag {
					how += "a delay late"
				} else {
					how += "at once"
				}
				how += fmt.Sprintf(", %s blocks to the %s receiver", c.String("central-block"), cs.Receiver)
				if cs.Neighbours {
					how += " among neighbours)"
				} else {
					how += " among all peers)"
				}
				if acc.NoDelay {
					how += ", no route delays"
				}
			}
			if acc.Watch {
				how = fmt.Sprintf("watches of %d sources per peer, windows up to %d", acc.Parallel, acc.MaxBlocks)
				if acc.NoDelay {
					how += ", no route delays"
				}
				if acc.FreeControl {
					how += ", free control messages"
				}
				if acc.UploadRarest {
					how += ", rarest blocks uploaded first"
				}
			}
			fmt.Fprintf(c.App.Writer, "%d peers on %d routers, file of %.1f MiB in %d blocks, %s; %s.\n",
				net.Overlay.Len(), net.Topology.Routers(), float64(kk)*float64(f.BlockBytes)/(1<<20), kk, scen, how)
			w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(w, "method\tcompleted\tmedian ms\tp95 ms\tmax ms\trounds/peer\tfilter MiB\tblocks MiB\tredundant\tmissed\twall s\t\n")
			for _, r := range rep.Runs {
				fmt.Fprintf(w, "%v\t%d/%d\t%.0f\t%.0f\t%.0f\t%.1f\t%.2f\t%.2f\t%d\t%d\t%.1f\t\n", swarmLabel(r, len(choices)), r.Completed, r.Fetchers,
					r.MedianMS, r.P95MS, r.MaxMS, r.MeanRounds, cliutil.MiB(r.Bytes["filter"]), cliutil.MiB(r.Bytes["blocks"]),
					r.RedundantBlocks, r.MissedBlocks, r.WallSeconds)
			}
			w.Flush()
			if acc.HasAccessLinks() {
				seedUp := testnet.FormatRate(cmp.Or(acc.SeedUp, acc.Up))
				if acc.SeedUp == 0 && len(acc.Classes) > 0 {
					seedUp = "as its class"
				}
				fmt.Fprintf(c.App.Writer, "access links: %s; seed up %s\n", accessLine(acc.Up, acc.Down, acc.Classes), seedUp)
			}
			for _, r := range rep.Runs {
				printTStar(c.App.Writer, "sim", swarmLabel(r, len(choices)), r.TStarMS/1000, r.MedianMS/1000, r.P95MS/1000, r.MaxMS/1000)
				printUploads(c.App.Writer, "sim", swarmLabel(r, len(choices)), r.SeedSentBytes, r.FileBytes, r.UploadUse)
				printSeedOut(c.App.Writer, "sim", swarmLabel(r, len(choices)), r.SeedOutMS/1000, r.TStarMS/1000)
				printSeedLeft(c.App.Writer, "sim", swarmLabel(r, len(choices)), r.SeedLeftMS/1000, r.TStarMS/1000)
			}
			fmt.Fprintf(c.App.Writer, "total %.1f s (setup %.1f s), max RSS %.0f MiB\n", rep.WallSeconds, rep.SetupSeconds, rep.MaxRSSMiB)
			return plotSwarm(rep.Runs, plotFile)
		},
	}
}

// ---- plots ----
// Each plot function does nothing when file is "".

// maxRSSMiB returns the process's peak resident set size in MiB from
// /proc/self/status (0 where unavailable).
func maxRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%f", &kb); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}
