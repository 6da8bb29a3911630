package labnet

// The report of reconcile testnet, and the lines sim swarm prints the same way.

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labplot"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/testnet"
	"github.com/reconcile-p2p/reconcile/testnet/rates"
)

func printTestnet(out io.Writer, rep testnetReport) {
	if len(rep.Runs) == 0 {
		return
	}
	r0 := rep.Runs[0]
	scen := "one seed, the others empty"
	if r0.Hold > 0 {
		scen = fmt.Sprintf("every peer holding %.0f%% of the blocks", 100*r0.Hold)
	}
	if u := updateScenario(r0); u != "" {
		scen = u
	}
	blocks := fmt.Sprintf("%d blocks", r0.Blocks)
	if r0.Chunking != "" {
		blocks = fmt.Sprintf("%d content-defined blocks (%s, %.0f KiB on average)", r0.Blocks, r0.Chunking, float64(r0.BlockSize)/1024)
	}
	bw := "no bandwidth cap"
	if r0.BandwidthBps > 0 {
		bw = rates.FormatRate(r0.BandwidthBps) + " per link"
	}
	fmt.Fprintf(out, "%d peers over %s (latency %s, mean %.0f ms, %s), %s neighbours (mean %.1f), file of %.1f MiB in %s, %s.\n",
		r0.Nodes, r0.Transport, r0.Latency, r0.MeanLatencyMS, bw, r0.Neighbours, r0.MeanDegree, float64(r0.Bytes)/(1<<20), blocks, scen)
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
		fmt.Fprintf(out, "access links: %s; seed up %s\n", accessLine(r0.UpBps, r0.DownBps, r0.Classes), rates.FormatRate(r0.SeedUpBps))
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
		if r.Update != nil {
			printUpdate(out, r)
		} else {
			printUploads(out, "testnet", runName(r.Method, r.Choice), r.SeedSentBytes, r.Bytes, r.UploadUse)
		}
		printSeedOut(out, "testnet", runName(r.Method, r.Choice), r.SeedOutS, r.TStarS)
		printSeedLeft(out, "testnet", runName(r.Method, r.Choice), r.SeedLeftS, r.TStarS)
		printNAT(out, r)
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
		return fmt.Sprintf("up %s, down %s per peer", rates.FormatRate(up), rates.FormatRate(down))
	}
	var parts []string
	for _, c := range classes {
		parts = append(parts, fmt.Sprintf("%.0f%% down %s up %s", 100*c.Share, rates.FormatRate(c.Down), rates.FormatRate(c.Up)))
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
