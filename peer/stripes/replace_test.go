package stripes_test

import (
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/stripes"
)

// TestPlacedChanges: a seed's placed root and a fetcher's changes of
// parent and children, as a Placer's moves make them.
func TestPlacedChanges(t *testing.T) {
	t0 := time.Unix(0, 0)
	seed := stripes.NewTree(stripes.Place[string]{Self: "seed", Parents: []string{"", ""}, Blocks: 4}, t0)
	if !seed.AddChild(1, "a") || seed.AddChild(1, "a") || seed.AddChild(0, "seed") {
		t.Fatal("AddChild: a root added twice, or the seed itself")
	}
	if !seed.Placed("a") {
		t.Error("a root placed as it joined is not Placed")
	}
	seed.Queue(1)
	if !seed.FirstCopies([]int{1}, t0) {
		t.Error("a block queued for a placed root whose stream is not up yet is no first copy")
	}
	seed.RemoveChild(1, "a")
	if len(seed.Children(1)) != 0 || seed.FirstCopies([]int{1}, t0) || seed.Placed("a") {
		t.Errorf("removed root: children %v, first copies %t", seed.Children(1), seed.FirstCopies([]int{1}, t0))
	}

	a := stripes.NewTree(stripes.Place[string]{Self: "a", Parents: []string{"", "seed"}, Blocks: 4, RepairAfter: time.Second}, t0)
	if a.Seed() {
		t.Fatal("a fetcher with a parent in one stripe is a seed")
	}
	if got := a.Held(t0, nil); got[0] || !got[1] {
		t.Fatalf("held %v, want stripe 1 only", got)
	}
	if !a.Reparent(0, "b", t0) || a.Reparent(0, "b", t0) || a.Reparent(1, "a", t0) {
		t.Fatal("Reparent: no change reported, or made its own parent")
	}
	if got := a.Held(t0, nil); !got[0] || a.Parent(0) != "b" {
		t.Fatalf("after Reparent: held %v, parent %q", got, a.Parent(0))
	}
	if v := a.PushedBy("b", 0, t0); v != stripes.Taken {
		t.Fatalf("a push of the new parent: %v", v)
	}
	a.Reparent(0, "", t0)
	if got := a.Held(t0, nil); got[0] {
		t.Fatal("a stripe without a parent is held")
	}
	if v := a.PushedBy("b", 0, t0); v == stripes.Taken {
		t.Fatal("a push of the old parent is taken")
	}
}

// TestRepair: a stripe is held for the repair time after its last push,
// however far apart its pushes came: a parent gone silent is repaired
// after the repair time.
func TestRepair(t *testing.T) {
	t0 := time.Unix(0, 0)
	tr := stripes.NewTree(stripes.Place[string]{Self: "a", Parents: []string{"p"}, Blocks: 100, RepairAfter: 2 * time.Second}, t0)
	now := t0
	for i := range 10 {
		now = now.Add(1500 * time.Millisecond)
		tr.PushedBy("p", i, now)
	}
	if got := tr.Repair(); got != 2*time.Second {
		t.Errorf("pushes 1.5 s apart: held for %v, want the repair time", got)
	}
	if got := tr.Held(now.Add(1900*time.Millisecond), nil); !got[0] {
		t.Error("not held 1.9 s after a push")
	}
	if got := tr.Held(now.Add(2100*time.Millisecond), nil); got[0] {
		t.Error("still held 2.1 s after the last push, with a repair time of 2 s")
	}
}
