package methods_test

import (
	"context"
	"fmt"

	"github.com/reconcile-p2p/reconcile/cmd/internal/methods"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// Two peers of 1000 blocks each lacking 10 of the other's: the exact methods
// deliver exactly the 10, and the IBLT's traffic follows the difference.
func Example() {
	cfg := methods.Config{N: 1000, Diffs: []int{10}, Trials: 3, Seed: 1,
		Methods: []reconcile.Method{reconcile.Bitfield, reconcile.IBLT}}
	rows, err := methods.Run(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	for _, r := range rows {
		fmt.Printf("%s: missed %.0f, redundant %.0f, fewer bytes than a 1000-block bitfield: %v\n",
			r.Method, r.Missed, r.Redundant, r.FilterBytes < 125)
	}
	// Output:
	// bitfield: missed 0, redundant 0, fewer bytes than a 1000-block bitfield: false
	// iblt: missed 0, redundant 0, fewer bytes than a 1000-block bitfield: false
}
