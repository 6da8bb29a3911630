package labpaper

import (
	"context"
	"fmt"
	"image/color"
	"io"
	"math"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labplot"
	"github.com/reconcile-p2p/reconcile/cmd/internal/table3"
)

// table3Command is reconcile experiment table3.
func table3Command() *cli.Command {
	return &cli.Command{
		Name:  "table3",
		Usage: "paper Table 3: complete reconciliation vs the Byers baseline, one pair of peers, real blocks",
		Description: "n = 4000 blocks a peer, |S_A ∩ S_B| = n0 ∈ {3000, 2000, 1000, 500}, m = 32768, k = 6.\n" +
			"Complete: CBF subtraction over the kk = 2n - n0 blocks of the file. Byers: RS(8191, kk)\n" +
			"coded blocks (Leopard GF(2^16)), each peer holding (8191 + n0)/2 of them, a Bloom filter\n" +
			"of A's, decoding once A holds kk. Time runs from A building its filter until A holds\n" +
			"the whole file, through the real message codec; A pulls from B. Every trial checks\n" +
			"A's file byte for byte afterwards (\"decoded\") and draws a fresh hash seed.\n" +
			"Prints means over the trials next to the paper's figures (a 1.7 GHz Pentium, 2010).\n\n" +
			"Example:\n   reconcile experiment table3 --trials 100 --plot table3.png",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "trials", Value: 100, Usage: "trials per row and method"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed (same seed, same counts)"},
			&cli.StringFlag{Name: "hash", Value: "sha1", Usage: "hash family of the filters: sha1 (the paper's) or fast"},
			&cli.StringFlag{Name: "block-size", Value: "64", Usage: "bytes per block, a multiple of 64 (Leopard's smallest shard is 64), up to 16MiB"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document {\"rows\": [...]}"},
			cliutil.ProgressFlag(),
			labplot.Flag("draw mean times by row"),
		},
		Action: runTable3Command,
	}
}

func runTable3Command(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("table3 takes no arguments, got %q", c.Args().First())
	}
	h, trials, err := hashAndTrials(c)
	if err != nil {
		return err
	}
	plotFile, err := labplot.CheckPath(c)
	if err != nil {
		return err
	}
	bs, err := cliutil.FlagSize(c, "block-size", 64, 16<<20)
	if err != nil {
		return err
	}
	if bs%64 != 0 {
		return cliutil.Usagef("--block-size %s: want a multiple of 64 bytes", c.String("block-size"))
	}
	cfg := table3.Default()
	cfg.Trials, cfg.Seed, cfg.BlockSize, cfg.Hash = trials, c.Uint64("seed"), int(bs), h
	rows, err := cliutil.RunWithProgress(c, "table3 trials", func(ctx context.Context, progress func(int, int)) ([]table3.Row, error) {
		cfg.Progress = progress
		return table3.Run(ctx, cfg)
	})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		err = cliutil.WriteJSON(c.App.Writer, struct {
			Rows []table3.Row `json:"rows"`
		}{rows})
	} else {
		err = printTable3(c.App.Writer, cfg, rows)
	}
	if err == nil && plotFile != "" {
		err = plotTable3(rows, plotFile)
	}
	return err
}

