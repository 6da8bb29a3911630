package labnet

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/testnet"
	"github.com/reconcile-p2p/reconcile/testnet/tracestats"
)

func TestTestnetCommand(t *testing.T) {
	dir := t.TempDir()
	plotFile := filepath.Join(dir, "t.png")
	out, err := runJSON(t, "testnet", "--nodes", "6", "--size", "1MiB", "--preset", "small", "--latency", "none",
		"--method", "both", "--json", "--plot", plotFile, "--dir", filepath.Join(dir, "stores"))
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var rep testnetReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Method != "complete" || rep.Runs[1].Method != "byers" {
		t.Fatalf("runs %+v", rep.Runs)
	}
	for _, r := range rep.Runs {
		if r.Completed != 5 || r.Identical != 6 || r.Blocks != 4 || r.Latency != "none" {
			t.Errorf("%s: %d completed, %d identical, %d blocks, latency %s", r.Method, r.Completed, r.Identical, r.Blocks, r.Latency)
		}
	}
	if rep.Runs[0].Missed != 0 {
		t.Errorf("complete missed %d blocks", rep.Runs[0].Missed)
	}
	f, err := os.Open(plotFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("--plot: %v", err)
	}

	out, err = run(t, "", "testnet", "--nodes", "4", "--size", "512KiB", "--preset", "small", "--hold", "0.5", "--method", "complete", "--transport", "tcp")
	if err != nil || !strings.Contains(out, "4 peers over tcp") || !strings.Contains(out, "every peer holding 50%") || !strings.Contains(out, "4/4") {
		t.Fatalf("human output %q, %v", out, err)
	}

	// Access links: T* and the ratio lines, rates in Mbit/s.
	out, err = run(t, "", "testnet", "--peers", "5", "--size", "512KiB", "--preset", "small", "--latency", "none",
		"--method", "complete", "--up", "64Mbit", "--down", "32MiB/s", "--seed-up", "128Mbit")
	if err != nil || !strings.Contains(out, "up 64 Mbit/s, down 268.435 Mbit/s per peer; seed up 128 Mbit/s") ||
		!strings.Contains(out, "testnet complete: T* ") || !strings.Contains(out, "completion over T*: median ") {
		t.Fatalf("access links output %q, %v", out, err)
	}

	// Churn and liars: their lines, and the baseline without them.
	out, err = runJSON(t, "testnet", "--peers", "12", "--size", "512KiB", "--block-size", "64KiB", "--preset", "small", "--latency", "none",
		"--method", "complete", "--churn", "0.2", "--liars", "0.2", "--baseline", "--json")
	if err != nil {
		t.Fatalf("churn and liars: %v: %s", err, out)
	}
	rep = testnetReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if len(rep.Runs) != 1 || len(rep.Baselines) != 1 {
		t.Fatalf("%d runs, %d baselines", len(rep.Runs), len(rep.Baselines))
	}
	if r, b := rep.Runs[0], rep.Baselines[0]; r.Liars != 2 || r.Left != 2 || r.Rejoined != 1 || r.LateJoined != 1 ||
		r.Completed != r.Fetchers || r.Identical != r.Checked || r.Missed != 0 || b.Liars != 0 || b.Left != 0 || b.Identical != 12 {
		t.Errorf("churn and liars: run %+v, baseline %+v", r, b)
	}
	out, err = run(t, "", "testnet", "--peers", "8", "--size", "256KiB", "--block-size", "64KiB", "--preset", "small", "--latency", "none",
		"--method", "complete", "--churn", "0.3,0.15,0.15", "--liars", "0.15", "--liar-kind", "corrupt", "--baseline")
	if err != nil || !strings.Contains(out, "testnet complete churn 0.3,0.15,0.15: ") || !strings.Contains(out, "testnet complete liars: 1 (1 corrupt, 0 phantom)") ||
		!strings.Contains(out, "testnet complete without churn and liars: median ") {
		t.Fatalf("churn and liars output %q, %v", out, err)
	}

	// Block choices side by side, and a time scale: a run per choice, times
	// at the described rates.
	out, err = runJSON(t, "testnet", "--peers", "6", "--size", "512KiB", "--block-size", "64KiB", "--preset", "small", "--latency", "none",
		"--method", "complete", "--up", "64Mbit", "--down", "128Mbit", "--rarity", "random,exact,filters", "--time-scale", "2", "--json")
	if err != nil {
		t.Fatalf("rarity: %v: %s", err, out)
	}
	rep = testnetReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if len(rep.Runs) != 3 {
		t.Fatalf("%d runs of three block choices", len(rep.Runs))
	}
	for k, want := range []string{"random", "rarest", "rarest-filters"} {
		r := rep.Runs[k]
		if r.Choice != want || r.TimeScale != 2 || r.Identical != 6 || r.TStarS <= 0 || r.MedianS < r.TStarS {
			t.Errorf("run %d: choice %s (want %s), time scale %g, %d identical, median %g s, T* %g s", k, r.Choice, want, r.TimeScale, r.Identical, r.MedianS, r.TStarS)
		}
	}

	// Stripe trees: pushes, and the fetches repairing.
	out, err = run(t, "", "testnet", "--peers", "8", "--size", "512KiB", "--block-size", "64KiB", "--preset", "small",
		"--up", "32Mbit", "--down", "160Mbit", "--trees", "3")
	if err != nil {
		t.Fatalf("trees: %v: %s", err, out)
	}
	for _, want := range []string{`complete-trees-3 +7/7 +8/8 `, `testnet complete-trees-3: T\*`, `the seed uploaded 1.0 copies`, `every block had left the seed`, `testnet complete-trees-3: 56 of the 56 blocks received came down the trees`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("trees: no %q in:\n%s", want, out)
		}
	}

	// The seed leaving after its first copy: the others finish alone.
	out, err = run(t, "", "testnet", "--peers", "8", "--size", "512KiB", "--block-size", "32KiB", "--preset", "small",
		"--up", "32Mbit", "--down", "160Mbit", "--seed-leaves")
	if err != nil {
		t.Fatalf("seed leaves: %v: %s", err, out)
	}
	for _, want := range []string{`complete +7/7 +8/8 `, `testnet complete: the seed left at [0-9.]+ s \([0-9.]+x T\*\); the peers finished from each other`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("seed leaves: no %q in:\n%s", want, out)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"testnet", "--seed-leaves", "--hold", "0.5"}, "--seed-leaves needs one seed"},
		{[]string{"testnet", "--seed-leaves", "--liars", "0.1"}, "--seed-leaves takes no --churn or --liars"},
		{[]string{"testnet", "--seed-leaves", "--method", "both"}, "--seed-leaves needs block methods"},
		{[]string{"testnet", "--trees", "-1"}, "--trees must not be negative"},
		{[]string{"testnet", "--trees", "2", "--method", "both"}, "--trees needs block methods"},
		{[]string{"testnet", "--trees", "2", "--hold", "0.5"}, "--trees needs one seed"},
		{[]string{"testnet", "--repair-after", "1s"}, "with --trees"},
		{[]string{"testnet", "--trees", "2", "--repair-after", "-1s"}, "--repair-after"},
		{[]string{"testnet", "--churn", "lots"}, "--churn"},
		{[]string{"testnet", "--churn", "0.1,0.2,0"}, "--churn"},
		{[]string{"testnet", "--liars", "1"}, "--liars must be in [0, 1)"},
		{[]string{"testnet", "--liar-kind", "honest"}, "--liar-kind"},
		{[]string{"testnet", "--stuck-after", "0s"}, "--stuck-after must be positive"},
		{[]string{"testnet", "--liars", "0.1", "--method", "both"}, "not byers"},
		{[]string{"testnet", "--up", "20"}, "--up"},
		{[]string{"testnet", "--down", "2MB/s"}, "--down"},
		{[]string{"testnet", "--classes", "0.5:10Mbit/2Mbit"}, "--classes"},
		{[]string{"testnet", "--classes", "1:10Mbit/2Mbit", "--up", "1Mbit"}, "replaces --up"},
		{[]string{"testnet", "--nodes", "1"}, "--nodes must be at least 2"},
		{[]string{"testnet", "--size", "big"}, "--size"},
		{[]string{"testnet", "--hold", "2"}, "--hold must be in [0, 1]"},
		{[]string{"testnet", "--method", "fountain"}, "--method"},
		{[]string{"testnet", "--method", "complete,"}, "--method"},
		{[]string{"testnet", "--latency", "fast"}, "--latency"},
		{[]string{"testnet", "--bandwidth", "lots"}, "--bandwidth"},
		{[]string{"testnet", "--transport", "udp"}, "--transport"},
		{[]string{"testnet", "--neighbours", "all"}, "--neighbours"},
		{[]string{"testnet", "--preset", "huge"}, "--preset"},
		{[]string{"testnet", "--plot", "x.pdf"}, ".png or .svg"},
		{[]string{"testnet", "--max-sources", "0"}, "--max-sources"},
		{[]string{"testnet", "--rarity", "exact,popular"}, "--rarity"},
		{[]string{"testnet", "--time-scale", "0.5"}, "--time-scale"},
		{[]string{"testnet", "--time-scale", "fast"}, "--time-scale"},
		{[]string{"testnet", "--mem-limit", "much", "--nodes", "2"}, "--mem-limit"},
		{[]string{"testnet", "--gc-percent", "-2", "--nodes", "2"}, "--gc-percent -2"},
		{[]string{"testnet", "--gc-percent", "-1", "--mem-limit", "0", "--nodes", "2"}, "-1 with a --mem-limit"},
		{[]string{"testnet", "extra"}, `unknown command "extra"`},
		{[]string{"testnet", "trac"}, `did you mean "trace"?`},
		{[]string{"testnet", "--nodes", "4", "--neighbours", "random", "--degree", "4", "--preset", "small"}, "random neighbours"},
	} {
		if _, err := run(t, "", tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err = %v, want one line containing %q", tc.args, err, tc.want)
		}
	}
}

