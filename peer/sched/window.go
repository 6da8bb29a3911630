package sched

import "time"

// FlowWindow sizes the blocks a fetch keeps requested from one source: about
// one round trip of blocks at the rate the source delivers, plus one, and
// never more than the configured window. A source that sends slowly to this
// fetcher (a seed shared by many, a narrow uplink) gets a block or two at a
// time, so its upload queue stays short and what it sends was chosen
// recently, while a fast one gets a full window. It starts at 2 and grows
// as a slow start does: while the window limits the rate, the gap between
// blocks shrinks as the window grows.
type FlowWindow struct {
	Max   int
	Fixed bool
	rtt   time.Duration // base round trip to the source (the smallest seen)
	gap   time.Duration // moving average of the gaps between blocks while some are in flight
	last  time.Time     // the last arrival, or the request that found the pipe empty
	n     int
}

// FlowStart is the window before any gap is known.
const FlowStart = 2

// Size is the number of blocks to keep requested.
func (w *FlowWindow) Size() int {
	if w.Fixed {
		return w.Max
	}
	if w.n == 0 || w.rtt <= 0 || w.gap <= 0 {
		return min(w.Max, FlowStart)
	}
	// Twice the round trip's worth, so that jitter and the top-up batching
	// leave no bubble.
	k := 1 + int((2*w.rtt+w.gap-1)/w.gap)
	return max(1, min(w.Max, k))
}

// NoteRTT records a round trip measured to the source.
func (w *FlowWindow) NoteRTT(d time.Duration) {
	if d > 0 && (w.rtt == 0 || d < w.rtt) {
		w.rtt = d
	}
}

// Sent notes requests Sent at t; empty says none were in flight before.
func (w *FlowWindow) Sent(t time.Time, empty bool) {
	if empty {
		w.last = t
	}
}

// Arrived notes a block at t.
func (w *FlowWindow) Arrived(t time.Time) {
	if w.last.IsZero() {
		w.last = t
		return
	}
	g := t.Sub(w.last)
	w.last = t
	if w.n == 0 {
		w.gap = g
	} else {
		w.gap = (3*w.gap + g) / 4
	}
	w.n++
}

// RTT returns the base round trip to the source (the smallest seen), zero
// while none is known.
func (w *FlowWindow) RTT() time.Duration { return w.rtt }
