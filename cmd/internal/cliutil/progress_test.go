package cliutil

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestProgress(mode ProgressMode) (*Progress, *bytes.Buffer, *fakeClock) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := NewProgressWriter(&buf, mode, "fetch", true)
	p.SetClock(clk.now)
	return p, &buf, clk
}

// TestProgressBar draws a fetch's progress on a fake terminal: bytes held of
// the total in IEC units, and a rate and time left from this run's bytes only
// (8 MiB resumed from disk do not count as transferred).
func TestProgressBar(t *testing.T) {
	p, buf, clk := newTestProgress(ProgressBar)
	p.Status("connecting to 1 peer")
	clk.t = clk.t.Add(2 * time.Second)
	// 8 MiB resumed + 2 MiB received in 2 s: 1 MiB/s, 6 MiB left: 6 s.
	p.Update(ProgressState{Done: 10 << 20, Total: 16 << 20, Session: 2 << 20, Extra: "40/64 blocks, 2 peers"})
	clk.t = clk.t.Add(50 * time.Millisecond)
	p.Update(ProgressState{Done: 11 << 20, Total: 16 << 20, Session: 3 << 20}) // too soon: not drawn
	clk.t = clk.t.Add(4 * time.Second)
	p.Update(ProgressState{Done: 16 << 20, Total: 16 << 20, Session: 8 << 20, Extra: "64/64 blocks, 2 peers"})
	p.Update(ProgressState{Done: 16 << 20, Total: 16 << 20, Session: 8 << 20, Extra: "64/64 blocks, 2 peers"}) // the same end: not drawn again
	p.Finish(false)
	want := "\r\033[Kfetch: connecting to 1 peer" +
		"\r\033[Kfetch:  62% [===============>        ] 10 MiB / 16 MiB, 1 MiB/s, 6s left, 40/64 blocks, 2 peers" +
		"\r\033[Kfetch: 100% [========================] 16 MiB / 16 MiB, 1.3 MiB/s, 64/64 blocks, 2 peers" +
		"\r\033[K"
	if got := buf.String(); got != want {
		t.Errorf("bar output\n got %q\nwant %q", got, want)
	}
}

// TestProgressPlain: off a terminal, a plain line (no escapes) every 5 s at
// most; with --progress none nothing at all.
func TestProgressPlain(t *testing.T) {
	p, buf, clk := newTestProgress(ProgressPlain)
	p.Status("connecting")
	for i := 1; i <= 12; i++ { // a block every second for 12 s
		clk.t = clk.t.Add(time.Second)
		p.Update(ProgressState{Done: int64(i) << 20, Total: 12 << 20, Session: int64(i) << 20})
	}
	p.Finish(true)
	want := "fetch:  41% 5 MiB / 12 MiB, 1 MiB/s, 7s left\n" +
		"fetch:  83% 10 MiB / 12 MiB, 1 MiB/s, 2s left\n"
	if got := buf.String(); got != want {
		t.Errorf("plain output\n got %q\nwant %q", got, want)
	}
	p, buf, clk = newTestProgress(ProgressNone)
	p.Status("connecting")
	clk.t = clk.t.Add(time.Minute)
	p.Update(ProgressState{Done: 1, Total: 2})
	p.Finish(true)
	if buf.Len() != 0 {
		t.Errorf("--progress none wrote %q", buf.String())
	}
}

// TestProgressFinishKeepsBarOnly: a failed fetch keeps its bar (how far it
// got) but clears a status such as "connecting", so the error stands alone.
func TestProgressFinishKeepsBarOnly(t *testing.T) {
	p, buf, clk := newTestProgress(ProgressBar)
	p.Status("connecting to 1 peer")
	p.Finish(true)
	if got, want := buf.String(), "\r\033[Kfetch: connecting to 1 peer\r\033[K"; got != want {
		t.Errorf("status then finish(true)\n got %q\nwant %q", got, want)
	}
	buf.Reset()
	clk.t = clk.t.Add(time.Second)
	p.Update(ProgressState{Done: 1 << 20, Total: 2 << 20, Session: 1 << 20})
	p.Finish(true)
	if got := buf.String(); !strings.HasSuffix(got, "1s left\n") {
		t.Errorf("bar then finish(true): %q, want the bar kept on its line", got)
	}
}

