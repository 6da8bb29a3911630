package labbench

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// TestFloodCommand runs the long-form flood test in a short form: a seed
// process under every attack from an attacking process, fetches before and
// during the attack, the seed's memory watched after it. Every fetch must
// complete byte-identical (the command fails otherwise) and the report must
// hold the figures the closing notes quote.
func TestFloodCommand(t *testing.T) {
	bin := e2eBinary(t)
	out, err := exec.Command(bin, "flood", "--size", "4MiB", "--block-size", "64KiB", "--identities", "14", "--streams", "4",
		"--fetches", "2", "--duration", "4s", "--after", "2s", "--json").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("flood: %v\n%s\n%s", err, out, ee.Stderr)
		}
		t.Fatal(err)
	}
	var rep floodReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if len(rep.Baseline) != 2 || len(rep.UnderAttack) == 0 || len(rep.Failed) != 0 {
		t.Fatalf("fetches: %d without attack, %d under attack, %d failed", len(rep.Baseline), len(rep.UnderAttack), len(rep.Failed))
	}
	if len(rep.Attacks) != 7 || rep.StreamsOpened == 0 || rep.RSSPeak <= 0 || rep.RSSAfter <= 0 || rep.MedianRatio <= 0 {
		t.Fatalf("report without its figures: %+v", rep)
	}
	t.Logf("median %.2fx, max %.2fx the fetch without attack; seed RSS peak %.0f MiB, %.0f MiB after", rep.MedianRatio, rep.MaxRatio, rep.RSSPeak, rep.RSSAfter)
}
