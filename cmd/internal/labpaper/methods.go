package labpaper

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labplot"
	"github.com/reconcile-p2p/reconcile/cmd/internal/methods"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// methodsCommand is reconcile experiment methods.
func methodsCommand() *cli.Command {
	return &cli.Command{
		Name:  "methods",
		Usage: "every reconciliation method on the same work: bytes, round trips, compute, missed and redundant blocks",
		Description: "Two peers hold n blocks each of a file of n + d blocks, each lacking d of the other's\n" +
			"(|S_A ∩ S_B| = n - d). For every d of the sweep and every method (complete, byers,\n" +
			"bitfield, iblt, ccbf) real sessions run through the message codec with offers (block\n" +
			"indices, no payloads), A pulling from B unless --two-way. Byers runs as in Table 3:\n" +
			"RS(--nn, n + d) coded blocks, (nn + n0)/2 a peer; its erasure decoding is not counted\n" +
			"here (see table3). The default sweep includes the paper's Table 3 points (n0 = n - d in\n" +
			"{3000, 2000, 1000, 500}); the table shows the paper's figures there.\n\n" +
			"Example:\n   reconcile experiment methods --n 4000 --diff 1,10,100,1000,4000 --trials 5 --plot methods.png",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "n", Value: methods.Default().N, Usage: "blocks each peer holds"},
			&cli.IntSliceFlag{Name: "diff", Usage: "differences d, 1 <= d <= n (default 1,3,10,30,100,300,1000,2000,3000,3500,4000, scaled to n)"},
			&cli.IntFlag{Name: "trials", Value: methods.Default().Trials, Usage: "trials per point and method"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed (same seed, same counts)"},
			&cli.StringFlag{Name: "method", Usage: "comma-separated methods to run (default all: complete,byers,bitfield,iblt,ccbf)"},
			&cli.IntFlag{Name: "nn", Value: methods.Default().NN, Usage: "length of Byers' Reed–Solomon code (points with n + d > nn skip Byers)"},
			&cli.BoolFlag{Name: "two-way", Usage: "both peers end with S_A ∪ S_B (default: A pulls from B)"},
			&cli.StringFlag{Name: "block-size", Value: "256KiB", Usage: "payload a redundant block costs when ranking the methods (chunker's default), up to 16MiB"},
			&cli.IntFlag{Name: "universe", Usage: "blocks of the file when more than n + d (the rest held by neither peer; skips Byers). Filters are sized for n, as for offers: when the file is over 2n blocks, complete and ccbf offer many blocks A holds (an index each)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document {\"rows\": [...]}"},
			cliutil.ProgressFlag(),
			labplot.Flag("draw bytes on the wire against d (log scales), missed blocks marked,"),
		},
		Action: runMethodsCommand,
	}
}

func runMethodsCommand(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("methods takes no arguments, got %q", c.Args().First())
	}
	if err := cliutil.CheckAtLeast(c, map[string]int{"n": 1, "trials": 1, "nn": 1}); err != nil {
		return err
	}
	plotFile, err := labplot.CheckPath(c)
	if err != nil {
		return err
	}
	cfg := methods.Default()
	cfg.N, cfg.Trials, cfg.Seed, cfg.NN, cfg.TwoWay = c.Int("n"), c.Int("trials"), c.Uint64("seed"), c.Int("nn"), c.Bool("two-way")
	cfg.Universe = c.Int("universe")
	switch {
	case cfg.N < 1:
		return fmt.Errorf("--n must be at least 1, got %d", cfg.N)
	case cfg.Trials < 1:
		return fmt.Errorf("--trials must be at least 1, got %d", cfg.Trials)
	}
	bs, err := cliutil.FlagSize(c, "block-size", 0, 16<<20)
	if err != nil {
		return err
	}
	blockSize := int(bs)
	if ds := c.IntSlice("diff"); len(ds) > 0 {
		cfg.Diffs = ds
	} else if cfg.N != methods.Default().N {
		cfg.Diffs = scaleDiffs(cfg.N)
	}
	for _, d := range cfg.Diffs {
		if d < 1 || d > cfg.N {
			return fmt.Errorf("--diff %d outside [1, n = %d]", d, cfg.N)
		}
	}
	if cfg.Universe < 0 || cfg.Universe > 1<<24 {
		return fmt.Errorf("--universe %d outside [0, 2^24]", cfg.Universe)
	}
	if s := c.String("method"); s != "" {
		for _, name := range strings.Split(s, ",") {
			m, err := reconcile.ParseMethod(strings.TrimSpace(name))
			if err != nil {
				return err
			}
			cfg.Methods = append(cfg.Methods, m)
		}
	}
	rows, err := cliutil.RunWithProgress(c, "methods trials", func(ctx context.Context, progress func(int, int)) ([]methods.Row, error) {
		cfg.Progress = progress
		return methods.Run(ctx, cfg)
	})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		err = cliutil.WriteJSON(c.App.Writer, struct {
			Rows []methods.Row  `json:"rows"`
			Best map[int]string `json:"best_by_d"`
		}{rows, methods.Best(rows, blockSize)})
	} else {
		err = printMethods(c.App.Writer, cfg, rows, blockSize)
	}
	if err == nil && plotFile != "" {
		err = plotMethods(rows, cfg, plotFile)
	}
	return err
}

