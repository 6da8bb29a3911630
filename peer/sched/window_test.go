package sched

import (
	"testing"
	"time"
)

// flowRun runs a fetch from one source through w: the source sends the
// blocks asked for one after another, service apart, and each want and
// block takes half of rtt on the way. The fetch keeps w.size() blocks
// requested and asks again at each arrival. It returns the window after
// each of the first n arrivals, the time the n-th arrived and the longest
// the source's queue grew (blocks asked for and not yet sent).
func flowRun(w *FlowWindow, rtt, service time.Duration, n int) (sizes []int, took time.Duration, queue int) {
	t0 := time.Unix(0, 0)
	w.NoteRTT(rtt)
	var inflight []time.Time // the blocks' arrivals, in the order the source sends them
	free := t0               // when the source's uplink is next free
	ask := func(now time.Time) {
		for len(inflight) < w.Size() {
			w.Sent(now, len(inflight) == 0)
			start := now.Add(rtt / 2)
			if start.Before(free) {
				start = free
			}
			free = start.Add(service)
			inflight = append(inflight, free.Add(rtt/2))
		}
		q := 0
		for _, at := range inflight {
			if at.Add(-rtt/2).Sub(now) > service {
				q++ // not yet on the wire
			}
		}
		queue = max(queue, q)
	}
	ask(t0)
	for range n {
		at := inflight[0]
		inflight = inflight[1:]
		w.Arrived(at)
		sizes = append(sizes, w.Size())
		took = at.Sub(t0)
		ask(at)
	}
	return sizes, took, queue
}

// TestFlowPaths runs the window against sources: on a long path to a fast
// source it reaches the cap within a dozen blocks (about three round trips)
// and keeps the pipe full; a slow source gets a block or two at a time, so
// its queue stays short.
func TestFlowPaths(t *testing.T) {
	// 800 ms round trip, a block every 10 ms: 80 blocks a round trip.
	sizes, took, _ := flowRun(&FlowWindow{Max: 16}, 800*time.Millisecond, 10*time.Millisecond, 64)
	if sizes[11] != 16 || took > 6*time.Second {
		t.Errorf("fast source: 64 blocks took %v, windows %v; want the cap 16 by the 12th block", took, sizes)
	}
	// A block every 2 s at 800 ms.
	sizes, _, queue := flowRun(&FlowWindow{Max: 16}, 800*time.Millisecond, 2*time.Second, 20)
	if queue > 2 || sizes[len(sizes)-1] != 2 {
		t.Errorf("slow source: longest queue %d, windows %v", queue, sizes)
	}
}

// TestFlowWindow: the window starts small, grows while it limits the rate
// (the gap between blocks shrinks as it grows), settles at about two round
// trips of blocks plus one at the source's rate, and stays within 1 and the
// configured window.
func TestFlowWindow(t *testing.T) {
	w := FlowWindow{Max: 16}
	if got := w.Size(); got != FlowStart {
		t.Fatalf("first window %d, want %d", got, FlowStart)
	}
	w.NoteRTT(800 * time.Millisecond)
	w.NoteRTT(time.Second) // the smallest round trip is kept
	t0 := time.Unix(0, 0)
	// A slow source: a block every 2 s, whatever the window.
	w.Sent(t0, true)
	for k := 1; k <= 10; k++ {
		w.Arrived(t0.Add(time.Duration(k) * 2 * time.Second))
	}
	if got := w.Size(); got != 2 {
		t.Fatalf("window for a block every 2 s at an 800 ms round trip: %d, want 2", got)
	}
	// A fast source: a block every 10 ms gives the whole window.
	f := FlowWindow{Max: 16}
	f.NoteRTT(800 * time.Millisecond)
	f.Sent(t0, true)
	for k := 1; k <= 20; k++ {
		f.Arrived(t0.Add(time.Duration(k) * 10 * time.Millisecond))
	}
	if got := f.Size(); got != 16 {
		t.Fatalf("window for a fast source %d, want the cap 16", got)
	}
	// In between: 100 ms per block, 300 ms round trip: 1 + 600/100.
	m := FlowWindow{Max: 16}
	m.NoteRTT(300 * time.Millisecond)
	m.Sent(t0, true)
	for k := 1; k <= 40; k++ {
		m.Arrived(t0.Add(time.Duration(k) * 100 * time.Millisecond))
	}
	if got := m.Size(); got != 7 {
		t.Fatalf("window %d, want 7", got)
	}
	fixed := FlowWindow{Max: 16, Fixed: true}
	if got := fixed.Size(); got != 16 {
		t.Fatalf("fixed window %d, want 16", got)
	}
}
