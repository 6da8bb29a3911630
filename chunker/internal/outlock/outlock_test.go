package outlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A second taker is told who holds the lock; once it is released, the next
// taker gets it.
func ExampleTake() {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("outlock-example-%d", os.Getpid())) // Take makes it
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

// TestAbandon: an abandoned lock's state folder goes when it holds nothing
// else, stays (lock file included) when it does, and the lock can be taken
// again either way.
func TestAbandon(t *testing.T) {
	for _, other := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "state")
		l, err := Take(dir, "first")
		if err != nil {
			t.Fatal(err)
		}
		if other {
			if err := os.WriteFile(filepath.Join(dir, "manifest"), []byte("m"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Abandon(); err != nil {
			t.Fatal(err)
		}
		_, err = os.Stat(dir)
		if _, lerr := os.Stat(filepath.Join(dir, lockFile)); other && (err != nil || lerr != nil) || !other && !os.IsNotExist(err) {
			t.Errorf("other files %v: after Abandon the folder: %v, its lock file: %v", other, err, lerr)
		}
		l, err = Take(dir, "second")
		if err != nil {
			t.Fatalf("other files %v: take after Abandon: %v", other, err)
		}
		l.Unlock()
	}
}
