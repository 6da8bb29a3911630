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

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labplot"
	"github.com/reconcile-p2p/reconcile/cmd/internal/paperexp"
)

// table1Command is reconcile experiment table1.
func table1Command() *cli.Command {
	return &cli.Command{
		Name:  "table1",
		Usage: "paper Table 1: fp and fn of every algebra result against the CBF of its set",
		Description: "u = 12000 random strings, |S1| = |S2| = 6000, |S1 ∩ S2| = 2000, r = 4,\n" +
			"m ∈ {32768, 65536, 131072}, k ∈ {4, 6}, 6000 probes outside U, mean over trials.\n" +
			"Prints measured fp, expected fp (paper-notes §4) and measured fn, in percent.\n\n" +
			"Example:\n   reconcile experiment table1 --trials 100 --plot table1.png",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "trials", Value: 100, Usage: "trials to average over"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed (same seed, same figures)"},
			&cli.StringFlag{Name: "hash", Value: "sha1", Usage: "hash family: sha1 (the paper's) or fast"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document {\"rows\": [...]} with fp and fn as fractions"},
			cliutil.ProgressFlag(),
			labplot.Flag("draw measured against expected fp"),
		},
		Action: runTable1Command,
	}
}

// table2Command is reconcile experiment table2.
func table2Command() *cli.Command {
	return &cli.Command{
		Name:  "table2",
		Usage: "paper Table 2: counter probes and fp/fn of the algebra against double-CBF queries",
		Description: "For alpha = |S1 ∩ S2| / |S1| ∈ {1/3, 1/2, 2/3} and every (m, k) of Table 1, every\n" +
			"element of U is queried against the algebra's result filter and, the double-CBF\n" +
			"way, against the two original filters; a query stops at the first zero counter.\n\n" +
			"Example:\n   reconcile experiment table2 --trials 20",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "trials", Value: 100, Usage: "trials to average over"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
			&cli.StringFlag{Name: "hash", Value: "sha1", Usage: "hash family: sha1 or fast"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document {\"rows\": [...]}"},
			cliutil.ProgressFlag(),
		},
		Action: runTable2Command,
	}
}

// hashAndTrials reads the --hash and --trials flags every paper experiment has.
func hashAndTrials(c *cli.Context) (cbfalgebra.HashFamily, int, error) {
	h, err := cbfalgebra.ParseHashFamily(c.String("hash"))
	if err != nil {
		return h, 0, err
	}
	if t := c.Int("trials"); t < 1 {
		return h, 0, cliutil.Usagef("--trials %d: want at least 1", t)
	}
	return h, c.Int("trials"), nil
}

func runTable1Command(c *cli.Context) error {
	h, trials, err := hashAndTrials(c)
	if err != nil {
		return err
	}
	plotFile, err := labplot.CheckPath(c)
	if err != nil {
		return err
	}
	cfg := paperexp.DefaultTable1()
	cfg.Trials, cfg.Seed, cfg.Hash = trials, c.Uint64("seed"), h
	rows, err := cliutil.RunWithProgress(c, "table1 trials", func(ctx context.Context, progress func(int, int)) ([]paperexp.Table1Row, error) {
		cfg.Progress = progress
		return paperexp.RunTable1(ctx, cfg)
	})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		err = cliutil.WriteJSON(c.App.Writer, struct {
			Rows []paperexp.Table1Row `json:"rows"`
		}{rows})
	} else {
		printTable1(c.App.Writer, rows, cfg)
	}
	if err == nil && plotFile != "" {
		err = plotTable1(rows, plotFile)
	}
	return err
}

