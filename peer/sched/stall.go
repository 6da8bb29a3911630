package sched

import (
	"slices"
	"time"
)

// Waits keeps the recent times a fetch waited for a source's next block,
// over all its sources, so that a source that keeps a block far longer
// than the sources of the same fetch do (one that stalls, or left without
// a word) is given up in a few of those times rather than after a fixed
// stall timeout: its blocks are then asked of the others.
//
// A wait is the time from the moment a fetch starts waiting for a
// source's next block (its previous block arrived, or it was asked for
// blocks when none were in flight) to the block's arrival: the time a
// source takes to serve a block, and a round trip when its pipe was empty.
// A slow but honest source is not given up: its blocks come in waits of
// its own, which the P99 covers once it serves a hundredth of the blocks.
type Waits struct {
	ring [WaitSamples]time.Duration
	n    int // waits recorded; the ring holds the last min(n, WaitSamples)
}

// WaitSamples is how many of the latest waits Waits keeps.
const WaitSamples = 256

// MinWaits is how many waits must be known before Allowed bounds a wait
// below its cap.
const MinWaits = 8

// StallFactor is how many times the P99 of the fetch's waits a source may
// keep the fetch waiting for its next block.
const StallFactor = 4

// StallFloor is the least a source is allowed for its next block, however
// quick the others are: timer and scheduler jitter on a busy machine.
const StallFloor = 20 * time.Millisecond

// Add records one wait.
func (w *Waits) Add(d time.Duration) {
	w.ring[w.n%WaitSamples] = d
	w.n++
}

// P50 returns the median of the recent waits, and false while fewer than
// MinWaits are known.
func (w *Waits) P50() (time.Duration, bool) { return w.quantile(50) }

// P99 returns the 99th percentile of the recent waits (of the last
// WaitSamples), and false while fewer than MinWaits are known.
func (w *Waits) P99() (time.Duration, bool) { return w.quantile(99) }

// quantile returns the q-th percentile of the recent waits.
func (w *Waits) quantile(q int) (time.Duration, bool) {
	n := min(w.n, WaitSamples)
	if n < MinWaits {
		return 0, false
	}
	s := slices.Clone(w.ring[:n])
	slices.Sort(s)
	return s[min(n-1, n*q/100)], true
}

// Allowed returns how long a source may keep the fetch waiting for its
// next block: StallFactor times the P99 of the recent waits, at least
// floor (a few of the source's round trips; StallFloor at least) and at
// most limit (the configured stall timeout); limit while fewer than
// MinWaits waits are known.
func (w *Waits) Allowed(floor, limit time.Duration) time.Duration {
	p, ok := w.P99()
	if !ok {
		return limit
	}
	return min(limit, max(StallFactor*p, floor, StallFloor))
}

// Known reports whether MinWaits waits are known.
func (w *Waits) Known() bool { return w.n >= MinWaits }
