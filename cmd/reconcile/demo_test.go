package main

import (
	"encoding/json"
	"testing"
)

// TestDemoMethods: every block method starts the fetchers from the same
// different parts (so their figures compare), and every copy ends identical.
func TestDemoMethods(t *testing.T) {
	methods := []string{"complete", "ccbf", "bitfield", "iblt", "byers"}
	if testing.Short() {
		methods = []string{"iblt", "byers"}
	}
	for _, m := range methods {
		t.Run(m, func(t *testing.T) {
			out, err := run(t, "", "demo", "--size", "1MiB", "--block-size", "16KiB", "--fetchers", "2", "--method", m, "--json", "--dir", t.TempDir())
			if err != nil {
				t.Fatalf("demo --method %s: %v\n%s", m, err, out)
			}
			var rep demoReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !rep.Identical || rep.Method != m || len(rep.Fetchers) != 2 {
				t.Fatalf("report: %+v", rep)
			}
			for j, f := range rep.Fetchers {
				// 64 blocks in 3 parts: fetcher j holds [j*64/3, (j+1)*64/3).
				want := (j+1)*rep.Blocks/3 - j*rep.Blocks/3
				if m == "byers" {
					want = 0
				}
				if f.HeldAtStart != want {
					t.Errorf("%s holds %d blocks at start, want %d", f.Name, f.HeldAtStart, want)
				}
				if m != "byers" && f.Summary.Fetched != rep.Blocks-want {
					t.Errorf("%s fetched %d blocks, want %d", f.Name, f.Summary.Fetched, rep.Blocks-want)
				}
			}
		})
	}
}
