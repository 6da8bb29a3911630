package testnet

import (
	"context"
	"errors"
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
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
		res, err := Run(context.Background(), Config{Nodes: nodes, Size: size, Method: tc.method, Hold: tc.hold,
			Topology: ts.Small(), Dir: t.TempDir(), Seed: 7})
		if err != nil {
			t.Fatalf("%v hold %g: %v (errors %v)", tc.method, tc.hold, err, res)
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
			Topology: ts.Small(), Dir: t.TempDir(), Seed: 5})
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
			Topology: ts.Small(), Dir: t.TempDir()})
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
		{Nodes: 4, Neighbours: NeighboursRandom, Degree: 4, Dir: dir},
		{Nodes: 4},
	} {
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", cfg, err)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Config{Nodes: 4, Size: 1 << 20, Topology: ts.Small(), Dir: t.TempDir()})
	if err == nil {
		t.Fatal("a cancelled run succeeded")
	}
}
