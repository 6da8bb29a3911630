package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestFetchHelpMethods: fetch --help names every method (README.md says
// what each sends).
func TestFetchHelpMethods(t *testing.T) {
	out, err := run(t, "", "fetch", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range reconcile.AllMethods {
		if !strings.Contains(out, " "+m.String()) {
			t.Errorf("fetch --help does not name %s:\n%s", m, out)
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
		b, err := exec.Command(bin, "fetch", "--ticket-file", tk, "--out", out, "--method", m, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--json").Output()
		if err != nil {
			t.Fatalf("fetch --method %s: %v", m, err)
		}
		var sum peer.Summary
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		if sum.Method != m || sum.Fetched != sum.Blocks || sum.FilterBytes == 0 || sum.WireBytesReceived < sum.Bytes || sum.WireBytesSent == 0 {
			t.Errorf("--method %s: summary %+v", m, sum)
		}
		got, err := os.ReadFile(out) // --out names the file of single-file content
		if err != nil || string(got) != string(data) {
			t.Errorf("--method %s: output differs (%v)", m, err)
		}
	}
}

// TestFetchCompleteOutput: a fetch into a folder that already holds every
// block of the ticket's content says so and contacts no peer (the ticket's
// only peer is dead, so any network work would end in a timeout).
func TestFetchCompleteOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.bin")
	writeRandom(t, file, 100<<10+5)
	out := filepath.Join(dir, "out")
	prefillStore(t, file, out, 16<<10, func(i, n int) bool { return true })
	m, err := chunker.ChunkPath(context.Background(), file, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	ai, err := lpeer.AddrInfoFromString("/ip4/127.0.0.1/tcp/1/p2p/" + keyID(t, filepath.Join(dir, "k")).String())
	if err != nil {
		t.Fatal(err)
	}
	tk := peer.Ticket{Root: m.ID(), Peers: []lpeer.AddrInfo{*ai}}.String()
	start := time.Now()
	code, stdout, stderr := runCLI(t, "fetch", tk, "--out", out, "--progress", "none")
	want := fmt.Sprintf("%s already holds all 7 blocks (100 KiB) of %s: nothing to fetch\n", out, m.ID())
	if code != cliutil.ExitOK || stdout != want || stderr != "" || time.Since(start) > 5*time.Second {
		t.Errorf("exit %d after %v, stdout %q, stderr %q; want %q", code, time.Since(start), stdout, stderr, want)
	}
	// --json says no byte went on the network.
	code, stdout, _ = runCLI(t, "fetch", tk, "--out", out, "--progress", "none", "--json")
	var fields map[string]any
	if err := json.Unmarshal([]byte(stdout), &fields); code != cliutil.ExitOK || err != nil || fields["wire_bytes_received"] != 0.0 || fields["wire_bytes_sent"] != 0.0 {
		t.Errorf("--json: exit %d, %v, %s; want wire_bytes_received and wire_bytes_sent 0", code, err, stdout)
	}
	// One block missing: the fetch goes to the network (and fails there).
	prefillStore(t, file, filepath.Join(dir, "part"), 16<<10, func(i, n int) bool { return i > 0 })
	if sum, man := completeOutput(filepath.Join(dir, "part"), peer.Ticket{Root: m.ID()}, reconcile.Complete); sum != nil || man == nil || man.ID() != m.ID() {
		t.Errorf("a store missing a block: %+v, manifest %v", sum, man)
	}
	if sum, _ := completeOutput(out, peer.Ticket{}, reconcile.Complete); sum != nil {
		t.Errorf("another content's ticket: %+v", sum)
	}
}

// TestServedLog: a seed logs the bytes served when they grow and the peers
// it serves for the first time, nothing when nothing changed, and a total.
func TestServedLog(t *testing.T) {
	var buf bytes.Buffer
	l := &servedLog{w: &buf}
	a, b := "12D3KooWAAAAAAAAAAAAAAAAAAAAAAAA1", "12D3KooWBBBBBBBBBBBBBBBBBBBBBBBB2"
	l.log(map[string]int64{}, false)
	l.log(map[string]int64{a: 3 << 20}, false)
	l.log(map[string]int64{a: 3 << 20}, false)
	l.log(map[string]int64{a: 4 << 20, b: 1 << 19}, false)
	l.log(map[string]int64{a: 4 << 20, b: 1 << 19}, true)
	want := "served 3 MiB to 1 peer so far (+3 MiB); new: 12D3Ko…AAAAA1\n" +
		"served 4.5 MiB to 2 peers so far (+1.5 MiB); new: 12D3Ko…BBBBB2\n" +
		"served 4.5 MiB to 2 peers in all\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	buf.Reset()
	l.announce(map[string]int64{a: 1 << 20})
	l.announce(map[string]int64{a: 2 << 20, b: 1 << 10})
	l.announce(map[string]int64{a: 3 << 20, b: 2 << 10})
	want = "serving peer 12D3Ko…AAAAA1 (1 MiB so far)\nserving peer 12D3Ko…BBBBB2 (1 KiB so far)\n"
	if buf.String() != want {
		t.Errorf("announce: got\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestPrintSummaryCorrupt: the summary's line of a peer that sent corrupt
// blocks says how many.
func TestPrintSummaryCorrupt(t *testing.T) {
	var buf bytes.Buffer
	printSummary(&buf, &peer.Summary{Root: "r", Out: "o", Blocks: 2, Peers: []peer.PeerShare{
		{Peer: "12D3KooWEJXpbf4j7DvuVpojgoWSsZSi9VXErtXYYSnJX6gmEixr", Blocks: 2, Bytes: 2048, Rounds: 1, RoundTrips: 1, Rejected: 1, Path: "direct"}}})
	want := "  peer 12D3Ko…gmEixr  100.0%  2 blocks, 2 KiB, 1 round (1 round trip), 1 corrupt  direct\n"
	if got := buf.String(); !strings.HasSuffix(got, want) {
		t.Errorf("summary\n%s\nwant its last line %q", got, want)
	}
}

// TestPrintSummaryNetwork: the summary gives the bytes of the fetch's
// streams, and the blocks reused from local files when there are any.
func TestPrintSummaryNetwork(t *testing.T) {
	tests := []struct {
		name string
		sum  peer.Summary
		want []string // lines of the summary
		not  string   // a line it must not have
	}{
		{name: "fetched", sum: peer.Summary{WireBytesReceived: 12897484, WireBytesSent: 41062},
			want: []string{"  network     12.3 MiB received, 40.1 KiB sent (streams of this fetch, framing included)\n"}, not: "  reused"},
		{name: "reused", sum: peer.Summary{WireBytesReceived: 900, WireBytesSent: 0, ReusedBlocks: 795, ReusedBytes: 208456499},
			want: []string{"  network     900 B received, 0 B sent (streams of this fetch, framing included)\n", "  reused      795 blocks (198.8 MiB) from local files\n"}},
		{name: "one reused", sum: peer.Summary{ReusedBlocks: 1, ReusedBytes: 1 << 10},
			want: []string{"  reused      1 block (1 KiB) from local files\n"}},
		{name: "no block whole", sum: peer.Summary{Seconds: 0.02, ReusedBlocks: 25, DeltaBlocks: 1, DeltaBytes: 102810},
			want: []string{"  time        0.02 s, no block received whole\n", "  deltas      1 block (100.4 KiB) rebuilt from the local bytes they replace\n"}, not: "B/s"},
		{name: "rate", sum: peer.Summary{Seconds: 2, Received: 4 << 20},
			want: []string{"  time        2.00 s, 2 MiB/s (4 MiB received in this run)\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.sum.Root, tt.sum.Out = "r", "o"
			printSummary(&buf, &tt.sum)
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("summary\n%s\nwant the line %q", buf.String(), w)
				}
			}
			if tt.not != "" && strings.Contains(buf.String(), tt.not) {
				t.Errorf("summary\n%s\nhas a line %q", buf.String(), tt.not)
			}
		})
	}
}

// TestFirstBlockLogKeepsProgress: the time to the first block is recorded
// once (after the resumed blocks), logged once when a log is given (-v) and
// not at all otherwise, and every progress report still reaches the plain
// progress lines (the log used to replace the progress callback: no line at
// all).
func TestFirstBlockLogKeepsProgress(t *testing.T) {
	for _, verbose := range []bool{true, false} {
		var buf bytes.Buffer
		var log io.Writer
		if verbose {
			log = &buf
		}
		var seen []int
		f := newFirstBlock(time.Now(), log)
		fn := f.wrap(func(x peer.Progress) { seen = append(seen, x.Blocks) })
		fn(peer.Progress{Blocks: 5}) // 5 resumed
		if f.seconds() != 0 {
			t.Errorf("first block at %v s before any arrived", f.seconds())
		}
		for _, b := range []int{6, 7} { // then two received
			fn(peer.Progress{Blocks: b})
		}
		lines := 0
		if verbose {
			lines = 1
		}
		if len(seen) != 3 || strings.Count(buf.String(), "reconcile: first block after ") != lines || f.seconds() <= 0 {
			t.Errorf("verbose %v: progress calls %v, log %q, %v s; want 3 calls, %d lines and a time", verbose, seen, buf.String(), f.seconds(), lines)
		}
	}
}

// TestPathWords: how a peer's path reads in the summary.
func TestPathWords(t *testing.T) {
	for _, c := range []struct {
		ps   peer.PeerShare
		want string
	}{
		{peer.PeerShare{Path: "direct", Transport: "tcp"}, "direct over tcp"},
		{peer.PeerShare{Path: "hole-punched", Transport: "quic"}, "hole-punched over quic"},
		{peer.PeerShare{Path: "relayed", Transport: "tcp", Relay: "12D3KooWM5VxzGiP6FhEohELVZGFX8snPRY2ZVYyTipqdcfbjyDn"}, "relayed by 12D3Ko…fbjyDn over tcp"},
		{peer.PeerShare{Path: "direct"}, "direct"},
	} {
		if got := pathWords(c.ps); got != c.want {
			t.Errorf("pathWords(%+v) = %q, want %q", c.ps, got, c.want)
		}
	}
}
