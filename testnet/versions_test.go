package testnet

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// TestRunUpdate: every fetcher holds version 1 and the seed version 2 (1 %
// of the bytes overwritten in a few places). Each fetcher takes every block
// the versions share from its own copy, fetches only the new ones, and
// ends with version 2 at its file's final name; the seed sends each new
// block at least once. How many copies it sends is logged, not asserted:
// on so small a swarm it is noisy.
func TestRunUpdate(t *testing.T) {
	const nodes = 20
	for _, tc := range []struct {
		name     string
		size     int64
		places   int
		chunking chunker.Chunking
	}{
		{"fixed 16 KiB", 1 << 20, 10, chunker.Chunking{}},
		{"content-defined", 3 << 20, 2, chunker.DefaultChunking},
	} {
		res, err := Run(context.Background(), Config{Nodes: nodes, Size: tc.size, BlockSize: 16 << 10, Chunking: tc.chunking,
			Method: reconcile.Complete, Update: 0.01, UpdatePlaces: tc.places, Up: 2.5e6, Down: 12.5e6, SuperSeed: true,
			Topology: topology.Small(), Dir: t.TempDir(), Seed: 3})
		if err != nil {
			t.Fatalf("%s: %v (errors %v)", tc.name, err, res.Errors)
		}
		u := res.Update
		if u == nil {
			t.Fatalf("%s: no update figures", tc.name)
		}
		t.Logf("%s: %d blocks, %d new (%d bytes); the seed sent %d block bytes, %.2f copies; median %.2f s, max %.2f s, T* %.3f s (%.2fx, %.2fx; the whole file's %.2f s), with latency %.2f s (%.2fx); %d redundant",
			tc.name, res.Blocks, u.NewBlocks, u.NewBytes, u.SeedBlockBytes, u.Copies, res.MedianS, res.MaxS, res.TStarS, res.MedianTStar, res.MaxTStar, u.FileTStarS,
			u.PathBoundMedianS, u.MedianOverPathBound, res.Redundant)
		if res.Completed != nodes-1 || res.Identical != nodes || res.Root == u.OldRoot {
			t.Errorf("%s: %d completed, %d identical of %d; root %s, version 1's %s", tc.name, res.Completed, res.Identical, nodes, res.Root, u.OldRoot)
		}
		if u.SharedBlocks == 0 || u.NewBlocks == 0 || u.SharedBlocks+u.NewBlocks != res.Blocks ||
			len(u.Reused) != nodes-1 || u.ReusedMin != u.SharedBlocks || u.ReusedMax != u.SharedBlocks {
			t.Errorf("%s: %d shared, %d new of %d blocks; reused %d to %d by %d fetchers", tc.name, u.SharedBlocks, u.NewBlocks, res.Blocks, u.ReusedMin, u.ReusedMax, len(u.Reused))
		}
		// Only the new blocks cross the network, each to every fetcher,
		// the seed's at least once.
		lacked := int64(nodes-1) * u.NewBytes
		if res.BlockBytes < lacked || res.BlockBytes > lacked+res.Redundant*int64(chunker.MaxBlockSize)+16*res.BlocksReceived {
			t.Errorf("%s: %d block bytes on the wire, %d redundant blocks, want %d and a little framing", tc.name, res.BlockBytes, res.Redundant, lacked)
		}
		if u.Copies < 1 || res.TStarS <= 0 || res.TStarS >= u.FileTStarS {
			t.Errorf("%s: %.2f copies, T* %g s of the whole file's %g s", tc.name, u.Copies, res.TStarS, u.FileTStarS)
		}
		// Each fetcher completes after its bound, so the sorted
		// completions lie above the sorted bounds.
		if u.PathBoundMedianS < res.TStarS || u.PathBoundMaxS < u.PathBoundMedianS || res.MedianS < 0.98*u.PathBoundMedianS || res.MaxS < 0.98*u.PathBoundMaxS {
			t.Errorf("%s: bounds with latency %.3f s (median), %.3f s (max); completions %.3f s, %.3f s; T* %.3f s", tc.name, u.PathBoundMedianS, u.PathBoundMaxS, res.MedianS, res.MaxS, res.TStarS)
		}
	}
}

func TestOverlayDelays(t *testing.T) {
	ms := time.Millisecond
	// 0 -10- 1 -10- 2, 0 -50- 2, 3 alone.
	ov := overlay{out: make([][]int, 4), pairs: []pair{{0, 1, 10 * ms}, {1, 2, 10 * ms}, {0, 2, 50 * ms}}}
	if got, want := ov.delays(0), []time.Duration{0, 10 * ms, 20 * ms, math.MaxInt64}; !slices.Equal(got, want) {
		t.Errorf("delays from 0: %v, want %v", got, want)
	}
	if got, want := ov.delays(2), []time.Duration{20 * ms, 10 * ms, 0, math.MaxInt64}; !slices.Equal(got, want) {
		t.Errorf("delays from 2: %v, want %v", got, want)
	}
}
