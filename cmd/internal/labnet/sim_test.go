package labnet

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestSimCommands: sim topology, table4 and swarm on the small preset write their
// table or JSON to the app's writer, draw their plots, and reject bad flags with
// one-line errors.
func TestSimCommands(t *testing.T) {
	out, err := run(t, "", "sim", "topology", "--preset", "small", "--nodes", "20", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var topo struct {
		Routers int `json:"routers"`
		Links   int `json:"links"`
		Arcs    int `json:"arcs"`
	}
	if err := json.Unmarshal([]byte(out), &topo); err != nil || topo.Routers != 110 || topo.Arcs != 2*topo.Links {
		t.Fatalf("topology JSON %v: %s", err, out)
	}
	png := filepath.Join(t.TempDir(), "t4.png")
	out, err = run(t, "", "sim", "table4", "--preset", "small", "--nodes", "20", "--trials", "2", "--n", "400", "--plot", png)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Byers/complete") {
		t.Fatalf("table4 output:\n%s", out)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("plot: %v", err)
	}
	out, err = run(t, "", "sim", "swarm", "--preset", "small", "--nodes", "5", "--blocks", "300", "--method", "all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var swarm struct {
		Runs []struct {
			Method    string `json:"method"`
			Completed int    `json:"completed"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &swarm); err != nil || len(swarm.Runs) != 4 {
		t.Fatalf("swarm JSON %v: %s", err, out)
	}
	for _, r := range swarm.Runs {
		if r.Completed != 5 {
			t.Fatalf("swarm %s: %d of 5 peers completed", r.Method, r.Completed)
		}
	}
	for _, args := range [][]string{
		{"sim", "table4", "--preset", "small", "--trials", "0"},
		{"sim", "table4", "--preset", "small", "--method", "nope"},
		{"sim", "topology", "--preset", "nope"},
		{"sim", "swarm", "--preset", "small", "--share", "2"},
	} {
		_, err := run(t, "", args...)
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%v: %v", args, err)
		}
	}
}

// TestSwarmVersusTestnet runs reconcile testnet and reconcile sim swarm (its
// models, the central schedule and the stripe trees) on the same small
// parameters (12 peers on the small preset's topology and Chord overlay,
// one seed, 2 MiB in 8 blocks of 256 KiB, access links of 32 Mbit/s up and
// 160 Mbit/s down) and reports their completion times over T*, which must
// be the same bound and at least 1 for all.
func TestSwarmVersusTestnet(t *testing.T) {
	common := []string{"--preset", "small", "--seed", "3", "--up", "32Mbit", "--down", "160Mbit", "--json"}
	out, err := run(t, "", append([]string{"testnet", "--peers", "12", "--size", "2MiB", "--block-size", "256KiB",
		"--method", "complete", "--max-sources", "16", "--timeout", "1m", "--dir", t.TempDir()}, common...)...)
	if err != nil {
		t.Fatalf("testnet: %v: %s", err, out)
	}
	var tn testnetReport
	if err := json.Unmarshal([]byte(out), &tn); err != nil || len(tn.Runs) != 1 {
		t.Fatalf("testnet JSON %v: %s", err, out)
	}
	r := tn.Runs[0]
	t.Logf("T* %.2f s; over T*: testnet median %.2fx p95 %.2fx max %.2fx", r.TStarS, r.MedianTStar, r.P95TStar, r.MaxTStar)
	if r.Completed != 11 || r.MedianTStar < 1 || r.MaxTStar < r.MedianTStar {
		t.Errorf("testnet: %d of 11 completed, over T* median %g, max %g", r.Completed, r.MedianTStar, r.MaxTStar)
	}
	if r.SeedOutS < r.TStarS-1e-6 || r.SeedOutS > r.MaxS {
		t.Errorf("testnet: every block out of the seed at %g s, T* %g s, last completion %g s", r.SeedOutS, r.TStarS, r.MaxS)
	}
	if r.SchedP99S <= 0 || r.SchedP99S > r.RunSeconds {
		t.Errorf("testnet: goroutines waited %g s for a CPU (p99) in a %g s run", r.SchedP99S, r.RunSeconds)
	}
	// The rounds model, the watch model (the testnet's own protocol), the
	// central schedule and the stripe trees.
	for _, model := range [][]string{{"--parallel", "8", "--window", "16"}, {"--watch"}, {"--watch", "--super-seed=false"}, {"--watch", "--seed-leaves"},
		{"--central", "--central-lag", "--central-receiver", "random"}, {"--trees", "3", "--trees-by-delay"}} {
		out, err = run(t, "", append(append([]string{"sim", "swarm", "--nodes", "12", "--blocks", "8", "--block-size", "256KiB",
			"--share", "0", "--m", "1024", "--method", "complete", "--reps", "1"}, model...), common...)...)
		if err != nil {
			t.Fatalf("sim swarm %v: %v: %s", model, err, out)
		}
		var sw struct {
			Runs []struct {
				Completed, Fetchers int
				TStarMS             float64 `json:"tstar_ms"`
				Median              float64 `json:"median_over_tstar"`
				P95                 float64 `json:"p95_over_tstar"`
				Max                 float64 `json:"max_over_tstar"`
			} `json:"runs"`
		}
		if err := json.Unmarshal([]byte(out), &sw); err != nil || len(sw.Runs) != 1 {
			t.Fatalf("sim JSON %v: %s", err, out)
		}
		s := sw.Runs[0]
		t.Logf("sim %v: median %.2fx p95 %.2fx max %.2fx", model, s.Median, s.P95, s.Max)
		if s.Completed != 11 || s.Fetchers != 11 {
			t.Errorf("sim %v: completed %d of %d", model, s.Completed, s.Fetchers)
		}
		if math.Abs(r.TStarS-s.TStarMS/1000) > 1e-9 || r.TStarS <= 0 {
			t.Errorf("T*: testnet %g s, sim %v %g ms", r.TStarS, model, s.TStarMS)
		}
		if s.Median < 1 || s.Max < s.Median {
			t.Errorf("sim %v: ratios below 1 or out of order: %g/%g", model, s.Median, s.Max)
		}
	}
	for _, args := range [][]string{
		{"sim", "swarm", "--preset", "small", "--up", "5"},
		{"sim", "swarm", "--preset", "small", "--classes", "0.3:1Mbit/1Mbit"},
		{"sim", "swarm", "--preset", "small", "--parallel", "0"},
		{"sim", "swarm", "--preset", "small", "--free-control"},
		{"sim", "swarm", "--preset", "small", "--watch", "--latency", "bogus"},
		{"sim", "swarm", "--preset", "small", "--watch", "--method", "byers"},
		{"sim", "swarm", "--preset", "small", "--central"},
		{"sim", "swarm", "--preset", "small", "--share", "0", "--up", "1Mbit", "--central", "--central-receiver", "last"},
		{"sim", "swarm", "--preset", "small", "--share", "0", "--up", "1Mbit", "--central", "--central-block", "first"},
		{"sim", "swarm", "--preset", "small", "--central-lag"},
		{"sim", "swarm", "--preset", "small", "--share", "0", "--up", "1Mbit", "--central", "--watch"},
		{"sim", "swarm", "--preset", "small", "--trees", "4"},
		{"sim", "swarm", "--preset", "small", "--share", "0", "--up", "1Mbit", "--trees", "-1"},
		{"sim", "swarm", "--preset", "small", "--share", "0", "--up", "1Mbit", "--trees-by-delay"},
		{"sim", "swarm", "--preset", "small", "--share", "0", "--up", "1Mbit", "--trees", "2", "--central"},
		{"sim", "swarm", "--preset", "small", "--share", "0", "--up", "1Mbit", "--trees", "2", "--method", "complete,bitfield"},
		{"sim", "swarm", "--preset", "small", "--share", "0", "--up", "1Mbit", "--central", "--rarity", "random"},
		{"sim", "swarm", "--preset", "small", "--share", "0", "--up", "1Mbit", "--super-seed=false"},
		{"sim", "swarm", "--preset", "small", "--watch", "--super-seed=false"},
		{"sim", "swarm", "--preset", "small", "--share", "0", "--up", "1Mbit", "--seed-leaves"},
	} {
		if _, err := run(t, "", args...); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestSimSwarmSeedLeaves: sim swarm --watch --seed-leaves says when the
// seed left, in the line reconcile testnet prints for it.
func TestSimSwarmSeedLeaves(t *testing.T) {
	out, err := run(t, "", "sim", "swarm", "--preset", "small", "--nodes", "12", "--blocks", "8", "--block-size", "256KiB",
		"--share", "0", "--up", "32Mbit", "--down", "160Mbit", "--watch", "--seed-leaves", "--method", "complete", "--reps", "1")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !regexp.MustCompile(`(?m)^sim complete: the seed left at [0-9.]+ s \([0-9.]+x T\*\); the peers finished from each other$`).MatchString(out) {
		t.Fatalf("no seed-left line in:\n%s", out)
	}
}

// TestParseMethods: --method takes a name, both, all or a comma list, in
// any case and spacing, and gives each method once, sorted.
func TestParseMethods(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []reconcile.Method
		ok   bool
	}{
		{"complete", []reconcile.Method{reconcile.Complete}, true},
		{"both", []reconcile.Method{reconcile.Complete, reconcile.Byers}, true},
		{"all", reconcile.AllMethods, true},
		{"bitfield, Complete", []reconcile.Method{reconcile.Complete, reconcile.Bitfield}, true},
		{"complete,both,complete", []reconcile.Method{reconcile.Complete, reconcile.Byers}, true},
		{"complete,nope", nil, false},
		{"", nil, false},
	} {
		got, ok := parseMethods(tc.in)
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("parseMethods(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
