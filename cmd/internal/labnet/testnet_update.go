package labnet

import (
	"fmt"
	"io"

	"github.com/reconcile-p2p/reconcile/testnet"
)

// updateScenario words the update scenario of r for the report's first
// line ("" when r is not one).
func updateScenario(r *testnet.Result) string {
	u := r.Update
	if u == nil {
		return ""
	}
	return fmt.Sprintf("every fetching peer holding version 1 and one seed serving version 2 (%.3g%% of the bytes overwritten in %d places)",
		100*u.Fraction, u.Places)
}

// printUpdate prints what an update run moved: the new blocks (B_new),
// the blocks each fetcher took from version 1, the copies of B_new the
// seed sent, and T* of B_new beside the whole file's.
func printUpdate(out io.Writer, r *testnet.Result) {
	u := r.Update
	if u == nil {
		return
	}
	name := runName(r.Method, r.Choice)
	fmt.Fprintf(out, "testnet %s update: %d of version 2's %d blocks are new (B_new %.1f KiB), %d version 1 holds; each fetcher reused %s of them from its copy\n",
		name, u.NewBlocks, r.Blocks, float64(u.NewBytes)/1024, u.SharedBlocks, reusedRange(u.ReusedMin, u.ReusedMax, len(u.Reused)))
	fmt.Fprintf(out, "testnet %s update: the seed sent %.1f KiB of blocks, %.2f copies of B_new", name, float64(u.SeedBlockBytes)/1024, u.Copies)
	if r.SeedSentBytes > 0 && u.NewBytes > 0 {
		fmt.Fprintf(out, " (%.2f with its filters and framing)", float64(r.SeedSentBytes)/float64(u.NewBytes))
	}
	if r.UploadUse > 0 {
		fmt.Fprintf(out, "; uplinks %.0f%% busy until the last completion", 100*r.UploadUse)
	}
	fmt.Fprintln(out)
	if r.TStarS > 0 {
		fmt.Fprintf(out, "testnet %s update: T* of B_new %.3f s (the whole file's %.2f s); median %.2fx, max %.2fx T*; mean one-way latency %.0f ms\n",
			name, r.TStarS, u.FileTStarS, r.MedianTStar, r.MaxTStar, r.MeanLatencyMS)
	}
	if u.PathBoundMedianS > 0 && u.PathBoundMedianS > r.TStarS {
		fmt.Fprintf(out, "testnet %s update: with the latency from the seed (B_new over its upload plus the shortest path's delay), no fetcher can finish before %.2f s (median), %.2f s (max): median %.2fx that\n",
			name, u.PathBoundMedianS, u.PathBoundMaxS, u.MedianOverPathBound)
	}
}

// reusedRange words the blocks the fetchers reused: "N" when every one of
// them reused as many, "MIN to MAX" otherwise.
func reusedRange(lo, hi, fetchers int) string {
	if fetchers == 0 {
		return "none"
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}
