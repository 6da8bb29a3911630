package cliutil

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// ProgressMode says how a command shows its progress on standard error.
type ProgressMode int

const (
	// ProgressNone shows nothing.
	ProgressNone ProgressMode = iota
	// ProgressBar redraws one line in place (for a terminal).
	ProgressBar
	// ProgressPlain prints a line every plainEvery (for logs and pipes).
	ProgressPlain
)

const (
	barEvery   = 100 * time.Millisecond
	plainEvery = 5 * time.Second
	barWidth   = 24
)

// ProgressFlag is --progress, for the commands that report progress.
func ProgressFlag() cli.Flag {
	return &cli.StringFlag{Name: "progress", Value: "auto", Usage: "`MODE`: bar, plain, none or auto (bar on a terminal)"}
}

// ProgressModeOf reads --progress; auto (and commands without the flag) mean
// a bar when standard error is a terminal and plain lines otherwise.
func ProgressModeOf(c *cli.Context) (ProgressMode, error) {
	s := "auto"
	if c.Command != nil && FindFlag(c.Command.Flags, "progress") != nil {
		s = c.String("progress")
	}
	switch strings.ToLower(s) {
	case "auto", "":
		if isTerminalWriter(c.App.ErrWriter) {
			return ProgressBar, nil
		}
		return ProgressPlain, nil
	case "bar":
		return ProgressBar, nil
	case "plain":
		return ProgressPlain, nil
	case "none":
		return ProgressNone, nil
	}
	return ProgressNone, Usagef("--progress %q: want bar, plain, none or auto", s)
}

// isTerminalWriter reports whether w is an interactive terminal.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress draws the progress of one piece of work: done of total items or
// bytes, the percentage, the rate and the time left, and a free text.
type Progress struct {
	mu   sync.Mutex // a log line may come from any goroutine
	w    io.Writer
	line string // the bar drawn last, redrawn under a line printed above it
	// isStatus: the line drawn last is a status, not figures (not kept by finish)
	isStatus bool
	mode     ProgressMode
	label    string
	bytes    bool // done and total are bytes (shown in IEC units), else counts
	now      func() time.Time
	start    time.Time
	last     time.Time
	drawn    bool
	// marks are what was done (of the session) about every second, the
	// rate's base once the work has run longer than rateWindow.
	marks []progressMark
}

// progressMark is the session's amount done at a time.
type progressMark struct {
	t time.Time
	n int64
}

// rateWindow is how far back the rate and the time left look: a swarm's
// rate grows as its first blocks spread (a 200-peer testnet's time left,
// from its start, read 22 h, then 31 min at 1 %, for a run of 4 minutes),
// and a fetch's changes as peers come and go.
const rateWindow = 20 * time.Second

// mark notes n done at now, at most once a second, keeping the marks
// rateWindow needs.
func (p *Progress) mark(now time.Time, n int64) {
	if k := len(p.marks); k > 0 && now.Sub(p.marks[k-1].t) < time.Second {
		return
	}
	// The oldest mark kept is the last one at least rateWindow old.
	drop := 0
	for drop+1 < len(p.marks) && now.Sub(p.marks[drop+1].t) >= rateWindow {
		drop++
	}
	p.marks = append(p.marks[drop:], progressMark{now, n})
}

// rateBase is where the rate at now is counted from: the start while the
// work is younger than rateWindow, else the newest mark at least that old.
func (p *Progress) rateBase(now time.Time) progressMark {
	base := progressMark{t: p.start}
	if now.Sub(p.start) < rateWindow {
		return base
	}
	for _, m := range p.marks {
		if now.Sub(m.t) < rateWindow {
			break
		}
		base = m
	}
	return base
}

// ProgressState is one snapshot of the work.
type ProgressState struct {
	Done, Total int64
	// session is the part of done that this run did (bytes transferred, not
	// resumed), which the rate and the time left come from; -1 means all of done.
	Session int64
	// extra is shown after the figures: "40/64 blocks, 3 peers".
	Extra string
}

// sessionDone is what this run did of done (session, or all of done).
func (s ProgressState) sessionDone() int64 {
	if s.Session < 0 {
		return s.Done
	}
	return s.Session
}

// NewProgressWriter returns a progress drawn on w in the given mode.
func NewProgressWriter(w io.Writer, mode ProgressMode, label string, bytes bool) *Progress {
	now := time.Now()
	return &Progress{w: w, mode: mode, label: label, bytes: bytes, now: time.Now, start: now, last: now}
}

// NewProgress returns the progress of command c (see ProgressModeOf), on c's
// standard error.
func NewProgress(c *cli.Context, label string, bytes bool) (*Progress, error) {
	mode, err := ProgressModeOf(c)
	if err != nil {
		return nil, err
	}
	return NewProgressWriter(c.App.ErrWriter, mode, label, bytes), nil
}

// Sub returns a progress of its own drawn on p's writer in p's mode and
// clock, for a phase of p's work ("checking" before "fetch").
func (p *Progress) Sub(label string, bytes bool) *Progress {
	now := p.now()
	return &Progress{w: p.w, mode: p.mode, label: label, bytes: bytes, now: p.now, start: now, last: now}
}

// Restart counts the rate and the time left from now on (after a phase whose
// time is not the work's, such as checking the blocks on disk).
func (p *Progress) Restart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start = p.now()
	p.marks = p.marks[:0]
}

