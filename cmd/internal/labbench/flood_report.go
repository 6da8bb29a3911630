package labbench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

// floodReport holds the figures of one flood run.
type floodReport struct {
	Bytes       int64     `json:"bytes"`
	Identities  int       `json:"identities"`
	Streams     int       `json:"streams"`
	Attacks     []string  `json:"attacks"`
	Spread      bool      `json:"spread_loopback"`
	Baseline    []float64 `json:"baseline_s"`
	UnderAttack []float64 `json:"under_attack_s"`
	Failed      []string  `json:"failed,omitempty"`
	MedianRatio float64   `json:"median_ratio"`
	MaxRatio    float64   `json:"max_ratio"`
	// Seed resident memory in MiB: before the attack, its peak during the
	// attack, and at the end of the watch after it.
	RSSBefore float64 `json:"rss_before_mib"`
	RSSPeak   float64 `json:"rss_peak_mib"`
	RSSAfter  float64 `json:"rss_after_mib"`
	// The seed's CPU time (user+system) in seconds during each fetch
	// without attack and under attack, from the fetch's start to its end,
	// and the medians' and the largest one's ratios to the baseline's
	// median.
	SeedCPUBaseline    []float64 `json:"seed_cpu_baseline_s"`
	SeedCPUUnderAttack []float64 `json:"seed_cpu_under_attack_s"`
	CPUMedianRatio     float64   `json:"seed_cpu_median_ratio"`
	CPUMaxRatio        float64   `json:"seed_cpu_max_ratio"`
	// SeedCPUAttack is the seed's CPU time over the whole attack, from the
	// attackers' start to their stop (fetches included), and AttackSeconds
	// that span's length.
	SeedCPUAttack float64 `json:"seed_cpu_attack_s"`
	AttackSeconds float64 `json:"attack_s"`
	// What the attackers saw.
	StreamsOpened int64 `json:"streams_opened"`
	Refused       int64 `json:"streams_refused"`
	RepeatBlocks  int64 `json:"repeat_blocks_received"`
	// JunkBytes is what the junk attackers wrote into their streams.
	JunkBytes   int64 `json:"junk_bytes"`
	Connections int64 `json:"connections"`
	DialErrors  int64 `json:"dial_errors"`
	// FirstDialError is the first error an attacker got when it dialed.
	FirstDialError string `json:"first_dial_error,omitempty"`
	// Stall is the stalling source's part in the fetches under attack
	// (--stall).
	Stall *stallReport `json:"stall,omitempty"`
}

// stallReport is what the fetches under attack said of the stalling source.
type stallReport struct {
	// Peer is the stalling source's peer id.
	Peer string `json:"peer"`
	// Named counts the fetches whose summary named it: it stalled
	// requests or was dropped.
	Named int `json:"named"`
	// Fetches is its share in each fetch under attack that completed.
	Fetches []stallShare `json:"fetches"`
}

// stallShare is the stalling source's entry in one fetch's summary (the
// fields of peer.PeerShare that tell a stall; Stalled is left out by
// builds that do not count it). Listed is false if the summary has none.
type stallShare struct {
	Listed  bool   `json:"listed"`
	Blocks  int    `json:"blocks"`
	Stalled int    `json:"stalled"`
	Dropped string `json:"dropped,omitempty"`
}

// named reports whether the fetch named the stalling source.
func (s stallShare) named() bool { return s.Stalled > 0 || s.Dropped != "" }

// fetchJSON is the part of `reconcile fetch --json`'s summary that flood
// reads.
type fetchJSON struct {
	Seconds float64 `json:"seconds"`
	Peers   []struct {
		Peer string `json:"peer"`
		stallShare
	} `json:"peers"`
}

// fetchResult is one fetch of a flood run.
type fetchResult struct {
	secs    float64 // the fetch's own time
	seedCPU float64 // the seed's CPU time from the fetch's start to its end
	stall   stallShare
}

