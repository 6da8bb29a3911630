package cputime

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"testing"
)

// TestSelfGrows checks that Self counts the CPU a busy loop burns, on every
// platform that can tell.
func TestSelfGrows(t *testing.T) {
	c0, ok := Self()
	if !ok {
		if runtime.GOOS == "windows" || runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
			t.Fatalf("Self() = %v, false on %s", c0, runtime.GOOS)
		}
		t.Skipf("no process CPU time on %s", runtime.GOOS)
	}
	var sum [32]byte
	for c1 := c0; c1 <= c0; c1, _ = Self() {
		for range 10000 {
			sum = sha256.Sum256(sum[:])
		}
	}
	if c0 < 0 {
		t.Fatalf("Self() = %v at the start", c0)
	}
}

// ExampleSelf measures the CPU time a piece of work uses.
func ExampleSelf() {
	c0, ok := Self()
	var sum [32]byte
	for range 1000 {
		sum = sha256.Sum256(sum[:])
	}
	if c1, _ := Self(); ok {
		fmt.Println("CPU used:", c1-c0 >= 0)
	}
	// Output: CPU used: true
}