func printTable3(w io.Writer, cfg table3.Config, rows []table3.Row) error {
	fmt.Fprintf(w, "Table 3: n = %d, m = %d, k = %d, hash %v, RS(%d, kk), %d-byte blocks, %d trials (means)\n\n",
		cfg.N, cfg.M, cfg.K, cfg.Hash, cfg.NN, cfg.BlockSize, cfg.Trials)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kk\tn0\tmethod\ttime ms\tcompute ms\tdecode ms\tmissed\t(theory)\tredundant\t(T7)\tdecoded\twire KiB\tpaper ms\tpaper decode\tpaper missed/redundant\t")
	paperF := func(v float64, format string) string {
		if math.IsNaN(v) {
			return "illegible"
		}
		return fmt.Sprintf(format, v)
	}
	for _, r := range rows {
		p, havePaper := table3.PaperFor(r.KK, r.N0)
		pt, pd, pm := "-", "-", "-"
		theoryMissed := "0"
		if r.Method == "byers" {
			theoryMissed = fmt.Sprintf("%.1f", r.ExpectedMissed)
			if havePaper {
				pt, pd, pm = fmt.Sprintf("%.0f", p.ByersMS), fmt.Sprintf("%.0f", p.DecodeMS), fmt.Sprintf("%.0f", p.ByersMissed)
			}
		} else if havePaper {
			pt, pm = fmt.Sprintf("%.0f", p.Complete), paperF(p.CompleteRedundant, "%.2f")
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.3f\t%.3f\t%.3f\t%.2f\t%s\t%.2f\t%.2f\t%.0f%%\t%.1f\t%s\t%s\t%s\t\n",
			r.KK, r.N0, r.Method, r.TimeMS, r.ComputeMS, r.DecodeMS, r.Missed, theoryMissed,
			r.Redundant, r.ExpectedRedundant, 100*r.DecodeSuccess, r.WireBytes/1024, pt, pd, pm)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nByers time / complete time (paper's ratio in brackets):")
	for i := 0; i+1 < len(rows); i += 2 {
		c, b := rows[i], rows[i+1]
		paper := ""
		if p, ok := table3.PaperFor(c.KK, c.N0); ok {
			paper = fmt.Sprintf(" (%.0fx)", p.ByersMS/p.Complete)
		}
		fmt.Fprintf(w, "  kk=%d n0=%d: %.1fx%s\n", c.KK, c.N0, b.TimeMS/c.TimeMS, paper)
	}
	fmt.Fprintln(w, "\nmissed: blocks of S_B \\ S_A that did not reach A (complete: always 0); theory for Byers is\n"+
		"|SE_B \\ SE_A| * fp of A's Bloom filter. redundant: blocks A received and already held;\n"+
		"T7 = n0 * fp of CBF(S_B) \\ CBF(S_A). compute: the two sessions' own CPU work.")
	return nil
}

// plotTable3 draws grouped bars of the mean time per row: complete, Byers, and the
// decoding part of Byers.
func plotTable3(rows []table3.Row, file string) error {
	var complete, byers, decode plotter.Values
	var labels []string
	for i := 0; i+1 < len(rows); i += 2 {
		complete = append(complete, rows[i].TimeMS)
		byers = append(byers, rows[i+1].TimeMS)
		decode = append(decode, rows[i+1].DecodeMS)
		labels = append(labels, fmt.Sprintf("kk=%d n0=%d", rows[i].KK, rows[i].N0))
	}
	if len(labels) == 0 {
		return fmt.Errorf("plot %s: no rows to draw", file)
	}
	p := plot.New()
	p.Title.Text = "Table 3: time until A holds the whole file (mean)"
	p.X.Label.Text = "row of Table 3: kk blocks in the file, n0 shared by A and B"
	p.Y.Label.Text = "time (ms)"
	w := vg.Points(18)
	for i, s := range []struct {
		name  string
		v     plotter.Values
		color color.Color
	}{{"complete reconciliation", complete, labplot.MethodColor("complete")}, {"Byers (BF + RS)", byers, labplot.MethodColor("byers")},
		{"of which Byers' RS decoding", decode, labplot.Lighter(labplot.MethodColor("byers"))}} {
		bars, err := plotter.NewBarChart(s.v, w)
		if err != nil {
			return err
		}
		bars.Color = s.color
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(i-1) * w
		p.Add(bars)
		p.Legend.Add(s.name, bars)
	}
	top := 0.0
	for _, v := range byers {
		top = math.Max(top, v)
	}
	p.Y.Min, p.Y.Max = 0, 1.35*top // headroom for the legend
	p.Legend.Top, p.Legend.Left = true, true
	p.NominalX(labels...)
	p.Add(plotter.NewGrid())
	return labplot.Save(p, 8*vg.Inch, 5*vg.Inch, file)
}
