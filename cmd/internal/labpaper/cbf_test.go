package labpaper

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

func TestCBFCommands(t *testing.T) {
	dir := t.TempDir()
	f := func(name string) string { return filepath.Join(dir, name) }
	universe := "alpha\nbeta\ngamma\ndelta\r\nepsilon" // a CRLF line and no final newline
	if _, err := run(t, universe, "cbf", "build", "--m", "4096", "--k", "4", "--hash", "sha1", "-o", f("u.cbf")); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "alpha\nbeta\n", "cbf", "build", "--m", "4096", "--k", "4", "--hash", "sha1", "-o", f("a.cbf")); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "beta\ngamma\ndelta\n", "cbf", "build", "--m", "4096", "--k", "4", "--hash", "sha1", "-o", f("b.cbf")); err != nil {
		t.Fatal(err)
	}
	// Flags after the positional arguments work too (-o at the end).
	if _, err := run(t, "", "cbf", "op", "subtract", "--universe", f("u.cbf"), f("b.cbf"), f("a.cbf"), "-o", f("bma.cbf")); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, universe, "cbf", "query", f("bma.cbf"))
	if err != nil {
		t.Fatal(err)
	}
	// B \ A = {gamma, delta}: both must be found (no false negatives).
	if !strings.Contains(out, "gamma\n") || !strings.Contains(out, "delta\n") {
		t.Errorf("query of B\\A printed %q, want gamma and delta among them", out)
	}
	for _, op := range []string{"union", "xor", "intersect"} {
		if _, err := run(t, "", "cbf", "op", op, "-u", f("u.cbf"), f("a.cbf"), f("b.cbf"), "-o", f(op+".cbf")); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	if _, err := run(t, "", "cbf", "op", "complement", "-u", f("u.cbf"), f("a.cbf"), "-o", f("na.cbf")); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "", "cbf", "info", "--json", "--counters", f("union.cbf"))
	if err != nil {
		t.Fatal(err)
	}
	var info cbfInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("info --json: %v\n%s", err, out)
	}
	if info.M != 4096 || info.K != 4 || info.R != 4 || info.Hash != "sha1" || len(info.Counters) != 4096 {
		t.Errorf("info = %+v (counters %d)", info, len(info.Counters))
	}
	sum := 0
	for _, c := range info.Counters {
		sum += int(c)
	}
	if sum != 4*4 { // A ∪ B = {alpha, beta, gamma, delta}, k = 4 each (T8 sums)
		t.Errorf("union counters sum to %d, want 16", sum)
	}
}