// scaleDiffs is the default sweep for another n: 1, 3, 10, ... up to n, with the
// Table 3 fractions of n (1/4, 1/2, 3/4, 7/8).
func scaleDiffs(n int) []int {
	var ds []int
	for _, d := range []int{1, 3, 10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000} {
		if d < n/4 {
			ds = append(ds, d)
		}
	}
	for _, f := range []float64{0.25, 0.5, 0.75, 0.875, 1} {
		if d := int(f * float64(n)); d >= 1 && (len(ds) == 0 || d > ds[len(ds)-1]) {
			ds = append(ds, d)
		}
	}
	return ds
}

func printMethods(w io.Writer, cfg methods.Config, rows []methods.Row, blockSize int) error {
	mode := "A pulls from B"
	if cfg.TwoWay {
		mode = "two-way"
	}
	file := "n + d blocks"
	if cfg.Universe > 0 {
		file = fmt.Sprintf("at least %d blocks", cfg.Universe)
	}
	fmt.Fprintf(w, "Methods: n = %d blocks a peer, |S_A ∩ S_B| = n - d, a file of %s, %s, %d trials (means), offers (no payloads)\n\n",
		cfg.N, file, mode, cfg.Trials)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "d\tmethod\twire B\tfilter B\tround trips\tcompute ms\tmissed\tredundant\tcells/diff\tfilter/r*m\tfilter decode µs\tpaper (Table 3)\t")
	for _, r := range rows {
		cells, ratio, dec, paper := "-", "-", "-", ""
		if r.Method == "iblt" {
			cells = fmt.Sprintf("%.2f", r.CellsPerDiff)
		}
		if r.FilterRatio > 0 {
			ratio, dec = fmt.Sprintf("%.1f%%", 100*r.FilterRatio), fmt.Sprintf("%.0f", r.FilterDecodeUS)
		}
		if p := r.Paper; p != nil {
			switch r.Method {
			case "byers":
				paper = fmt.Sprintf("kk=%d missed %.0f", p.KK, p.ByersMissed)
			case "complete":
				if p.CompleteRedundant == nil {
					paper = fmt.Sprintf("kk=%d redundant illegible", p.KK)
				} else {
					paper = fmt.Sprintf("kk=%d redundant %.2f", p.KK, *p.CompleteRedundant)
				}
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.0f\t%.1f\t%.3f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t\n",
			r.D, r.Method, r.WireBytes, r.FilterBytes, r.RoundTrips, r.ComputeMS, r.Missed, r.Redundant, cells, ratio, dec, paper)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	best := methods.Best(rows, blockSize)
	fmt.Fprintf(w, "\nFewest bytes without a missed block (a redundant block counted as %d bytes):\n", blockSize)
	for _, d := range methods.Diffs(rows) {
		fmt.Fprintf(w, "  d=%d: %s\n", d, best[d])
	}
	fmt.Fprintln(w, "\nwire: every encoded message, both directions; filter: the filter messages (filters,\n"+
		"bitfields, IBLT cells). missed: blocks of S_B \\ S_A that B did not send (Byers' code makes\n"+
		"up for them); redundant: blocks A already held. cells/diff: IBLT cells sent per element of\n"+
		"the symmetric difference (2d). filter/r*m: A's encoded CBF against r*m bits.")
	return nil
}

// plotMethods draws the mean bytes on the wire against d, one line per method
// (each method in its colour of every figure), on log scales, marking the
// paper's Table 3 points and writing the mean missed blocks beside every
// point where a method missed some.
func plotMethods(rows []methods.Row, cfg methods.Config, file string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Bytes on the wire per reconciliation, n = %d blocks a peer", cfg.N)
	p.X.Label.Text = "d: blocks each peer lacks (|S_A ∩ S_B| = n - d)"
	p.Y.Label.Text = "bytes (all messages, offers, no payloads)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = labplot.LogTicks{}, labplot.LogTicks{}
	var order []string
	series := map[string]plotter.XYs{}
	var paperPts plotter.XYs
	missed := plotter.XYLabels{}
	missRange := map[string][2]float64{}
	lastLabel := map[string]float64{}
	lo, hi := math.Inf(1), 0.0
	for _, r := range rows {
		if _, ok := series[r.Method]; !ok {
			order = append(order, r.Method)
		}
		series[r.Method] = append(series[r.Method], plotter.XY{X: float64(r.D), Y: r.WireBytes})
		if r.Paper != nil && r.Method == "complete" {
			paperPts = append(paperPts, plotter.XY{X: float64(r.D), Y: r.WireBytes})
		}
		if r.Missed > 0 {
			mr, ok := missRange[r.Method]
			if !ok {
				mr = [2]float64{math.Inf(1), 0}
			}
			missRange[r.Method] = [2]float64{math.Min(mr[0], r.Missed), math.Max(mr[1], r.Missed)}
			// Label points far enough apart on the log axis to stay legible.
			if last, ok := lastLabel[r.Method]; !ok || math.Log10(float64(r.D))-math.Log10(last) >= 0.3 {
				lastLabel[r.Method] = float64(r.D)
				missed.XYs = append(missed.XYs, plotter.XY{X: float64(r.D), Y: r.WireBytes})
				missed.Labels = append(missed.Labels, fmt.Sprintf("%.1f missed", r.Missed))
			}
		}
		lo, hi = math.Min(lo, r.WireBytes), math.Max(hi, r.WireBytes)
	}
	if len(order) == 0 {
		return fmt.Errorf("plot %s: no rows to draw", file)
	}
	for _, name := range order {
		line, pts, err := plotter.NewLinePoints(series[name])
		if err != nil {
			return err
		}
		line.Color, pts.Color = labplot.MethodColor(name), labplot.MethodColor(name)
		line.Width = vg.Points(1.5)
		pts.Shape = labplot.MethodShape(name)
		pts.Radius = vg.Points(3)
		p.Add(line, pts)
		label := name
		if mr, ok := missRange[name]; ok {
			label = fmt.Sprintf("%s: misses %.1f to %.1f blocks a session (mean, labelled)", name, mr[0], mr[1])
		}
		p.Legend.Add(label, line, pts)
	}
	if len(missed.XYs) > 0 {
		labels, err := plotter.NewLabels(missed)
		if err != nil {
			return err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].Color = labplot.MethodColor("byers")
			labels.TextStyle[i].Font.Size = vg.Points(7)
			labels.TextStyle[i].YAlign = draw.YBottom
			labels.TextStyle[i].XAlign = draw.XCenter
		}
		labels.Offset = vg.Point{Y: vg.Points(5)}
		p.Add(labels)
	}
	if len(paperPts) > 0 {
		sc, err := plotter.NewScatter(paperPts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Shape = draw.RingGlyph{}
		sc.GlyphStyle.Radius = vg.Points(7)
		p.Add(sc)
		p.Legend.Add("paper's Table 3 points", sc)
	}
	p.Y.Min, p.Y.Max = lo/2, hi*6
	maxD := 0.0
	for _, r := range rows {
		maxD = math.Max(maxD, float64(r.D))
	}
	p.X.Max = maxD * 1.5 // room for the last label
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return labplot.Save(p, 8*vg.Inch, 5.5*vg.Inch, file)
}
