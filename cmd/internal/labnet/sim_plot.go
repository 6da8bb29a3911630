package labnet

import (
	"fmt"
	"image/color"
	"slices"

	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/reconcile-p2p/reconcile/cmd/internal/labplot"
)

func plotLinkDelays(t *topology.Topology, file string) error {
	if file == "" {
		return nil
	}
	var v plotter.Values
	for _, e := range t.Edges() {
		v = append(v, float64(e.DelayMS))
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Link delays: %d routers, %d links, mean %.1f ms", t.Routers(), t.Links(), t.MeanLinkDelay())
	p.X.Label.Text = "link delay (ms)"
	p.Y.Label.Text = "links"
	h, err := plotter.NewHist(v, 60)
	if err != nil {
		return fmt.Errorf("plot %s: %w", file, err)
	}
	p.Add(h)
	return labplot.Save(p, 8*vg.Inch, 5*vg.Inch, file)
}

// plotTable4 draws, per row, Byers' time over complete's in this simulation
// beside the paper's ratio: the ratio is what the simulation can reproduce
// (the absolute times depend on a 2010 machine). Rows where one of the two
// methods did not run draw the mean time of every method that ran instead.
func plotTable4(rows []ts.Table4Row, file string) error {
	if file == "" {
		return nil
	}
	var names []string
	ratios := true
	for _, r := range rows {
		names = append(names, fmt.Sprintf("kk=%d n0=%d", r.KK, r.N0))
		if r.Ratio <= 0 {
			ratios = false
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("plot %s: no rows to draw", file)
	}
	p := plot.New()
	p.X.Label.Text = "row of Table 4: kk blocks in the file, n0 shared by A and B"
	w := vg.Points(18)
	top := 0.0
	addBars := func(i, n int, name string, v plotter.Values, c color.Color) error {
		b, err := plotter.NewBarChart(v, w)
		if err != nil {
			return fmt.Errorf("plot %s: %w", file, err)
		}
		b.Color = c
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(b)
		p.Legend.Add(name, b)
		for _, x := range v {
			top = max(top, x)
		}
		return nil
	}
	bottom := 0.0
	if ratios {
		p.Title.Text = "Table 4: how much longer Byers takes than complete, this simulation vs the paper"
		p.Y.Label.Text = "Byers time / complete time − 1 (%)"
		var sim, paper plotter.Values
		for _, r := range rows {
			sim = append(sim, 100*(r.Ratio-1))
			pr := 0.0
			if r.Paper != nil && r.Paper.CompleteMS > 0 {
				pr = 100 * (r.Paper.ByersMS/r.Paper.CompleteMS - 1)
			}
			paper = append(paper, pr)
			bottom = min(bottom, sim[len(sim)-1], pr)
		}
		if err := addBars(0, 2, "this simulation", sim, labplot.MethodColor("byers")); err != nil {
			return err
		}
		if err := addBars(1, 2, "paper (Table 4)", paper, labplot.Lighter(labplot.MethodColor("byers"))); err != nil {
			return err
		}
	} else {
		p.Title.Text = "Table 4: mean reconciliation time in this simulation"
		p.Y.Label.Text = "time (ms)"
		byMethod := map[string]plotter.Values{}
		var order []string
		for k, r := range rows {
			for _, m := range append([]*ts.MethodResult{r.Complete, r.Byers}, r.Others...) {
				if m == nil {
					continue
				}
				name := fmt.Sprint(m.Method)
				if _, ok := byMethod[name]; !ok {
					order = append(order, name)
					byMethod[name] = make(plotter.Values, len(rows))
				}
				byMethod[name][k] = m.MeanMS
			}
		}
		for i, name := range order {
			if err := addBars(i, len(order), name, byMethod[name], labplot.MethodColor(name)); err != nil {
				return err
			}
		}
	}
	p.Legend.Top = true
	p.Legend.YOffs = -vg.Points(6) // below the title
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.75, float64(len(names))-0.25 // the outer labels stay inside
	p.Y.Min, p.Y.Max = 1.2*bottom, 1.35*top            // room for the legend above the bars
	p.Add(plotter.NewGrid())
	return labplot.Save(p, 8*vg.Inch, 5*vg.Inch, file)
}

func plotSwarm(runs []*ts.SwarmResult, file string) error {
	if file == "" {
		return nil
	}
	p := plot.New()
	p.Title.Text = "Swarm: share of peers holding the whole file"
	p.X.Label.Text = "simulated time (s)"
	p.Y.Label.Text = "share of peers complete"
	choices := map[string]bool{}
	for _, r := range runs {
		choices[r.Choice] = true
	}
	for _, r := range runs {
		xs := slices.Clone(r.Completions)
		slices.Sort(xs)
		pts := make(plotter.XYs, 0, len(xs)+1)
		pts = append(pts, plotter.XY{X: 0, Y: 0})
		for i, x := range xs {
			pts = append(pts, plotter.XY{X: x / 1000, Y: float64(i+1) / float64(r.Peers)})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", file, err)
		}
		name := fmt.Sprint(r.Method)
		l.Color = labplot.MethodColor(name)
		l.Width = vg.Points(2)
		l.StepStyle = plotter.PostStep
		if len(choices) > 1 {
			// The same method's block choices: solid, dashed, dotted.
			l.Dashes = map[string][]vg.Length{"rarest-exact": {vg.Points(6), vg.Points(3)}, "rarest-filters": {vg.Points(2), vg.Points(2)}}[r.Choice]
		}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (median %.1f s)", swarmLabel(r, len(choices)), r.MedianMS/1000), l)
	}
	// The fluid lower bound, where one seed and access links give one.
	if len(runs) > 0 && runs[0].TStarMS > 0 {
		t := runs[0].TStarMS / 1000
		l, err := plotter.NewLine(plotter.XYs{{X: t, Y: 0}, {X: t, Y: 1.05}})
		if err != nil {
			return fmt.Errorf("plot %s: %w", file, err)
		}
		l.Color = color.Gray{Y: 96}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("T* = %.2f s (fluid lower bound)", t), l)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Y.Min, p.Y.Max = 0, 1.1
	p.X.Min = 0
	p.Add(plotter.NewGrid())
	return labplot.Save(p, 8*vg.Inch, 5*vg.Inch, file)
}
