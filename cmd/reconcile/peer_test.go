package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestFetchHelpMethods: fetch --help lists every method, one line each.
func TestFetchHelpMethods(t *testing.T) {
	out, err := run(t, "", "fetch", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range reconcile.AllMethods {
		n := 0
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), m.String()+" ") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("fetch --help has %d lines for %s:\n%s", n, m, out)
		}
	}
	if _, err := run(t, "", "fetch", "x", "--method", "carrier-pigeon"); err == nil || !strings.Contains(err.Error(), "--method") {
		t.Errorf("unknown method: %v", err)
	}
}

// TestE2EFetchMethods: reconcile fetch --method M runs M against a real seed
// process and ends with an identical file.
func TestE2EFetchMethods(t *testing.T) {
	bin := e2eBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "f.bin")
	data := make([]byte, 700<<10)
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tk := startSeed(t, bin, dir, file, "--block-size", "16KiB")
	for _, m := range []string{"ccbf", "bitfield", "iblt"} {
		out := filepath.Join(dir, m)
		b, err := exec.Command(bin, "fetch", "--ticket-file", tk, "--out", out, "--method", m, "--listen", "/ip4/127.0.0.1/tcp/0", "--json").Output()
		if err != nil {
			t.Fatalf("fetch --method %s: %v", m, err)
		}
		var sum peer.Summary
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		if sum.Method != m || sum.Fetched != sum.Blocks || sum.FilterBytes == 0 {
			t.Errorf("--method %s: summary %+v", m, sum)
		}
		got, err := os.ReadFile(filepath.Join(out, "f.bin"))
		if err != nil || string(got) != string(data) {
			t.Errorf("--method %s: output differs (%v)", m, err)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "peer", "0 peers"},
		{1, "peer", "1 peer"},
		{2, "peer", "2 peers"},
		{1, "round trip", "1 round trip"},
		{7, "round trip", "7 round trips"},
	} {
		if got := count(tc.n, tc.noun); got != tc.want {
			t.Errorf("count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