// printTable1 prints the rows in the paper's layout (percent) and a summary of
// how far measured values are from expected ones, in binomial standard deviations.
func printTable1(w io.Writer, rows []paperexp.Table1Row, cfg paperexp.Table1Config) {
	cols := paperexp.Table1Columns
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "m\tk\t\t")
	for _, col := range cols {
		fmt.Fprintf(tw, "%s\t", col)
	}
	fmt.Fprintln(tw)
	worst, worstAt, fnAll := 0.0, "", true
	for i := 0; i < len(rows); i += len(cols) {
		g := rows[i : i+len(cols)]
		for _, line := range []string{"measured %", "expected %", "fn %"} {
			if line == "measured %" {
				fmt.Fprintf(tw, "%d\t%d\t%s\t", g[0].M, g[0].K, line)
			} else {
				fmt.Fprintf(tw, "\t\t%s\t", line)
			}
			for _, r := range g {
				v := r.MeasuredFP
				switch line {
				case "expected %":
					v = r.ExpectedFP
				case "fn %":
					v = r.MeasuredFN
				}
				fmt.Fprintf(tw, "%s\t", pct(v))
			}
			fmt.Fprintln(tw)
		}
		for _, r := range g {
			if r.MeasuredFN != 0 {
				fnAll = false
			}
			sd := math.Sqrt(r.ExpectedFP * (1 - r.ExpectedFP) / float64(cfg.Trials*cfg.Sizes.Probes))
			if sd > 0 {
				if z := math.Abs(r.MeasuredFP-r.ExpectedFP) / sd; z > worst {
					worst, worstAt = z, fmt.Sprintf("m=%d k=%d %s", r.M, r.K, r.Column)
				}
			}
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d trials × %d probes, hash %s, seed %d.\n", cfg.Trials, cfg.Sizes.Probes, cfg.Hash, cfg.Seed)
	fmt.Fprintf(w, "largest |measured − expected|: %.1f binomial standard deviations (%s)\n", worst, worstAt)
	if fnAll {
		fmt.Fprintln(w, "false negatives: 0 in every column")
	} else {
		fmt.Fprintln(w, "FALSE NEGATIVES FOUND: see the fn rows")
	}
}

// pct formats a fraction as a percentage the way the paper prints it: four
// decimals (three from 10 % up), and below 0.0001 % in exponent form.
func pct(v float64) string {
	p := 100 * v
	switch {
	case p == 0:
		return "0"
	case p < 0.0001:
		return fmt.Sprintf("%.1e", p)
	case p >= 10:
		return fmt.Sprintf("%.3f", p)
	default:
		return fmt.Sprintf("%.4f", p)
	}
}

// plotTable1 draws measured against expected fp on log scales, set filters and
// algebra results as two series, with the line measured = expected. Points
// where no false positive was measured (fp 0, not drawable on a log scale)
// are drawn as rings on the floor of the plot and counted in the legend.
func plotTable1(rows []paperexp.Table1Row, file string) error {
	p := plot.New()
	p.Title.Text = "Table 1: measured vs expected false-positive rate"
	p.X.Label.Text = "expected fp (theory, paper-notes §4)"
	p.Y.Label.Text = "measured fp (mean over trials)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = labplot.LogTicks{}, labplot.LogTicks{}
	var set, alg, zero plotter.XYs
	lo, hi := math.Inf(1), 0.0
	for _, r := range rows {
		if r.ExpectedFP <= 0 {
			continue // theory says 0: nothing to compare on a log scale
		}
		lo, hi = math.Min(lo, r.ExpectedFP), math.Max(hi, r.ExpectedFP)
		if r.MeasuredFP <= 0 {
			zero = append(zero, plotter.XY{X: r.ExpectedFP})
			continue
		}
		pt := plotter.XY{X: r.ExpectedFP, Y: r.MeasuredFP}
		if r.Column == "S1" || r.Column == "S2" || strings.HasPrefix(r.Column, "set_") {
			set = append(set, pt)
		} else {
			alg = append(alg, pt)
		}
		lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
	}
	if hi == 0 {
		return fmt.Errorf("plot %s: no expected fp above 0 to draw", file)
	}
	floor := lo / 4
	for i := range zero {
		zero[i].Y = floor
	}
	diag, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return err
	}
	diag.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(diag)
	p.Legend.Add("measured = expected", diag)
	for i, s := range []struct {
		name string
		xy   plotter.XYs
	}{{"CBF of the result set", set}, {"algebra result", alg},
		{fmt.Sprintf("no false positive measured (%d of %d points; drawn at the floor)", len(zero), len(rows)), zero}} {
		if len(s.xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.xy)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = labplot.Color(i)
		sc.GlyphStyle.Shape = labplot.Shape(i)
		if i == 2 {
			sc.GlyphStyle.Color, sc.GlyphStyle.Shape = labplot.Grey, draw.RingGlyph{}
		}
		sc.GlyphStyle.Radius = vg.Points(3)
		p.Add(sc)
		p.Legend.Add(s.name, sc)
	}
	p.Y.Min = floor / 2
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return labplot.Save(p, 7*vg.Inch, 6*vg.Inch, file)
}

func runTable2Command(c *cli.Context) error {
	h, trials, err := hashAndTrials(c)
	if err != nil {
		return err
	}
	cfg := paperexp.DefaultTable2()
	cfg.Trials, cfg.Seed, cfg.Hash = trials, c.Uint64("seed"), h
	rows, err := cliutil.RunWithProgress(c, "table2 trials", func(ctx context.Context, progress func(int, int)) ([]paperexp.Table2Row, error) {
		cfg.Progress = progress
		return paperexp.RunTable2(ctx, cfg)
	})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return cliutil.WriteJSON(c.App.Writer, struct {
			Rows []paperexp.Table2Row `json:"rows"`
		}{rows})
	}
	w := c.App.Writer
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "m\tk\talpha\top\tprobes alg\tprobes dbl\treduction\tfp alg %\tfp dbl %\tfn alg %\tfn dbl %\texp fn dbl %\t")
	red := map[string][2]float64{}
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%.3f\t%s\t%.3f\t%.3f\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t\n", r.M, r.K, r.Alpha, r.Op,
			r.AlgebraProbes, r.DoubleProbes, 100*r.ProbeReduction, pct(r.AlgebraFP), pct(r.DoubleFP), pct(r.AlgebraFN), pct(r.DoubleFN), pct(r.ExpectedDoubleFN))
		mm, ok := red[r.Op]
		if !ok {
			mm = [2]float64{math.Inf(1), math.Inf(-1)}
		}
		red[r.Op] = [2]float64{math.Min(mm[0], r.ProbeReduction), math.Max(mm[1], r.ProbeReduction)}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nprobe reduction of the algebra vs double-CBF (paper: ∩ 47–60%%, ∪ 10–18%%, \\ 42–65%%, ⊕ 38–60%%, complement 57–62%%):\n")
	for _, op := range paperexp.Table2Ops {
		fmt.Fprintf(w, "  %-10s %.0f–%.0f%%\n", op, 100*red[op][0], 100*red[op][1])
	}
	return nil
}