// TestTestnetProgress: the testnet's progress counts the blocks stored of
// all the fetchers lacked, so that its time left means something while no
// fetcher is done (a run's fetchers end together, in its last seconds); it
// shows 100% only once every fetcher is done, even when peers that left
// for good never stored all they lacked.
func TestTestnetProgress(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    testnet.Progress
		want cliutil.ProgressState
	}{
		{"mid-run", testnet.Progress{Done: 0, Fetchers: 199, Blocks: 50944, Need: 203776},
			cliutil.ProgressState{Done: 50944, Total: 203776, Session: -1, Extra: "0/199 fetchers done"}},
		{"all stored, fetchers still running", testnet.Progress{Done: 198, Fetchers: 199, Blocks: 203790, Need: 203776},
			cliutil.ProgressState{Done: 203775, Total: 203776, Session: -1, Extra: "198/199 fetchers done"}},
		{"done, leavers short", testnet.Progress{Done: 169, Fetchers: 169, Blocks: 190000, Need: 200000},
			cliutil.ProgressState{Done: 200000, Total: 200000, Session: -1, Extra: "169/169 fetchers done"}},
		{"nothing to fetch", testnet.Progress{Done: 0, Fetchers: 3},
			cliutil.ProgressState{Done: 0, Total: 1, Session: -1, Extra: "0/3 fetchers done"}},
	} {
		if got := testnetProgressState(tc.p); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// A quarter of the blocks in 10 s: 30 s left, while no fetcher is done.
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pr := cliutil.NewProgressWriter(&buf, cliutil.ProgressPlain, "complete blocks stored", false)
	pr.SetClock(func() time.Time { return now })
	now = now.Add(10 * time.Second)
	testnetProgress(pr)(testnet.Progress{Fetchers: 199, Blocks: 50944, Need: 203776})
	if got, want := buf.String(), "complete blocks stored:  25% 50944/203776, 30s left, 0/199 fetchers done\n"; got != want {
		t.Errorf("progress line %q, want %q", got, want)
	}
}

