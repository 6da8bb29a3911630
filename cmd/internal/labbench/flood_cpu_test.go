package labbench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestStatCPU: the seed's CPU time is utime+stime of /proc/PID/stat, read
// past a command name that holds spaces and parentheses.
func TestStatCPU(t *testing.T) {
	for _, c := range []struct {
		stat string
		want float64
		ok   bool
	}{
		{"4242 (reconcile) S 1 4242 4242 0 -1 4194560 2345 0 0 0 150 27 0 0 20 0 9 0 1234 0 0", 1.77, true},
		{"4242 (a (b) c) R 1 4242 4242 0 -1 4194560 2345 0 0 0 3 4 0 0 20 0 9 0", 0.07, true},
		{"4242 (reconcile) S 1 4242", 0, false},
		{"4242 reconcile S 1 4242 4242 0 -1 4194560 2345 0 0 0 x 4 0 0", 0, false},
	} {
		got, ok := statCPU([]byte(c.stat))
		if ok != c.ok || (ok && (got < c.want-1e-9 || got > c.want+1e-9)) {
			t.Errorf("statCPU(%q) = %v, %v; want %v, %v", c.stat, got, ok, c.want, c.ok)
		}
	}
}

// TestReadCPU: this process's CPU time grows as it works (Linux only).
func TestReadCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before, ok := readCPU(os.Getpid())
	if !ok {
		t.Fatal("no CPU time for this process")
	}
	x := 0
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	after, _ := readCPU(os.Getpid())
	if after <= before {
		t.Errorf("CPU time %v s after 100 ms of work, %v s before (%d loops)", after, before, x)
	}
}
