package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
