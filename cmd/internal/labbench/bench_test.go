package labbench

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
)

// TestBenchCommand runs bench in a short form with every run and two
// repetitions, and checks that the report holds each run's figures, the
// ratios taken in each repetition and the summaries of every fetch.
func TestBenchCommand(t *testing.T) {
	bin := e2eBinary(t)
	cmd := exec.Command(bin, "bench", "--size", "4MiB", "--block-size", "64KiB", "--repeat", "2", "--seeds", "2", "--full-seeds", "2",
		"--compare-fetch", "--window 4", "--settle", "50ms", "--json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	var rep benchReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	// The --compare fetch runs after this build's in the first repetition,
	// before it in the second.
	if len(rep.CompareFirst) != 2 || rep.CompareFirst[0] || !rep.CompareFirst[1] {
		t.Errorf("compare first %v, want [false true]", rep.CompareFirst)
	}
	if rep.Repeat != 2 || rep.Bytes != 4<<20 || rep.FullSeeds != 2 || rep.Seeds != 2 {
		t.Fatalf("report of another run: %+v", rep)
	}
	for name, r := range map[string]*benchRun{"tcp_copy": rep.TCP, "tcp_copy_userspace": rep.TCPUser, "tls_copy": rep.TLS, "one_seed": rep.OneSeed,
		"compare_one_seed": rep.Compare, "full_seeds_run": rep.FullSeed, "multi_seed": rep.MultiSeed} {
		if r == nil || len(r.Each) != 2 || r.Seconds <= 0 || r.MBps <= 0 || r.MinSeconds > r.Seconds || r.MaxSeconds < r.Seconds || r.RecvCPU <= 0 {
			t.Errorf("%s: %+v", name, r)
		}
	}
	for _, k := range []string{"one_seed_vs_tls", "cpu_one_seed_vs_tls", "one_seed_vs_tcp", "one_seed_vs_tcp_userspace", "one_seed_vs_compare",
		"full_seeds_vs_one_seed", "multi_seed_vs_one_seed", "multi_seed_vs_tcp"} {
		r, ok := rep.Ratios[k]
		if !ok || len(r.Each) != 2 || r.Median <= 0 || r.Min > r.Median || r.Max < r.Median {
			t.Errorf("ratio %s: %+v (present %v)", k, r, ok)
		}
	}
	if rep.OneVsTLS != rep.Ratios["one_seed_vs_tls"].Median || rep.FullVsOne != rep.Ratios["full_seeds_vs_one_seed"].Median {
		t.Errorf("top-level ratios are not the medians: %+v", rep)
	}
	// Three fetches of this build per repetition (the --compare run keeps no summary).
	if len(rep.Summaries) != 6 {
		t.Errorf("%d summaries, want 6", len(rep.Summaries))
	}
	for _, s := range rep.Summaries {
		if s.Fetched != s.Blocks || s.Blocks != 64 {
			t.Errorf("a fetch got %d of %d blocks", s.Fetched, s.Blocks)
		}
	}
}

// TestSpeedRatio: the ratios of two runs, each repetition's, and their median.
func TestSpeedRatio(t *testing.T) {
	a := &benchRun{Each: []float64{2, 4}}
	b := &benchRun{Each: []float64{1, 1}}
	if r := speedRatio(a, b); r == nil || r.Min != 0.25 || r.Max != 0.5 || r.Median != 0.375 {
		t.Errorf("speedRatio = %+v, want 0.25, 0.5 and their median", r)
	}
}
