package labbench

// The figures of reconcile bench swarm: the fluid bound, each fetcher's
// time, CPU and uploads, and the text report.

import (
	"fmt"
	"io"
	"runtime"
	"slices"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

// swarmReport holds the figures of a bench swarm run.
type swarmReport struct {
	Bytes     int64 `json:"bytes"`
	BlockSize int64 `json:"block_size"`
	Fetchers  int   `json:"fetchers"`
	Rate      int64 `json:"fetcher_rate"` // bytes per second, 0: no cap
	SeedRate  int64 `json:"seed_rate"`
	SuperSeed bool  `json:"super_seed"`
	// Trees is the seed's --trees (0: none).
	Trees   int     `json:"trees"`
	Leave   bool    `json:"leave"`
	Stagger float64 `json:"stagger_seconds"`
	Repeat  int     `json:"repeat"`
	Cores   int     `json:"cores"`
	// Bound is the fluid bound T* in seconds (0: no caps, no bound), the
	// larger of BoundSeed (F/u_seed) and BoundSwarm (N·F/(u_seed+Σu_i)).
	Bound      float64     `json:"t_star_seconds"`
	BoundSeed  float64     `json:"t_seed_seconds"`
	BoundSwarm float64     `json:"t_swarm_seconds"`
	Runs       []*swarmRun `json:"runs"`
	// MedianRatio and MaxRatio are the medians over the runs of each run's
	// median/T* and max/T*; WorstRatio is the largest max/T*.
	MedianRatio float64 `json:"median_ratio"`
	MaxRatio    float64 `json:"max_ratio"`
	WorstRatio  float64 `json:"worst_ratio"`
	// CPUShare is the median over the runs of each run's CPUShare.
	CPUShare float64 `json:"cpu_share"`
}

// swarmRun is one repetition.
type swarmRun struct {
	Each []swarmFetcher `json:"fetchers"`
	// Median, Min and Max are of the fetchers' seconds; the ratios are to T*.
	Median      float64 `json:"median_seconds"`
	Min         float64 `json:"min_seconds"`
	Max         float64 `json:"max_seconds"`
	MedianRatio float64 `json:"median_ratio,omitempty"`
	MaxRatio    float64 `json:"max_ratio,omitempty"`
	// Wall is from the first launch to the last fetcher's summary.
	Wall float64 `json:"wall_seconds"`
	// CPU is the CPU seconds (user+system) over Wall of the seed, the
	// fetchers and this process; CPUShare is CPU / (Wall × cores).
	CPU         float64 `json:"cpu_seconds"`
	SeedCPU     float64 `json:"seed_cpu_seconds"`
	FetchersCPU float64 `json:"fetchers_cpu_seconds"`
	BenchCPU    float64 `json:"bench_cpu_seconds"`
	CPUShare    float64 `json:"cpu_share"`
	// MachineBusy is the whole machine's busy share over Wall (/proc/stat),
	// other users included.
	MachineBusy float64 `json:"machine_busy"`
	// SeedUploaded is what the fetchers got from the seed; SeedCopies is
	// it in copies of the file. FetchersUploaded is what they got from
	// each other.
	SeedUploaded     int64   `json:"seed_uploaded_bytes"`
	SeedCopies       float64 `json:"seed_copies"`
	FetchersUploaded int64   `json:"fetchers_uploaded_bytes"`
	// Redundant and Stalled are summed over the fetchers' summaries.
	Redundant int `json:"redundant_blocks"`
	Stalled   int `json:"stalled_requests"`
}

// swarmFetcher is one fetcher's part in a run.
type swarmFetcher struct {
	ID string `json:"peer"`
	// Seconds runs from its launch to its summary; FetchSeconds is the
	// summary's own; FirstBlockSeconds from its start to its first block.
	Seconds           float64 `json:"seconds"`
	FetchSeconds      float64 `json:"fetch_seconds"`
	FirstBlockSeconds float64 `json:"first_block_seconds"`
	// Uploaded is what the other fetchers got from it, to Served of them.
	Uploaded int64 `json:"uploaded_bytes"`
	Served   int   `json:"served_peers"`
	// FromSeed is what it got from the seed; Sources counts the peers it
	// got blocks from.
	FromSeed   int64   `json:"from_seed_bytes"`
	Sources    int     `json:"sources"`
	CPU        float64 `json:"cpu_seconds"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
}

func numCPU() int { return runtime.NumCPU() }

// setBound sets the fluid bound from the size, the fetchers and the caps:
// no seed cap, no bound; no fetcher cap, the seed's term alone.
func (r *swarmReport) setBound() {
	if r.SeedRate <= 0 {
		return
	}
	f, n := float64(r.Bytes), float64(r.Fetchers)
	r.BoundSeed = f / float64(r.SeedRate)
	if r.Rate > 0 {
		r.BoundSwarm = n * f / (float64(r.SeedRate) + n*float64(r.Rate))
	}
	r.Bound = max(r.BoundSeed, r.BoundSwarm)
}

// tally sets the run's times, CPU and uploads from each fetcher's summary
// (sums, in the order of Each); seed is the seed's peer id.
func (r *swarmRun) tally(seed string, sums []*swarmSummary, cores int) {
	index := map[string]int{}
	secs := make([]float64, len(r.Each))
	for i, f := range r.Each {
		index[f.ID] = i
		secs[i] = f.Seconds
		r.FetchersCPU += f.CPU
	}
	r.Median, r.Min, r.Max = cliutil.Median(secs), slices.Min(secs), slices.Max(secs)
	r.CPU = r.SeedCPU + r.FetchersCPU + r.BenchCPU
	if r.Wall > 0 && cores > 0 {
		r.CPUShare = r.CPU / (r.Wall * float64(cores))
	}
	for i, s := range sums {
		r.Redundant += s.Redundant
		for _, sh := range s.Peers {
			r.Stalled += sh.Stalled
			if sh.Bytes == 0 {
				continue
			}
			r.Each[i].Sources++
			if sh.Peer == seed {
				r.SeedUploaded += sh.Bytes
				r.Each[i].FromSeed += sh.Bytes
			} else if j, ok := index[sh.Peer]; ok {
				r.FetchersUploaded += sh.Bytes
				r.Each[j].Uploaded += sh.Bytes
				r.Each[j].Served++
			}
		}
		if s.Bytes > 0 {
			r.SeedCopies = float64(r.SeedUploaded) / float64(s.Bytes)
		}
	}
}

// ratios sets the run's ratios to the bound (none without one).
func (r *swarmRun) ratios(bound float64) {
	if bound > 0 {
		r.MedianRatio, r.MaxRatio = r.Median/bound, r.Max/bound
	}
}

// summarize sets the medians over the runs.
func (r *swarmReport) summarize() {
	var med, mx, cpu []float64
	for _, run := range r.Runs {
		med, mx, cpu = append(med, run.MedianRatio), append(mx, run.MaxRatio), append(cpu, run.CPUShare)
	}
	if len(r.Runs) == 0 {
		return
	}
	r.MedianRatio, r.MaxRatio, r.WorstRatio = cliutil.Median(med), cliutil.Median(mx), slices.Max(mx)
	r.CPUShare = cliutil.Median(cpu)
}

// rateText is a cap as text.
func rateText(r int64) string {
	if r <= 0 {
		return "no cap"
	}
	return "cap " + cliutil.HumanBytes(r) + "/s"
}

// printSwarm prints the report as text.
func printSwarm(w io.Writer, rep *swarmReport) {
	stay := "fetchers keep serving until all are done"
	if rep.Leave {
		stay = "fetchers leave once done"
	}
	trees := ""
	if rep.Trees > 0 {
		trees = fmt.Sprintf(", %d stripe trees", rep.Trees)
	}
	fmt.Fprintf(w, "%s file, %s blocks, 1 seed (%s%s%s) + %d fetchers (%s each), loopback, each its own process; %s\n",
		cliutil.HumanBytes(rep.Bytes), cliutil.HumanBytes(rep.BlockSize), rateText(rep.SeedRate), map[bool]string{true: ", super-seeding"}[rep.SuperSeed],
		trees, rep.Fetchers, rateText(rep.Rate), stay)
	if rep.Stagger > 0 {
		fmt.Fprintf(w, "fetchers launched one every %.2f s; times from each one's launch\n", rep.Stagger)
	}
	if rep.Bound > 0 {
		fmt.Fprintf(w, "fluid bound T* = max(F/u_seed %.2f s, N*F/(u_seed+sum u_i) %.2f s) = %.2f s\n", rep.BoundSeed, rep.BoundSwarm, rep.Bound)
	} else {
		fmt.Fprintln(w, "no seed cap: no fluid bound")
	}
	for k, run := range rep.Runs {
		fmt.Fprintf(w, "repetition %d: median %.2f s", k+1, run.Median)
		if rep.Bound > 0 {
			fmt.Fprintf(w, " (%.2f x T*), max %.2f s (%.2f x T*)", run.MedianRatio, run.Max, run.MaxRatio)
		} else {
			fmt.Fprintf(w, ", max %.2f s", run.Max)
		}
		fmt.Fprintf(w, ", fastest %.2f s; all byte-identical\n", run.Min)
		fmt.Fprintf(w, "  CPU %.1f s in %.1f s = %.0f %% of %d cores (seed %.1f s, fetchers %.1f s, bench %.1f s); machine busy %.0f %% (others included)\n",
			run.CPU, run.Wall, 100*run.CPUShare, rep.Cores, run.SeedCPU, run.FetchersCPU, run.BenchCPU, 100*run.MachineBusy)
		fmt.Fprintf(w, "  seed uploaded %s (%.2f copies), fetchers uploaded %s to each other; %d redundant blocks, %d stalled requests\n",
			cliutil.HumanBytes(run.SeedUploaded), run.SeedCopies, cliutil.HumanBytes(run.FetchersUploaded), run.Redundant, run.Stalled)
		fmt.Fprintf(w, "  %-8s %8s %8s %11s %10s %7s %10s %6s %6s %7s\n", "fetcher", "seconds", "own", "first block", "uploaded", "to", "from seed", "srcs", "CPU s", "RSS MiB")
		for _, f := range run.Each {
			fmt.Fprintf(w, "  %-8s %8.2f %8.2f %11.2f %10s %7d %10s %6d %6.2f %7.0f\n", "…"+f.ID[len(f.ID)-6:], f.Seconds, f.FetchSeconds, f.FirstBlockSeconds,
				cliutil.HumanBytes(f.Uploaded), f.Served, cliutil.HumanBytes(f.FromSeed), f.Sources, f.CPU, f.PeakRSSMiB)
		}
	}
	if len(rep.Runs) > 1 && rep.Bound > 0 {
		fmt.Fprintf(w, "over %d repetitions: median/T* %.2f, max/T* %.2f (worst %.2f), CPU %.0f %% of %d cores (medians)\n",
			len(rep.Runs), rep.MedianRatio, rep.MaxRatio, rep.WorstRatio, 100*rep.CPUShare, rep.Cores)
	}
}
