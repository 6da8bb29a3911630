package labpaper

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExperimentMethods runs a small sweep: the table, the JSON document, the plot,
// and clear errors for bad flags.
func TestExperimentMethods(t *testing.T) {
	out, err := run(t, "", "experiment", "methods", "--n", "300", "--diff", "1", "--diff", "100", "--trials", "1", "--nn", "1024")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"complete", "byers", "bitfield", "iblt", "ccbf", "Fewest bytes", "d=100:"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table lacks %q:\n%s", want, out)
		}
	}
	png := filepath.Join(t.TempDir(), "m.png")
	out, err = run(t, "", "experiment", "methods", "--n", "300", "--diff", "30", "--trials", "1", "--method", "bitfield,iblt", "--json", "--plot", png)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []struct {
			Method string  `json:"method"`
			Missed float64 `json:"missed"`
		} `json:"rows"`
		Best map[string]string `json:"best_by_d"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Rows) != 2 || doc.Best["30"] == "" {
		t.Fatalf("JSON %v: %s", err, out)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("plot: %v", err)
	}
	for _, args := range [][]string{
		{"--n", "10", "--diff", "11"},
		{"--method", "nope"},
		{"--trials", "0"},
		{"--universe", "-1"},
	} {
		if _, err := run(t, "", append([]string{"experiment", "methods"}, args...)...); err == nil {
			t.Fatalf("%v accepted", args)
		}
	}
}

// TestExperimentTable3 runs one trial of a small grid through the command: JSON
// rows for both methods with complete missing nothing, and bad flags refused.
func TestExperimentTable3(t *testing.T) {
	out, err := run(t, "", "experiment", "table3", "--trials", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []struct {
			Method string  `json:"method"`
			Missed float64 `json:"missed"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Rows) != 8 {
		t.Fatalf("JSON %v: %s", err, out)
	}
	for _, r := range doc.Rows {
		if r.Method == "complete" && r.Missed != 0 {
			t.Fatalf("complete missed %v", r.Missed)
		}
	}
	for _, args := range [][]string{{"--trials", "0"}, {"--block-size", "100"}, {"--hash", "nope"}} {
		if _, err := run(t, "", append([]string{"experiment", "table3"}, args...)...); err == nil {
			t.Fatalf("%v accepted", args)
		}
	}
}