// TestCPUWarning: a run whose CPU was near its limit, or whose goroutines
// waited for a CPU more than waitShare of the mean latency (at the described
// rates), is flagged with a larger time scale to try; the runs measured clean
// are not.
func TestCPUWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    testnet.Result
		want string // a part of the warning, "" for none
	}{
		{"clean, scale 25", testnet.Result{TimeScale: 25, CPUUse: 0.26, SchedP99S: 0.034, MeanLatencyMS: 373}, ""},
		{"clean, scale 15", testnet.Result{TimeScale: 15, CPUUse: 0.34, SchedP99S: 0.025, MeanLatencyMS: 373}, ""},
		{"slow day, scale 15", testnet.Result{TimeScale: 15, CPUUse: 0.43, SchedP99S: 0.235, MeanLatencyMS: 373},
			"up to 16 ms (p99 at the described rates), 4% of the mean latency: the times may hold the machine's delays; run again with --time-scale 23 or more"},
		{"busy", testnet.Result{TimeScale: 6, CPUUse: 0.9, SchedP99S: 0.01, MeanLatencyMS: 373}, "near its limit"},
		{"no latency", testnet.Result{TimeScale: 1, CPUUse: 0.5, SchedP99S: 0.05}, ""},
		{"real time", testnet.Result{CPUUse: 0.3, SchedP99S: 0.02, MeanLatencyMS: 373}, "--time-scale 2 or more"},
	} {
		got := cpuWarning(&tc.r)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestTestnetTrace writes a trace of a small run with stripe trees and a
// liar, and summarizes it with reconcile testnet trace.
func TestTestnetTrace(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "run.trace")
	out, err := run(t, "", "testnet", "--peers", "8", "--size", "256KiB", "--block-size", "16KiB", "--preset", "small",
		"--up", "64Mbit", "--down", "128Mbit", "--trees", "2", "--liars", "0.15", "--trace", trace)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	out, err = run(t, "", "testnet", "trace", trace)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"complete: seed node ", ", T* ", "1 liars, 0 left mid-fetch", "6 peers that never left: done at ",
		"until the seed had sent every unit once", "stripes, slowest first", "    stripe "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, "", "testnet", "trace", "--json", trace)
	var runs []tracestats.Stats
	if err != nil || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 1 || runs[0].Stayed != 6 || runs[0].Liars != 1 || runs[0].TStarS <= 0 || len(runs[0].Stripes) != 2 {
		t.Errorf("--json: %v, %q", err, out)
	}
	if out, err := run(t, "", "testnet", "trace"); err == nil || !strings.Contains(out+err.Error(), "want one trace FILE") {
		t.Errorf("no FILE: %v, %q", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.trace")
	if err := os.WriteFile(bad, []byte("start complete 0\npushed 1 x 2 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "", "testnet", "trace", bad); err == nil || !strings.Contains(out+err.Error(), "line 2") {
		t.Errorf("malformed trace: %v, %q", err, out)
	}
}
