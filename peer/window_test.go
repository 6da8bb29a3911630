package peer

import (
	"testing"
	"time"
)

// TestFlowWindow: the window starts small, grows while it limits the rate
// (the gap between blocks shrinks as it grows), settles at about two round
// trips of blocks plus one at the source's rate, and stays within 1 and the
// configured window.
func TestFlowWindow(t *testing.T) {
	w := flowWindow{max: 16}
	if got := w.size(); got != flowStart {
		t.Fatalf("first window %d, want %d", got, flowStart)
	}
	w.noteRTT(800 * time.Millisecond)
	w.noteRTT(time.Second) // the smallest round trip is kept
	t0 := time.Unix(0, 0)
	// A slow source: a block every 2 s, whatever the window.
	w.sent(t0, true)
	for k := 1; k <= 10; k++ {
		w.arrived(t0.Add(time.Duration(k) * 2 * time.Second))
	}
	if got := w.size(); got != 2 {
		t.Fatalf("window for a block every 2 s at an 800 ms round trip: %d, want 2", got)
	}
	// A fast source: a block every 10 ms gives the whole window.
	f := flowWindow{max: 16}
	f.noteRTT(800 * time.Millisecond)
	f.sent(t0, true)
	for k := 1; k <= 20; k++ {
		f.arrived(t0.Add(time.Duration(k) * 10 * time.Millisecond))
	}
	if got := f.size(); got != 16 {
		t.Fatalf("window for a fast source %d, want the cap 16", got)
	}
	// In between: 100 ms per block, 300 ms round trip: 1 + 600/100.
	m := flowWindow{max: 16}
	m.noteRTT(300 * time.Millisecond)
	m.sent(t0, true)
	for k := 1; k <= 40; k++ {
		m.arrived(t0.Add(time.Duration(k) * 100 * time.Millisecond))
	}
	if got := m.size(); got != 7 {
		t.Fatalf("window %d, want 7", got)
	}
	fixed := flowWindow{max: 16, fixed: true}
	if got := fixed.size(); got != 16 {
		t.Fatalf("fixed window %d, want 16", got)
	}
}
