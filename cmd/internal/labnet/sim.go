package labnet

import (
	"fmt"
	"io"
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
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
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
		&cli.Float64Flag{Name: "transit-mbps", Usage: "bandwidth of transit links, Mbit/s", Value: topology.DefaultBandwidth.Transit / 1e6},
		&cli.Float64Flag{Name: "transit-stub-mbps", Usage: "bandwidth of transit-stub links, Mbit/s", Value: topology.DefaultBandwidth.TransitStub / 1e6},
		&cli.Float64Flag{Name: "stub-mbps", Usage: "bandwidth of stub links, Mbit/s", Value: topology.DefaultBandwidth.Stub / 1e6},
		&cli.Float64Flag{Name: "access-mbps", Usage: "bandwidth of a peer's access link, Mbit/s", Value: topology.DefaultBandwidth.Access / 1e6},
		&cli.Uint64Flag{Name: "seed", Usage: "seed of the topology, the overlay and the experiment", Value: 1},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON document"},
		labplot.Flag("draw a figure (topology: link delays; table4: Byers/complete time ratios, this run and the paper's; swarm: peers complete over time)"),
	}
}

// simParams returns the topology parameters from --preset and the overrides.
func simParams(c *cli.Context) (topology.Params, error) {
	var p topology.Params
	switch strings.ToLower(c.String("preset")) {
	case "paper":
		p = topology.Paper()
	case "large":
		p = topology.Large()
	case "small":
		p = topology.Small()
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
		p.StubGraph = topology.GraphModel{Method: topology.PureRandom, Alpha: c.Float64("stub-p")}
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("sim: %w", err)
	}
	return p, nil
}

func simBandwidth(c *cli.Context) topology.Bandwidth {
	return topology.Bandwidth{Transit: c.Float64("transit-mbps") * 1e6, TransitStub: c.Float64("transit-stub-mbps") * 1e6,
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
	topology.Stats
	Params topology.Params `json:"params"`
	Seed   uint64          `json:"seed"`
	Chord  ts.LookupStats  `json:"chord"`
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
	Topology    topology.Stats `json:"topology"`
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
