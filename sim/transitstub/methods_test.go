package transitstub

import (
	"errors"
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestTable4NewMethods runs the methods beyond the paper's through RunTable4 (real
// sessions): the exact ones deliver exactly the blocks A lacks, ccbf never misses,
// and the bitfield and ccbf filters are smaller than complete's (the IBLT's grow
// with the difference, here 200 blocks).
func TestTable4NewMethods(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	cfg := smallTable4()
	cfg.Trials = 4
	cfg.Methods = []reconcile.Method{reconcile.Complete, reconcile.Bitfield, reconcile.IBLT, reconcile.CCBF}
	cfg.Costs = fixedCosts(600, 900)
	rows, err := RunTable4(net, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if len(r.Others) != 3 || r.Complete == nil {
			t.Fatalf("row %+v: %d other results", r.Row, len(r.Others))
		}
		for _, m := range r.Others {
			want := float64(r.KK - cfg.N)
			if m.Failed != 0 || m.Missed != 0 || m.Sent-m.Redundant != want {
				t.Fatalf("row %+v %v: %+v", r.Row, m.Method, m)
			}
			if m.Method.Exact() && m.Redundant != 0 {
				t.Fatalf("row %+v %v: %.2f redundant", r.Row, m.Method, m.Redundant)
			}
			if m.Method != reconcile.IBLT && m.FilterBytes >= r.Complete.FilterBytes {
				t.Fatalf("row %+v %v: filter %.0f B, complete's %.0f", r.Row, m.Method, m.FilterBytes, r.Complete.FilterBytes)
			}
			if m.MeanMS <= 0 {
				t.Fatalf("row %+v %v: time %.3f", r.Row, m.Method, m.MeanMS)
			}
		}
	}
}

// TestSwarmNewMethods: the swarm model runs bitfield (exact: no redundant block)
// and ccbf (complete with compressed filters: same blocks, fewer filter bytes), and
// refuses iblt clearly.
func TestSwarmNewMethods(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	costs := fixedCosts(800)
	complete, err := RunSwarm(net, smallSwarm(reconcile.Complete), costs)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []reconcile.Method{reconcile.Bitfield, reconcile.CCBF} {
		r, err := RunSwarm(net, smallSwarm(m), costs)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if r.Completed != 30 || r.MissedBlocks != 0 {
			t.Fatalf("%v: %d of 30 completed, %d missed", m, r.Completed, r.MissedBlocks)
		}
		if m == reconcile.Bitfield && r.RedundantBlocks != 0 {
			t.Fatalf("bitfield sent %d redundant blocks", r.RedundantBlocks)
		}
		perC := float64(complete.Bytes["filter"]) / float64(complete.Reconciliations)
		perM := float64(r.Bytes["filter"]) / float64(r.Reconciliations)
		if perM >= 0.6*perC {
			t.Fatalf("%v: %.0f filter bytes an exchange, complete %.0f", m, perM, perC)
		}
	}
	if _, err := RunSwarm(net, smallSwarm(reconcile.IBLT), costs); !errors.Is(err, ErrParams) {
		t.Fatalf("iblt swarm: %v", err)
	}
}