// printFloodReport prints rep for people.
func printFloodReport(w io.Writer, rep *floodReport, after time.Duration) {
	what := "with a stalling source beside it (no attackers)"
	if len(rep.Attacks) > 0 {
		what = fmt.Sprintf("under %d identities x %d streams: %s", rep.Identities, rep.Streams, strings.Join(rep.Attacks, ", "))
		if rep.Stall != nil {
			what += ", and a stalling source beside it"
		}
	}
	fmt.Fprintf(w, "seed of %.0f MiB %s\n", cliutil.MiB(rep.Bytes), what)
	base, baseCPU := cliutil.Median(rep.Baseline), cliutil.Median(rep.SeedCPUBaseline)
	fmt.Fprintf(w, "  fetch without attack   median %.3f s (%d fetches); seed CPU median %.2f s a fetch\n", base, len(rep.Baseline), baseCPU)
	if len(rep.UnderAttack) > 0 {
		fmt.Fprintf(w, "  fetch under attack     median %.3f s = %.2fx, max %.3f s = %.2fx (%d fetches, all byte-identical)\n",
			cliutil.Median(rep.UnderAttack), rep.MedianRatio, slices.Max(rep.UnderAttack), rep.MaxRatio, len(rep.UnderAttack))
		fmt.Fprintf(w, "  seed CPU a fetch       median %.2f s = %.2fx, max %.2f s = %.2fx the fetch without attack\n",
			cliutil.Median(rep.SeedCPUUnderAttack), rep.CPUMedianRatio, slices.Max(rep.SeedCPUUnderAttack), rep.CPUMaxRatio)
	}
	fmt.Fprintf(w, "  failed fetches         %d\n", len(rep.Failed))
	fmt.Fprintf(w, "  seed RSS               %.0f MiB before, peak %.0f MiB under attack, %.0f MiB %v after it\n", rep.RSSBefore, rep.RSSPeak, rep.RSSAfter, after)
	fmt.Fprintf(w, "  seed CPU in the attack %.2f s in %.1f s (%.0f%% of a core), fetches included\n",
		rep.SeedCPUAttack, rep.AttackSeconds, 100*rep.SeedCPUAttack/max(rep.AttackSeconds, 1e-9))
	if len(rep.Attacks) > 0 {
		fmt.Fprintf(w, "  attackers              %d streams opened, %d refused, %d repeated blocks received, %d connections, %d dial errors\n",
			rep.StreamsOpened, rep.Refused, rep.RepeatBlocks, rep.Connections, rep.DialErrors)
	}
	if rep.JunkBytes > 0 {
		gib := float64(rep.JunkBytes) / (1 << 30)
		fmt.Fprintf(w, "  junk written           %s (%.0f MiB/s); seed CPU %.2f s per GiB of it\n",
			cliutil.HumanBytes(rep.JunkBytes), cliutil.MiB(rep.JunkBytes)/max(rep.AttackSeconds, 1e-9), rep.SeedCPUAttack/gib)
	}
	if rep.FirstDialError != "" {
		fmt.Fprintf(w, "  first dial error       %s\n", oneLineText(rep.FirstDialError))
	}
	if st := rep.Stall; st != nil {
		blocks, stalled, dropped, why := 0, 0, 0, ""
		for _, s := range st.Fetches {
			blocks += s.Blocks
			stalled += s.Stalled
			if s.Dropped != "" {
				dropped++
				why = cmp.Or(why, s.Dropped)
			}
		}
		fmt.Fprintf(w, "  stalling source        named by %d of %d fetches: %d blocks from it, %d requests stalled, dropped by %d\n",
			st.Named, len(st.Fetches), blocks, stalled, dropped)
		if why != "" {
			fmt.Fprintf(w, "  first drop             %s\n", oneLineText(why))
		}
	}
}

// String says in short what one fetch's summary said of the stalling
// source (the report gives the first reason it was dropped).
func (s stallShare) String() string {
	if !s.Listed {
		return "not in the summary"
	}
	out := fmt.Sprintf("%d blocks, %d requests stalled", s.Blocks, s.Stalled)
	if s.Dropped != "" {
		out += ", dropped"
	}
	return out
}

// ratioText returns " = 1.23x" for x/base, empty when base is 0.
func ratioText(x, base float64) string {
	if base <= 0 {
		return ""
	}
	return fmt.Sprintf(" = %.2fx", x/base)
}
