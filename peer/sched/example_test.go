package sched_test

import (
	"fmt"

	"github.com/reconcile-p2p/reconcile/peer/sched"
)

// A picker gives each source the blocks it offered that no other source
// has claimed: two sources that offer the same blocks are asked for
// different ones, and a block whose source failed goes to the other.
func ExamplePicker() {
	held := make([]bool, 6)
	pk := sched.NewPicker[string](func(i int) bool { return held[i] }, 16)
	var a, b sched.Offers
	pk.Offer(&a, []int{0, 1, 2, 3})
	pk.Offer(&b, []int{2, 3, 4, 5})
	fromA := pk.Claim("a", &a, 2)
	fromB := pk.Claim("b", &b, 4)
	fmt.Println("a:", fromA, "b:", fromB)

	// Block 0 arrived; block 3 did not come from b: b lets it go, and a,
	// which offered it too, is asked for it.
	held[0] = true
	pk.Done(0, false)
	pk.Unclaim("b", &b, []int{3})
	fmt.Println("a again:", pk.Claim("a", &a, 4), "in flight:", pk.InFlight())
	// Output:
	// a: [0 1] b: [2 3 4 5]
	// a again: [3] in flight: 5
}
