package testnet

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
	"github.com/reconcile-p2p/reconcile/testnet/tracestats"
)

// TestRunCI is the short testnet run CI runs: 20 peers over the mock network
// with transit-stub latencies, both methods, both scenarios. Every peer must
// end with a file that re-hashes to the root; complete reconciliation must
// miss nothing and move every block exactly once.
func TestRunCI(t *testing.T) {
	const nodes, size = 20, 2 << 20
	for _, tc := range []struct {
		method reconcile.Method
		hold   float64
	}{
		{reconcile.Complete, 0}, {reconcile.Byers, 0}, {reconcile.Complete, 0.3}, {reconcile.Byers, 0.3},
	} {
		var last Progress
		res, err := Run(context.Background(), Config{Nodes: nodes, Size: size, Method: tc.method, Hold: tc.hold,
			Topology: topology.Small(), Dir: t.TempDir(), Seed: 7, Progress: func(p Progress) { last = p }})
		if err != nil {
			t.Fatalf("%v hold %g: %v (errors %v)", tc.method, tc.hold, err, res)
		}
		// The last progress is the end: every fetcher done, and (without
		// churn) every block the fetchers lacked stored.
		if last.Done != res.Fetchers || last.Fetchers != res.Fetchers || last.Need <= 0 ||
			tc.method == reconcile.Complete && last.Blocks != last.Need {
			t.Errorf("%v hold %g: last progress %+v for %d fetchers", tc.method, tc.hold, last, res.Fetchers)
		}
		t.Logf("%v hold %g: median %.2f p95 %.2f max %.2f s, wire %v, received %d, redundant %d, missed %d, sessions %d, peak %.0f MiB",
			tc.method, tc.hold, res.MedianS, res.P95S, res.MaxS, res.Wire, res.BlocksReceived, res.Redundant, res.Missed, res.Sessions, res.PeakMemMiB)
		wantFetchers := nodes
		if tc.hold == 0 {
			wantFetchers = nodes - 1
		}
		if res.Fetchers != wantFetchers || res.Completed != res.Fetchers || res.Identical != nodes {
			t.Errorf("%v hold %g: %d fetchers, %d completed, %d identical", tc.method, tc.hold, res.Fetchers, res.Completed, res.Identical)
		}
		if len(res.Completions) != res.Completed || res.MedianS > res.P95S || res.P95S > res.MaxS || res.MaxS > res.RunSeconds {
			t.Errorf("%v hold %g: completion figures out of order: %+v", tc.method, tc.hold, res)
		}
		if res.Sessions == 0 || res.FilterBytes == 0 {
			t.Errorf("%v hold %g: no reconciliation seen: %d sessions, %d filter bytes", tc.method, tc.hold, res.Sessions, res.FilterBytes)
		}
		if tc.method == reconcile.Complete {
			if res.Missed != 0 {
				t.Errorf("complete hold %g: %d missed blocks", tc.hold, res.Missed)
			}
			// Every fetcher receives exactly the blocks it lacked, plus any
			// redundant ones, plus a few bytes of framing per block.
			var lacked int64 = int64(res.Fetchers) * size
			if tc.hold > 0 {
				lacked = 0 // unknown exactly; bounded below by the received count
				lacked = res.BlocksReceived * int64(res.BlockSize)
			}
			hi := lacked + res.Redundant*int64(res.BlockSize) + 16*res.BlocksReceived
			if res.BlockBytes < lacked || res.BlockBytes > hi {
				t.Errorf("complete hold %g: %d block bytes on the wire, want in [%d, %d]", tc.hold, res.BlockBytes, lacked, hi)
			}
		}
	}
}

// TestRunOtherMethods runs the block methods beyond the paper's two: like
// complete reconciliation, none may miss a block.
func TestRunOtherMethods(t *testing.T) {
	for _, m := range []reconcile.Method{reconcile.CCBF, reconcile.Bitfield, reconcile.IBLT} {
		res, err := Run(context.Background(), Config{Nodes: 12, Size: 1 << 20, Method: m, Hold: 0.3,
			Topology: topology.Small(), Dir: t.TempDir(), Seed: 5})
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if res.Identical != 12 || res.Missed != 0 || res.Sessions == 0 || res.Method != m.String() {
			t.Errorf("%v: %d identical, %d missed, %d sessions, method %s", m, res.Identical, res.Missed, res.Sessions, res.Method)
		}
	}
}