// TestProgressRounding: the percentage is rounded down (100% only when all is
// done), the time left up (never "0s left" before the end), and the first
// second shows no rate (that of a block or two is noise).
func TestProgressRounding(t *testing.T) {
	p, _, clk := newTestProgress(ProgressBar)
	clk.t = clk.t.Add(500 * time.Millisecond)
	if got, want := p.render(ProgressState{Done: 1 << 20, Total: 400 << 20, Session: 1 << 20}, clk.t), "fetch:   0% [>                       ] 1 MiB / 400 MiB"; got != want {
		t.Errorf("first second:\n got %q\nwant %q", got, want)
	}
	clk.t = clk.t.Add(1500 * time.Millisecond)
	if got, want := p.render(ProgressState{Done: 399 << 20, Total: 400 << 20, Session: 80 << 20}, clk.t), "fetch:  99% [=======================>] 399 MiB / 400 MiB, 40 MiB/s, 1s left"; got != want {
		t.Errorf("near the end:\n got %q\nwant %q", got, want)
	}
}

// TestProgressRecentRate: once the work has run longer than rateWindow, the
// rate and the time left come from its last rateWindow, so a swarm that
// speeds up (or a fetch that finds more peers) shows its new pace.
func TestProgressRecentRate(t *testing.T) {
	p, buf, clk := newTestProgress(ProgressPlain)
	var done int64
	for i := 1; i <= 60; i++ {
		clk.t = clk.t.Add(time.Second)
		if i <= 30 {
			done += 1 << 20 // 1 MiB/s for 30 s
		} else {
			done += 4 << 20 // then 4 MiB/s
		}
		p.Update(ProgressState{Done: done, Total: 300 << 20, Session: -1})
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// At 15 s: from the start, 1 MiB/s, 285 MiB left. At 60 s (150 MiB
	// done): the last 20 s, 4 MiB/s, 150 MiB left in 38 s (rounded up).
	if got, want := lines[2], "fetch:   5% 15 MiB / 300 MiB, 1 MiB/s, 4m45s left"; got != want {
		t.Errorf("at 15 s: %q, want %q", got, want)
	}
	if got, want := lines[len(lines)-1], "fetch:  50% 150 MiB / 300 MiB, 4 MiB/s, 38s left"; got != want {
		t.Errorf("at 60 s: %q, want %q", got, want)
	}
	if len(p.marks) > int(rateWindow/time.Second)+2 {
		t.Errorf("%d marks kept for a window of %v", len(p.marks), rateWindow)
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
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}

// TestProgressModeFlag: auto is plain off a terminal; the flag picks a mode.
func TestProgressModeFlag(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{{"", "plain"}, {"auto", "plain"}, {"bar", "bar"}, {"none", "none"}, {"plain", "plain"}} {
		var mode ProgressMode = -1
		app := NewApp("prog", []*cli.Command{{
			Name:      "work",
			ArgsUsage: "FILE",
			Flags:     []cli.Flag{ProgressFlag()},
			Action: func(c *cli.Context) error {
				var err error
				mode, err = ProgressModeOf(c)
				return err
			},
		}})
		args := []string{"prog", "work", "file"}
		if tc.flag != "" {
			args = append(args, "--progress", tc.flag)
		}
		var out bytes.Buffer
		if code := Run(app, args, &out, &out); code != ExitOK {
			t.Fatalf("exit %d: %s", code, out.String())
		}
		if got := map[ProgressMode]string{ProgressNone: "none", ProgressBar: "bar", ProgressPlain: "plain"}[mode]; got != tc.want {
			t.Errorf("--progress %q: mode %s, want %s", tc.flag, got, tc.want)
		}
	}
}
