package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/peer"
)

// runCLI runs the command line as main does and returns its exit code,
// standard output and standard error.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runMain(append([]string{"reconcile"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// run runs the CLI with args and stdin, returning stdout and the error.
func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return cliutil.RunCaptured(newApp(), stdin, args...)
}

// TestUsageErrorsOneLine: a mistake on the command line is one line on
// stderr naming the command, with a hint to its help, and exit code 2.
func TestUsageErrorsOneLine(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string // the whole line
	}{
		{[]string{"fetch", "--bogus", "x"}, "reconcile fetch: unknown flag --bogus (see reconcile fetch --help)"},
		{[]string{"fetch", "--outt", "dl", "x"}, "reconcile fetch: unknown flag --outt; did you mean --out? (see reconcile fetch --help)"},
		{[]string{"frobnicate"}, `reconcile: unknown command "frobnicate" (see reconcile --help)`},
		{[]string{"experimnt"}, `reconcile: unknown command "experimnt"; did you mean "experiment"? (see reconcile --help)`},
		{[]string{"experiment", "tabel1"}, `reconcile experiment: unknown command "tabel1"; did you mean "table1"? (see reconcile experiment --help)`},
		{[]string{"help", "frob"}, `reconcile: unknown command "frob" (see reconcile --help)`},
		{[]string{"sim", "frob"}, `reconcile sim: unknown command "frob" (see reconcile sim --help)`},
		{[]string{"bench", "extra"}, `reconcile bench: unknown command "extra" (see reconcile bench --help)`},
		{[]string{"bench", "updat"}, `reconcile bench: unknown command "updat"; did you mean "update"? (see reconcile bench --help)`},
		{[]string{"bench", "update", "--cases", "rename"}, `reconcile bench update: --cases: no case "rename": want overwrite, insert, delete, append, folder or all (see reconcile bench update --help)`},
		{[]string{"bench", "update", "--size", "1MiB"}, "reconcile bench update: --size 1MiB: want at least 2MiB (see reconcile bench update --help)"},
		{[]string{"testnet", "extra"}, `reconcile testnet: unknown command "extra" (see reconcile testnet --help)`},
		{[]string{"cbf", "build", "--m", "64", "--k", "2"}, "reconcile cbf build: --output is required (see reconcile cbf build --help)"},
		{[]string{"experiment", "table1", "--trials", "many"}, `reconcile experiment table1: --trials "many": want a whole number (see reconcile experiment table1 --help)`},
		{[]string{"fetch", "x", "--stall-timeout", "soon"}, `reconcile fetch: --stall-timeout "soon": want a duration such as 10s, 1m30s or 500ms (see reconcile fetch --help)`},
		{[]string{"fetch", "x", "--out"}, "reconcile fetch: --out needs a value (see reconcile fetch --help)"},
		{[]string{"fetch", "x", "--sync-every", "-1"}, "reconcile fetch: --sync-every -1: want at least 0 (see reconcile fetch --help)"},
		{[]string{"fetch", "x", "--stall-timeout", "0s"}, "reconcile fetch: --stall-timeout 0s: want a positive duration such as 10s (see reconcile fetch --help)"},
		{[]string{"fetch", "x", "--progress", "fancy"}, `reconcile fetch: --progress "fancy": want bar, plain, none or auto (see reconcile fetch --help)`},
		{[]string{"fetch"}, "reconcile fetch: want one TICKET, got 0 arguments (see reconcile fetch --help)"},
		{[]string{"seed", f, "--rate", "0"}, "reconcile seed: --rate 0: want at least 1 B (see reconcile seed --help)"},
		{[]string{"fetch", "--rate", "4MB", "x"}, "reconcile fetch: --rate \"4MB\": sizes count in powers of 1024: write 4MiB (see reconcile fetch --help)"},
		{[]string{"seed", f, "--log-every", "-1s"}, "reconcile seed: --log-every -1s: want a positive duration such as 30s, or 0 for no log (see reconcile seed --help)"},
		{[]string{"sim", "table4", "--m", "0"}, "reconcile sim table4: --m 0: want at least 1 (see reconcile sim table4 --help)"},
		{[]string{"sim", "topology", "--ring-bits", "161"}, "reconcile sim topology: --ring-bits 161: want 1 to 160 (see reconcile sim topology --help)"},
		{[]string{"sim", "swarm", "--reps", "0"}, "reconcile sim swarm: --reps 0: want at least 1 (see reconcile sim swarm --help)"},
		{[]string{"experiment", "methods", "--nn", "0"}, "reconcile experiment methods: --nn 0: want at least 1 (see reconcile experiment methods --help)"},
		{[]string{"demo", "--fetchers", "0"}, "reconcile demo: --fetchers 0: want 1 to 16 (see reconcile demo --help)"},
		// One size parser and one message in every command.
		{[]string{"chunk", f, "--block-size", "3Q"}, `reconcile chunk: --block-size "3Q": want a size such as 4096, 64KiB, 16MiB or 1.5GiB (see reconcile chunk --help)`},
		{[]string{"seed", f, "--block-size", "3Q"}, `reconcile seed: --block-size "3Q": want a size such as 4096, 64KiB, 16MiB or 1.5GiB (see reconcile seed --help)`},
		{[]string{"demo", "--block-size", "3Q"}, `reconcile demo: --block-size "3Q": want a size such as 4096, 64KiB, 16MiB or 1.5GiB (see reconcile demo --help)`},
		{[]string{"testnet", "--block-size", "3Q"}, `reconcile testnet: --block-size "3Q": want a size such as 4096, 64KiB, 16MiB or 1.5GiB (see reconcile testnet --help)`},
		{[]string{"bench", "--block-size", "3Q"}, `reconcile bench: --block-size "3Q": want a size such as 4096, 64KiB, 16MiB or 1.5GiB (see reconcile bench --help)`},
		{[]string{"experiment", "table3", "--block-size", "3Q"}, `reconcile experiment table3: --block-size "3Q": want a size such as 4096, 64KiB, 16MiB or 1.5GiB (see reconcile experiment table3 --help)`},
		{[]string{"experiment", "methods", "--block-size", "3Q"}, `reconcile experiment methods: --block-size "3Q": want a size such as 4096, 64KiB, 16MiB or 1.5GiB (see reconcile experiment methods --help)`},
		{[]string{"sim", "table4", "--block-size", "3Q"}, `reconcile sim table4: --block-size "3Q": want a size such as 4096, 64KiB, 16MiB or 1.5GiB (see reconcile sim table4 --help)`},
		{[]string{"chunk", f, "--block-size", "4MB"}, `reconcile chunk: --block-size "4MB": sizes count in powers of 1024: write 4MiB (see reconcile chunk --help)`},
		{[]string{"chunk", f, "--block-size", "512"}, "reconcile chunk: --block-size 512: want 1KiB to 16MiB (see reconcile chunk --help)"},
		{[]string{"experiment", "table3", "--block-size", "100"}, "reconcile experiment table3: --block-size 100: want a multiple of 64 bytes (see reconcile experiment table3 --help)"},
	}
	for _, tc := range cases {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != cliutil.ExitUsage || stderr != tc.want+"\n" || stdout != "" {
			t.Errorf("reconcile %s:\nexit %d, stdout %q\nstderr %q\nwant exit 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
}

// TestRuntimeErrorWording: a failing command prints one line without the
// library's package prefixes and exits 1; --verbose (-v, before or after the
// command) prints the whole wrapped chain.
func TestRuntimeErrorWording(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	code, _, stderr := runCLI(t, "chunk", missing)
	want := "reconcile chunk: " + missing + ": no such file or directory\n"
	if code != cliutil.ExitFailure || stderr != want {
		t.Errorf("exit %d, stderr %q, want exit 1 and %q", code, stderr, want)
	}
	for _, args := range [][]string{{"-v", "chunk", missing}, {"chunk", missing, "--verbose"}} {
		code, _, stderr := runCLI(t, args...)
		if code != cliutil.ExitFailure || !strings.HasPrefix(stderr, "reconcile chunk: chunker: ") || !strings.Contains(stderr, "stat "+missing) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want the whole chain (chunker: ... stat %s ...)", args, code, stderr, missing)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, stderr := runCLI(t, "--version")
	if code != cliutil.ExitOK || stderr != "" || !strings.HasPrefix(stdout, "reconcile ") || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, "revision") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/reconcile-p2p/reconcile/cmd", Version: "v0.3.1"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "7edf698c0ffee1234567890abcdef"}, {Key: "vcs.time", Value: "2026-11-23T14:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "reconcile v0.3.1 (module github.com/reconcile-p2p/reconcile/cmd), revision 7edf698c0ffe+modified (2026-11-23T14:00:00Z), go1.26.8"
	if got := formatVersion(bi, "", "", ""); got != want {
		t.Errorf("formatVersion = %q, want %q", got, want)
	}
	// A release build's -ldflags -X values win.
	want = "reconcile v1.2.3 (module github.com/reconcile-p2p/reconcile/cmd), revision 0123456789ab (2026-12-01T10:00:00Z), go1.26.8"
	if got := formatVersion(bi, "v1.2.3", "0123456789abcdef", "2026-12-01T10:00:00Z"); got != want {
		t.Errorf("formatVersion with -X = %q, want %q", got, want)
	}
	bi.Settings, bi.Main.Version = nil, ""
	if got := formatVersion(bi, "", "", ""); !strings.Contains(got, "(devel)") || !strings.Contains(got, "revision unknown") {
		t.Errorf("formatVersion without VCS = %q", got)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// newTestProgress is a fetch's progress in mode on a buffer, on a clock the test moves.
func newTestProgress(mode cliutil.ProgressMode) (*cliutil.Progress, *bytes.Buffer, *fakeClock) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := cliutil.NewProgressWriter(&buf, mode, "fetch", true)
	p.SetClock(clk.now)
	return p, &buf, clk
}

// TestCheckProgressBar: a resumed fetch first draws a bar of its own while it
// re-hashes the blocks on disk (blocks and bytes checked), then the download
// bar takes over, its rate counted from the end of the check (the 4 s of
// checking are not download time).
func TestCheckProgressBar(t *testing.T) {
	p, buf, clk := newTestProgress(cliutil.ProgressBar)
	m, err := chunker.ChunkReader(context.Background(), "f", 0o644, bytes.NewReader(make([]byte, 10<<20)), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	check := checkProgress(p, m, "connecting to 1 peer")
	p.Status("connecting to 1 peer")
	check(0, 10)
	clk.t = clk.t.Add(2 * time.Second)
	check(4, 10)
	clk.t = clk.t.Add(50 * time.Millisecond)
	check(5, 10) // too soon: not drawn
	clk.t = clk.t.Add(1950 * time.Millisecond)
	check(10, 10)
	clk.t = clk.t.Add(2 * time.Second)
	p.Update(cliutil.ProgressState{Done: 8 << 20, Total: 10 << 20, Session: 2 << 20, Extra: "8/10 blocks, 1 peer"})
	want := "\r\033[Kfetch: connecting to 1 peer" +
		"\r\033[Kchecking:  40% [=========>              ] 4 MiB / 10 MiB, 2 MiB/s, 3s left, 4/10 blocks on disk" +
		"\r\033[Kchecking: 100% [========================] 10 MiB / 10 MiB, 2.5 MiB/s, 10/10 blocks on disk" +
		"\r\033[K" +
		"\r\033[Kfetch: connecting to 1 peer" +
		"\r\033[Kfetch:  80% [===================>    ] 8 MiB / 10 MiB, 1 MiB/s, 2s left, 8/10 blocks, 1 peer"
	if got := buf.String(); got != want {
		t.Errorf("bar output\n got %q\nwant %q", got, want)
	}
}

// TestCheckProgressPlain: off a terminal the check prints a line when it
// starts, every 5 s and when it ends.
func TestCheckProgressPlain(t *testing.T) {
	p, buf, clk := newTestProgress(cliutil.ProgressPlain)
	check := checkProgress(p, nil, "connecting to 1 peer")
	check(0, 100)
	for i := 1; i <= 100; i++ { // a block every 100 ms for 10 s
		clk.t = clk.t.Add(100 * time.Millisecond)
		check(i, 100)
	}
	want := "fetch: checking 100 blocks on disk\n" +
		"checking:  50% 50/100, 5s left, 50/100 blocks on disk\n" +
		"checking: 100% 100/100, 100/100 blocks on disk\n"
	if got := buf.String(); got != want {
		t.Errorf("plain output\n got %q\nwant %q", got, want)
	}
}

// TestProgressLineAboveBar: a fetch event (a peer sent a corrupt block) is
// printed on a line of its own above the bar, which is drawn again below it.
func TestProgressLineAboveBar(t *testing.T) {
	p, buf, clk := newTestProgress(cliutil.ProgressBar)
	clk.t = clk.t.Add(time.Second)
	p.Update(cliutil.ProgressState{Done: 1 << 20, Total: 2 << 20, Session: 1 << 20})
	id, err := lpeer.Decode("12D3KooWLRPJAA5o6F8rXbVSEiLHaSfnJ2Gv6QkW4BGWbXrUyxjf")
	if err != nil {
		t.Fatal(err)
	}
	p.Println(fetchEventLine(peer.FetchEvent{Kind: peer.FetchCorruptBlock, Peer: id, Block: 7, Corrupt: 1}))
	bar := "fetch:  50% [============>           ] 1 MiB / 2 MiB, 1 MiB/s, 1s left"
	want := "\r\033[K" + bar +
		"\r\033[Kfetch: peer 12D3Ko…rUyxjf sent a corrupt block (block 7); asking other peers for it\n" + bar
	if got := buf.String(); got != want {
		t.Errorf("output\n got %q\nwant %q", got, want)
	}
}

// TestE2EInterruptExitCode: Ctrl-C during an experiment ends it with exit
// code 130 and one line saying so.
func TestE2EInterruptExitCode(t *testing.T) {
	bin := e2eBinary(t)
	cmd := exec.Command(bin, "experiment", "table1", "--trials", "100000", "--progress", "none")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("no exit 20 s after SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || stderr.String() != "reconcile experiment table1: interrupted\n" {
		t.Errorf("exit %d, stderr %q; want 130 and one line saying interrupted", code, stderr.String())
	}
}

// TestFetchEventLines words each fetch event for the line above the bar.
func TestFetchEventLines(t *testing.T) {
	id, err := lpeer.Decode("12D3KooWLRPJAA5o6F8rXbVSEiLHaSfnJ2Gv6QkW4BGWbXrUyxjf")
	if err != nil {
		t.Fatal(err)
	}
	until := time.Date(2026, 11, 26, 19, 4, 5, 0, time.Local)
	for _, tc := range []struct {
		ev   peer.FetchEvent
		want string
	}{
		{peer.FetchEvent{Kind: peer.FetchCorruptBlock, Peer: id, Block: 7, Corrupt: 1}, "fetch: peer 12D3Ko…rUyxjf sent a corrupt block (block 7); asking other peers for it"},
		{peer.FetchEvent{Kind: peer.FetchPeerBanned, Peer: id, Block: 9, Corrupt: 3}, "fetch: peer 12D3Ko…rUyxjf sent 3 corrupt blocks: dropped and banned"},
		{peer.FetchEvent{Kind: peer.FetchPeerStillBanned, Peer: id, Block: -1, Until: until}, "fetch: peer 12D3Ko…rUyxjf, banned by an earlier run of this fetch, stays banned until 19:04:05"},
		{peer.FetchEvent{Kind: peer.FetchPeerUnreachable, Peer: id, Block: -1,
			Err: errors.New("failed to dial: failed to dial 12D3KooWLRPJAA5o6F8rXbVSEiLHaSfnJ2Gv6QkW4BGWbXrUyxjf: all dials failed\n  * [/ip4/127.0.0.1/tcp/43681] dial tcp4 127.0.0.1:43681: connect: connection refused\n  * [/ip4/10.0.0.2/udp/4001/quic-v1] timeout: no recent network activity")},
			"fetch: cannot reach peer 12D3Ko…rUyxjf yet ([/ip4/127.0.0.1/tcp/43681] dial tcp4 127.0.0.1:43681: connect: connection refused; [/ip4/10.0.0.2/udp/4001/quic-v1] timeout: no recent network activity); trying again for up to 15 s"},
		{peer.FetchEvent{Kind: peer.FetchPeerUnreachable, Peer: id, Block: -1, Err: errors.New("dial backoff")},
			"fetch: cannot reach peer 12D3Ko…rUyxjf yet (dial backoff); trying again for up to 15 s"},
		{peer.FetchEvent{Kind: 99, Peer: id}, "fetch: peer 12D3Ko…rUyxjf: unknown"},
	} {
		if got := fetchEventLine(tc.ev); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.ev.Kind, got, tc.want)
		}
	}
}

// TestBadTicketExitsTwo: a ticket that does not parse is a command-line
// mistake (exit 2, one line with the hint), like every other.
func TestBadTicketExitsTwo(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "fetch", "not-a-ticket", "--out", dir, "--progress", "none")
	if code != cliutil.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "bad ticket") || !strings.Contains(stderr, "copy the whole token") {
		t.Errorf("exit %d, stderr %q; want exit 2 and one line naming the bad ticket", code, stderr)
	}
}