// TestRunTCP runs a few peers over real loopback sockets.
func TestRunTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets")
	}
	for _, m := range []reconcile.Method{reconcile.Complete, reconcile.Byers} {
		res, err := Run(context.Background(), Config{Nodes: 6, Size: 1 << 20, Method: m, Transport: TransportTCP,
			Topology: topology.Small(), Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if res.Identical != 6 || res.Latency != "none" || res.MeanLatencyMS != 0 {
			t.Errorf("%v: %d identical, latency %s %.0f ms", m, res.Identical, res.Latency, res.MeanLatencyMS)
		}
		if m == reconcile.Complete && res.Missed != 0 {
			t.Errorf("complete: %d missed", res.Missed)
		}
	}
}

func TestRunConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, cfg := range []Config{
		{Nodes: 1, Dir: dir},
		{Nodes: 4, Hold: 1.5, Dir: dir},
		{Nodes: 4, Hold: -0.1, Dir: dir},
		{Nodes: 4, BlockSize: 1, Dir: dir},
		{Nodes: 4, Method: reconcile.Method(99), Dir: dir},
		{Nodes: 4, Bandwidth: -1, Dir: dir},
		{Nodes: 4, Up: -1, Dir: dir},
		{Nodes: 4, Classes: []ts.AccessClass{{Share: 0.5, Up: 1, Down: 1}}, Dir: dir},
		{Nodes: 4, Neighbours: NeighboursRandom, Degree: 4, Dir: dir},
		{Nodes: 4},
		{Nodes: 4, Trees: -1, Dir: dir},
		{Nodes: 4, Trees: 2, Hold: 0.5, Dir: dir},
		{Nodes: 4, Trees: 2, RepairAfter: -time.Second, Dir: dir},
		{Nodes: 4, Trees: 2, Method: reconcile.Byers, Dir: dir},
		{Nodes: 4, SeedLeaves: true, Hold: 0.5, Dir: dir},
		{Nodes: 4, SeedLeaves: true, Liars: 0.25, Dir: dir},
		{Nodes: 4, SeedLeaves: true, Churn: Churn{Leave: 0.25}, Dir: dir},
		{Nodes: 4, Chunking: chunker.Chunking{Min: 1, Normal: 3, Max: 2}, Dir: dir},
		{Nodes: 4, Chunking: chunker.DefaultChunking, Method: reconcile.Byers, Dir: dir},
		{Nodes: 4, Update: 1.5, Dir: dir},
		{Nodes: 4, Update: 0.1, UpdatePlaces: -1, Dir: dir},
		{Nodes: 4, Update: 0.1, Hold: 0.5, Dir: dir},
		{Nodes: 4, Update: 0.1, Method: reconcile.Byers, Dir: dir},
		{Nodes: 4, Update: 0.1, Churn: Churn{Leave: 0.25}, Dir: dir},
	} {
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", cfg, err)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Config{Nodes: 4, Size: 1 << 20, Topology: topology.Small(), Dir: t.TempDir()})
	if err == nil {
		t.Fatal("a cancelled run succeeded")
	}
}

// TestRunAccessLinks runs a one-seed swarm with access links on the mock
// network with transit-stub latencies: T* is a physical lower bound, so no
// fetcher may finish before it, and every peer must end byte-identical. The
// heterogeneous case gives half the peers slower links.
func TestRunAccessLinks(t *testing.T) {
	const nodes, size = 12, 2 << 20
	for _, tc := range []struct {
		name    string
		cfg     Config
		tstar   float64
		classes bool
	}{
		// 4 MB/s up, 20 MB/s down: T* = max(F/4e6, F/20e6, 11·F/48e6) = F/4e6.
		{"uniform", Config{Up: 4e6, Down: 20e6}, size / 4e6, false},
		// Half the peers 4 MB/s up and 8 MB/s down, half 2 MB/s up and
		// 4 MB/s down; the seed uploads at 8 MB/s. T* depends on the
		// classes drawn, computed by FluidBound; at least F/4e6 (the slow
		// downloads).
		{"classes", Config{Classes: []ts.AccessClass{{Share: 0.5, Down: 8e6, Up: 4e6}, {Share: 0.5, Down: 4e6, Up: 2e6}}, SeedUp: 8e6}, size / 4e6, true},
	} {
		cfg := tc.cfg
		cfg.Nodes, cfg.Size, cfg.Method, cfg.Topology, cfg.Dir, cfg.Seed = nodes, size, reconcile.Complete, topology.Small(), t.TempDir(), 3
		// Every neighbour a source (a fetch keeps its first MaxSources
		// sources even when they have nothing), and a bound on a stall.
		cfg.MaxSources, cfg.Timeout = nodes, time.Minute
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		t.Logf("%s: T* %.2f s, median %.2f (%.2fx) p95 %.2f (%.2fx) max %.2f s (%.2fx)", tc.name, res.TStarS,
			res.MedianS, res.MedianTStar, res.P95S, res.P95TStar, res.MaxS, res.MaxTStar)
		if tc.classes {
			if res.TStarS < tc.tstar || res.SeedUpBps != 8e6 || len(res.Classes) != 2 {
				t.Errorf("%s: T* %g (want >= %g), seed up %g, classes %v", tc.name, res.TStarS, tc.tstar, res.SeedUpBps, res.Classes)
			}
		} else if math.Abs(res.TStarS-tc.tstar) > 1e-9 {
			t.Errorf("%s: T* = %g, want %g", tc.name, res.TStarS, tc.tstar)
		}
		if res.Completed != nodes-1 || res.Identical != nodes || res.Missed != 0 {
			t.Errorf("%s: %d completed, %d identical, %d missed", tc.name, res.Completed, res.Identical, res.Missed)
		}
		if res.Completions[0] < res.TStarS {
			t.Errorf("%s: a fetcher finished in %.3f s, before T* = %.3f s", tc.name, res.Completions[0], res.TStarS)
		}
		if res.MedianTStar != res.MedianS/res.TStarS || res.MaxTStar < 1 {
			t.Errorf("%s: ratios %g %g", tc.name, res.MedianTStar, res.MaxTStar)
		}
	}
}

// TestRunSeedLeaves: a super-seed that leaves once every block is stored by
// another peer leaves the fetchers to finish from each other, every one of
// them byte-identical.
func TestRunSeedLeaves(t *testing.T) {
	const nodes, size = 12, 2 << 20
	for _, choice := range []peer.BlockChoice{peer.BlockRarest, peer.BlockRandom} {
		var trace bytes.Buffer
		res, err := Run(context.Background(), Config{Nodes: nodes, Size: size, BlockSize: 32 << 10, Method: reconcile.Complete,
			Up: 4e6, Down: 20e6, SuperSeed: true, SeedLeaves: true, Choice: choice, MaxSources: nodes, Timeout: time.Minute,
			Topology: topology.Small(), Dir: t.TempDir(), Seed: 3, Trace: &trace})
		if err != nil {
			t.Fatalf("%v: %v", choice, err)
		}
		// The seed is the peer sim swarm's model seeds from too; the
		// trace gives the run's time scale and T*.
		runs, err := tracestats.Read(&trace)
		if err != nil {
			t.Fatalf("%v: trace: %v", choice, err)
		}
		if st := runs[0]; len(runs) != 1 || st.Seed != ts.SeedPeer(3, nodes) || st.Scale != res.TimeScale || math.Abs(st.TStarS-res.TStarS) > 1e-4 || st.Stayed != nodes-1 {
			t.Errorf("%v: trace: %d runs, seed %d, scale %g, T* %g s, %d done; want 1, %d, %g, %g s, %d", choice, len(runs), st.Seed, st.Scale, st.TStarS, st.Stayed,
				ts.SeedPeer(3, nodes), res.TimeScale, res.TStarS, nodes-1)
		}
		t.Logf("%v: every block out of the seed at %.2f s, the seed left at %.2f s; median %.2f s, max %.2f s (T* %.2f s)",
			choice, res.SeedOutS, res.SeedLeftS, res.MedianS, res.MaxS, res.TStarS)
		if res.SeedLeftS <= 0 || res.SeedLeftS < res.SeedOutS || res.SeedLeftS >= res.MaxS {
			t.Errorf("%v: the seed left at %.3f s, every block out of it at %.3f s, the last fetcher done at %.3f s", choice, res.SeedLeftS, res.SeedOutS, res.MaxS)
		}
		if res.Completed != nodes-1 || res.Identical != nodes || res.Missed != 0 {
			t.Errorf("%v: %d completed, %d identical, %d missed", choice, res.Completed, res.Identical, res.Missed)
		}
	}
}