// Status shows a text while there is nothing to count yet ("connecting"), on a bar only.
func (p *Progress) Status(text string) {
	if p.mode != ProgressBar {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line = fmt.Sprintf("%s: %s", p.label, text)
	fmt.Fprintf(p.w, "\r\033[K%s", p.line)
	p.drawn, p.isStatus = true, true
}

// Println prints a line of its own: above the bar, which is drawn again
// below it, or as is in the other modes (including none: it is not progress).
func (p *Progress) Println(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != ProgressBar || !p.drawn {
		fmt.Fprintln(p.w, line)
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s\n%s", line, p.line)
}

// Write writes b (whole lines, such as a logger's) above the bar, as println.
func (p *Progress) Write(b []byte) (int, error) {
	p.Println(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// Update shows s if enough time has passed since the last line (a bar also
// shows the end of the work at once).
func (p *Progress) Update(s ProgressState) {
	if p.mode == ProgressNone {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.mark(now, s.sessionDone())
	end := s.Total > 0 && s.Done >= s.Total
	switch p.mode {
	case ProgressBar:
		if !end && now.Sub(p.last) < barEvery {
			return
		}
		line := p.render(s, now)
		if end && p.drawn && line == p.line {
			return // the end again (the last writers of a fetch report it too)
		}
		p.line = line
		fmt.Fprintf(p.w, "\r\033[K%s", p.line)
		p.drawn, p.isStatus = true, false
	case ProgressPlain:
		if now.Sub(p.last) < plainEvery {
			return
		}
		fmt.Fprintln(p.w, p.render(s, now))
	}
	p.last = now
}

// Counts is update for work counted in items (trials, blocks).
func (p *Progress) Counts(done, total int) {
	p.Update(ProgressState{Done: int64(done), Total: int64(total), Session: -1})
}

// Bytes is update for work counted in bytes (files read to cut them).
func (p *Progress) Bytes(done, total int64) {
	p.Update(ProgressState{Done: done, Total: total, Session: -1})
}

// Finish ends the progress: a bar is cleared, or kept on its own line when
// keep is set (an interrupted fetch shows how far it got); a status
// ("connecting") is always cleared.
func (p *Progress) Finish(keep bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != ProgressBar || !p.drawn {
		return
	}
	if keep && !p.isStatus {
		fmt.Fprintln(p.w)
	} else {
		fmt.Fprint(p.w, "\r\033[K")
	}
	p.drawn = false
}

// render writes one progress line: "label  42% [=====>    ] 6.7 MiB / 16 MiB,
// 2.1 MiB/s, 5s left, extra" (without the bar in plain mode).
func (p *Progress) render(s ProgressState, now time.Time) string {
	var parts []string
	pct := 0.0
	if s.Total > 0 {
		pct = 100 * float64(s.Done) / float64(s.Total)
	}
	// Rounded down: 100% only once all is done.
	head := fmt.Sprintf("%s: %3d%%", p.label, int(pct))
	if p.mode == ProgressBar {
		head += " " + bar(pct, barWidth)
	}
	if p.bytes {
		parts = append(parts, fmt.Sprintf("%s / %s", HumanBytes(s.Done), HumanBytes(s.Total)))
	} else {
		parts = append(parts, fmt.Sprintf("%d/%d", s.Done, s.Total))
	}
	session := s.sessionDone()
	base := p.rateBase(now)
	elapsed := now.Sub(base.t).Seconds()
	// The rate of the first second (often of a block or two) is noise.
	if elapsed >= 1 && session > base.n {
		rate := float64(session-base.n) / elapsed
		if p.bytes {
			parts = append(parts, HumanBytes(int64(rate))+"/s")
		}
		if left := s.Total - s.Done; left > 0 {
			parts = append(parts, roundETA(time.Duration(float64(left)/rate*float64(time.Second))).String()+" left")
		}
	}
	if s.Extra != "" {
		parts = append(parts, s.Extra)
	}
	return head + " " + strings.Join(parts, ", ")
}

// bar draws pct (0–100) as "[=====>     ]" of width cells.
func bar(pct float64, width int) string {
	full := int(pct / 100 * float64(width))
	full = max(0, min(width, full))
	b := strings.Repeat("=", full)
	if full < width {
		b += ">" + strings.Repeat(" ", width-full-1)
	}
	return "[" + b + "]"
}

// roundETA rounds a time left up to what a reader needs: seconds under ten
// minutes ("1s" for the last part of a second, not "0s"), minutes above.
func roundETA(d time.Duration) time.Duration {
	if d > 10*time.Minute {
		return d.Round(time.Minute)
	}
	return (d + time.Second - 1).Truncate(time.Second)
}

// Count writes n and the noun, in the plural unless n is 1: "1 peer", "3 peers".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// RunWithProgress runs fn with a context cancelled by Ctrl-C or SIGTERM and a
// progress callback that shows "label done/total" (see NewProgress): the frame
// of every long experiment command.
func RunWithProgress[R any](c *cli.Context, label string, fn func(ctx context.Context, progress func(done, total int)) (R, error)) (R, error) {
	pr, err := NewProgress(c, label, false)
	if err != nil {
		var zero R
		return zero, err
	}
	ctx, stop := SignalContext()
	defer stop()
	r, err := fn(ctx, pr.Counts)
	pr.Finish(false)
	return r, err
}

// Mode returns how p is drawn.
func (p *Progress) Mode() ProgressMode { return p.mode }

// Line returns the line that shows s at this moment, as Update draws it.
func (p *Progress) Line(s ProgressState) string { return p.render(s, p.now()) }

// SetClock has p read the time from now (a test's clock, which the test
// moves) and count its rate and time left from now() on.
func (p *Progress) SetClock(now func() time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := now()
	p.now, p.start, p.last = now, t, t
	p.marks = p.marks[:0]
}