func TestCBFErrors(t *testing.T) {
	dir := t.TempDir()
	f := func(name string) string { return filepath.Join(dir, name) }
	if _, err := run(t, "x\n", "cbf", "build", "--m", "1024", "--k", "3", "-o", f("a.cbf")); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "x\n", "cbf", "build", "--m", "2048", "--k", "3", "-o", f("b.cbf")); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(f("a.cbf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f("trunc.cbf"), good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 1
	if err := os.WriteFile(f("flip.cbf"), flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing", []string{"cbf", "info", f("none.cbf")}, "no such file"},
		{"truncated", []string{"cbf", "info", f("trunc.cbf")}, "corrupt"},
		{"checksum", []string{"cbf", "info", f("flip.cbf")}, "corrupt"},
		{"not homologous", []string{"cbf", "op", "intersect", f("a.cbf"), f("b.cbf"), "-o", f("x.cbf")}, "not homologous"},
		{"unknown op", []string{"cbf", "op", "nand", "-u", f("a.cbf"), f("a.cbf"), f("a.cbf"), "-o", f("x.cbf")}, "unknown operation"},
		{"unknown op without universe", []string{"cbf", "op", "nand", f("a.cbf"), f("a.cbf"), "-o", f("x.cbf")}, "unknown operation"},
		{"unknown op with missing file", []string{"cbf", "op", "nand", "-u", f("none.cbf"), f("a.cbf"), f("a.cbf"), "-o", f("x.cbf")}, "unknown operation"},
		{"no universe", []string{"cbf", "op", "union", f("a.cbf"), f("a.cbf"), "-o", f("x.cbf")}, "--universe"},
		{"sha1 m", []string{"cbf", "build", "--m", "1000", "--k", "3", "--hash", "sha1", "-o", f("x.cbf")}, "power of two"},
		{"no size", []string{"cbf", "build", "-o", f("x.cbf")}, "--m"},
		{"both sizings", []string{"cbf", "build", "--m", "1024", "--k", "3", "--n", "100", "-o", f("x.cbf")}, "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
	if _, err := os.Stat(f("x.cbf")); !os.IsNotExist(err) {
		t.Errorf("a failed command left an output file behind (%v)", err)
	}
}

func TestExperimentTable1JSON(t *testing.T) {
	out, err := run(t, "", "experiment", "table1", "--trials", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []struct {
			M          int      `json:"m"`
			K          int      `json:"k"`
			Column     string   `json:"column"`
			MeasuredFP *float64 `json:"measured_fp"`
			ExpectedFP *float64 `json:"expected_fp"`
			MeasuredFN *float64 `json:"measured_fn"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rows) != 72 {
		t.Fatalf("%d rows, want 72", len(doc.Rows))
	}
	for _, r := range doc.Rows {
		if r.MeasuredFP == nil || r.ExpectedFP == nil || r.MeasuredFN == nil || *r.MeasuredFN != 0 {
			t.Errorf("row %+v", r)
		}
	}
}

func TestPermuteArgs(t *testing.T) {
	app := testApp()
	for _, tc := range []struct{ in, want string }{
		{"cbf op union a b -o x -u u", "cbf op -o x -u u union a b"},
		{"cbf info --json f", "cbf info --json f"},
		{"cbf info f --json", "cbf info --json f"},
		{"cbf query f -- -o", "cbf query f -- -o"},
		{"experiment table1 --trials=3 --json", "experiment table1 --trials=3 --json"},
	} {
		got := strings.Join(cliutil.PermuteArgs(app, append([]string{"reconcile"}, strings.Fields(tc.in)...))[1:], " ")
		if got != tc.want {
			t.Errorf("permuteArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A filter whose encoding exceeds the decoder's default limit (64 MiB) can be
// built, and then read back by every other cbf command.
func TestCBFLargeFilterReadsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MiB filter")
	}
	f := filepath.Join(t.TempDir(), "big.cbf")
	if _, err := run(t, "a\nb\n", "cbf", "build", "--m", "134217728", "--k", "2", "-o", f); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(f); err != nil || st.Size() <= cbfalgebra.DefaultMaxEncodedSize {
		t.Fatalf("want a file over the default limit: %v, %v", st.Size(), err)
	}
	out, err := run(t, "a\nc\n", "cbf", "query", f)
	if err != nil || !strings.Contains(out, "a") {
		t.Fatalf("query of a large filter: %q, %v", out, err)
	}
}

func TestExperimentTable2(t *testing.T) {
	out, err := run(t, "", "experiment", "table2", "--trials", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []struct {
			Op             string  `json:"op"`
			AlgebraFN      float64 `json:"algebra_fn"`
			DoubleFN       float64 `json:"double_fn"`
			ProbeReduction float64 `json:"probe_reduction"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rows) != 3*6*5 { // alphas × (m, k) × operations
		t.Fatalf("%d rows, want 90", len(doc.Rows))
	}
	doubleFN := map[string]bool{}
	for _, r := range doc.Rows {
		if r.AlgebraFN != 0 || r.ProbeReduction <= 0 || r.ProbeReduction >= 1 {
			t.Errorf("row %+v: want no algebra false negative and fewer probes", r)
		}
		doubleFN[r.Op] = doubleFN[r.Op] || r.DoubleFN > 0
	}
	// The double-CBF way misses members of \, ⊕ and the complement.
	for _, op := range []string{"subtract", "xor", "complement"} {
		if !doubleFN[op] {
			t.Errorf("%s: the double-CBF way showed no false negative", op)
		}
	}
	text, err := run(t, "", "experiment", "table2", "--trials", "1")
	if err != nil || !strings.Contains(text, "probe reduction") {
		t.Fatalf("table2 text: %v\n%s", err, text)
	}
}

func TestExperimentTable1TextAndPlot(t *testing.T) {
	png := filepath.Join(t.TempDir(), "t1.png")
	out, err := run(t, "", "experiment", "table1", "--trials", "1", "--plot", png)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"expected %", "24.700", "false negatives: 0 in every column"} {
		if !strings.Contains(out, want) {
			t.Errorf("table1 output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("plot: %v, %d bytes", err, len(b))
	}
	if _, err := run(t, "", "experiment", "table1", "--trials", "0"); err == nil || !strings.Contains(err.Error(), "--trials") {
		t.Errorf("--trials 0: %v", err)
	}
}
