package outlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestNoOwner checks that a holder that left no line is "another process".
func TestNoOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	l, err := Take(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	os.Remove(filepath.Join(dir, ownerFile))
	var held *HeldError
	if _, err := Take(dir, "second"); !errors.As(err, &held) || held.Owner != "another process" {
		t.Fatalf("second take: %v, want a HeldError of another process", err)
	}
}

func ExampleTake() {
	dir, err := os.MkdirTemp("", "outlock")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	l, err := Take(dir, "fetch one, pid 1")
	fmt.Println(err)
	_, err = Take(dir, "fetch two, pid 2")
	fmt.Println(err)
	l.Unlock()
	l, err = Take(dir, "fetch three")
	fmt.Println(err)
	l.Unlock()
	// Output:
	// <nil>
	// lock held by fetch one, pid 1
	// <nil>
}
