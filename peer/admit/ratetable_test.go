package admit

import (
	"fmt"
	"testing"
	"time"
)

// TestRateTable: a key gets its burst at once, then the rate; keys are
// independent; full buckets are swept; the table never holds more than
// MaxKeys buckets.
func TestRateTable(t *testing.T) {
	rt := NewRateTable(10, 5)
	now := time.Now()
	for i := range 5 {
		if !rt.Allow("a", 1, now) {
			t.Fatalf("token %d of the burst refused", i)
		}
	}
	if rt.Allow("a", 1, now) {
		t.Error("a token beyond the burst allowed")
	}
	if !rt.Allow("b", 5, now) {
		t.Error("another key's burst refused")
	}
	if !rt.Allow("a", 1, now.Add(100*time.Millisecond)) {
		t.Error("a token refused after 1/rate")
	}
	rt.Sweep(now.Add(time.Second))
	if n := len(rt.m); n != 0 {
		t.Errorf("%d buckets after every key was idle for the whole burst", n)
	}
	for i := range MaxKeys + 10 {
		rt.Allow(fmt.Sprint(i), 1, now)
	}
	if n := len(rt.m); n > MaxKeys {
		t.Errorf("%d buckets, more than MaxKeys", n)
	}
}
