package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

// newProgress returns a callback that shows "label done/total (pct) eta" on
// standard error, redrawn in place, when standard error is a terminal; it
// prints nothing otherwise (output piped to a file stays clean). Call the
// returned done function when the work ends to finish the line.
func newProgress(label string) (update func(done, total int), finish func()) {
	if !isTerminal(os.Stderr) {
		return func(int, int) {}, func() {}
	}
	start := time.Now()
	var last time.Time
	drawn := false
	update = func(done, total int) {
		now := time.Now()
		if done < total && now.Sub(last) < 100*time.Millisecond {
			return
		}
		last = now
		eta := ""
		if done > 0 && done < total {
			left := time.Duration(float64(now.Sub(start)) * float64(total-done) / float64(done))
			eta = " eta " + left.Round(time.Second).String()
		}
		fmt.Fprintf(os.Stderr, "\r\033[K%s %d/%d (%.0f%%)%s", label, done, total, 100*float64(done)/float64(max(total, 1)), eta)
		drawn = true
	}
	finish = func() {
		if drawn {
			fmt.Fprintf(os.Stderr, "\r\033[K")
		}
	}
	return update, finish
}

// count writes n and the noun, in the plural unless n is 1: "1 peer", "3 peers".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// runWithProgress runs fn with a context cancelled by Ctrl-C or SIGTERM and a
// progress callback that draws "label done/total" on a terminal (see
// newProgress): the frame of every long experiment command.
func runWithProgress[R any](label string, fn func(ctx context.Context, progress func(done, total int)) (R, error)) (R, error) {
	update, finish := newProgress(label)
	ctx, stop := signalContext()
	defer stop()
	r, err := fn(ctx, update)
	finish()
	return r, err
}
