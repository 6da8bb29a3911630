package methods

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestRunSmall runs a small sweep: the exact methods are exact, complete and ccbf
// miss nothing, ccbf's filter is at most 60 % of r*m bits, the IBLT's cells per
// difference element stay under 2.5 (batched), and the runs are deterministic.
func TestRunSmall(t *testing.T) {
	cfg := Config{N: 600, Diffs: []int{1, 30, 300, 600}, Trials: 2, Seed: 3, NN: 2048}
	rows, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(cfg.Diffs)*len(reconcile.AllMethods) {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		switch r.Method {
		case "bitfield", "iblt":
			if r.MaxMissed != 0 || r.MaxRedundant != 0 {
				t.Errorf("%s d=%d: missed %d redundant %d", r.Method, r.D, r.MaxMissed, r.MaxRedundant)
			}
		case "complete", "ccbf":
			if r.MaxMissed != 0 {
				t.Errorf("%s d=%d: missed %d", r.Method, r.D, r.MaxMissed)
			}
		}
		if r.Method == "ccbf" && r.FilterRatio > 0.6 {
			t.Errorf("ccbf d=%d: filter %.2f of r*m", r.D, r.FilterRatio)
		}
		if r.Method == "iblt" && r.D >= 100 && r.CellsPerDiff > 2.5 {
			t.Errorf("iblt d=%d: %.2f cells per element", r.D, r.CellsPerDiff)
		}
		if r.WireBytes <= 0 || r.RoundTrips < 1 {
			t.Errorf("%s d=%d: wire %v round trips %v", r.Method, r.D, r.WireBytes, r.RoundTrips)
		}
	}
	again, _ := Run(context.Background(), cfg)
	for i := range rows {
		if rows[i].WireBytes != again[i].WireBytes || rows[i].Missed != again[i].Missed {
			t.Fatalf("row %d differs between runs of the same seed", i)
		}
	}
	if b := Best(rows, 1<<18); b[1] == "" {
		t.Fatal("no best method at d = 1")
	}
	if _, err := Run(context.Background(), Config{N: 10, Diffs: []int{11}, Trials: 1}); err == nil {
		t.Fatal("d > n accepted")
	}
}

// TestPaperPointsJSON: the default sweep carries the paper's four Table 3 points,
// and the rows encode as JSON (the illegible figure is left out, not NaN).
func TestPaperPointsJSON(t *testing.T) {
	cfg := Default()
	cfg.Trials, cfg.Diffs = 1, []int{1000, 2000, 3000, 3500}
	cfg.Methods = []reconcile.Method{reconcile.Complete}
	rows, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Paper == nil || r.Paper.N0 != r.N-r.D {
			t.Fatalf("d=%d: paper point %+v", r.D, r.Paper)
		}
	}
	if rows[0].Paper.CompleteRedundant != nil || rows[1].Paper.CompleteRedundant == nil {
		t.Fatal("illegible figure not marked")
	}
	if _, err := json.Marshal(rows); err != nil {
		t.Fatal(err)
	}
}

// TestRunUniverse: with a file larger than S_A ∪ S_B, every row reports that
// universe, Byers (coded blocks) is skipped, and nothing is missed.
func TestRunUniverse(t *testing.T) {
	cfg := Config{N: 300, Diffs: []int{10, 300}, Trials: 2, Seed: 4, NN: 2048, Universe: 5000}
	rows, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(cfg.Diffs)*(len(reconcile.AllMethods)-1) {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Method == "byers" || r.Universe != cfg.Universe || r.MaxMissed != 0 || r.Paper != nil {
			t.Fatalf("%s d=%d: universe %d, missed %d, paper %v", r.Method, r.D, r.Universe, r.MaxMissed, r.Paper)
		}
	}
}
