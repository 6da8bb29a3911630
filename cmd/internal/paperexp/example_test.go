package paperexp_test

import (
	"context"
	"fmt"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/cmd/internal/paperexp"
)

// One trial of paper Table 1 at m = 65536, k = 6: the subtraction result has
// no false negatives and its fp is close to the T7 expectation.
func ExampleRunTable1() {
	rows, err := paperexp.RunTable1(context.Background(), paperexp.Table1Config{
		Trials: 1, Seed: 1, Hash: cbfalgebra.HashSHA1, Ms: []int{65536}, Ks: []int{6},
	})
	if err != nil {
		panic(err)
	}
	for _, r := range rows {
		if r.Column == "subtract" {
			fmt.Printf("expected fp %.4f%%, fn %v\n", 100*r.ExpectedFP, r.MeasuredFN)
		}
	}
	// Output: expected fp 0.1202%, fn 0
}
