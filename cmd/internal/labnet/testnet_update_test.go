package labnet

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTestnetUpdate runs the update scenario from the command line: the
// method defaults to complete, the figures are in the text and the JSON,
// and the flags that do not go with it are refused.
func TestTestnetUpdate(t *testing.T) {
	args := []string{"testnet", "--peers", "6", "--size", "512KiB", "--block-size", "16KiB", "--preset", "small", "--latency", "none",
		"--up", "20Mbit", "--down", "100Mbit", "--update", "0.01", "--update-places", "4"}
	out, err := runJSON(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var rep testnetReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Method != "complete" || rep.Runs[0].Update == nil {
		t.Fatalf("runs %+v", rep.Runs)
	}
	r, u := rep.Runs[0], rep.Runs[0].Update
	if r.Identical != 6 || u.Places != 4 || u.NewBlocks == 0 || u.ReusedMin != u.SharedBlocks || len(u.Reused) != 5 || u.Copies < 1 || r.TStarS >= u.FileTStarS {
		t.Errorf("update figures: %+v, run %d identical, T* %g", u, r.Identical, r.TStarS)
	}
	out, err = run(t, "", append(args, "--content-defined=false")...)
	for _, want := range []string{"every fetching peer holding version 1 and one seed serving version 2 (1% of the bytes overwritten in 4 places)",
		"testnet complete update: ", "are new (B_new ", "each fetcher reused ", "copies of B_new", "T* of B_new "} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("text lacks %q: %v\n%s", want, err, out)
		}
	}
	for _, bad := range [][]string{
		{"--update", "0.01", "--hold", "0.5"},
		{"--update", "0.01", "--method", "byers"},
		{"--update", "1.5"},
		{"--content-defined", "--block-size", "64KiB"},
		{"--content-defined", "--method", "both"},
	} {
		if out, err := run(t, "", append([]string{"testnet", "--peers", "4", "--size", "256KiB", "--preset", "small"}, bad...)...); err == nil {
			t.Errorf("%v: no error: %s", bad, out)
		}
	}
}
