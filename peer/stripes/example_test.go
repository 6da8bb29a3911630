package stripes_test

import (
	"fmt"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/stripes"
)

// Deal six fetchers (peers 1 to 6; peer 0 seeds) into two stripe trees
// breadth first. Each tree needs five child places, ten in all, taken two a
// fetcher in order: peers 1 and 2 are inner nodes of stripe 0's tree, 4 and
// 5 of stripe 1's, peer 3's places straddle the two (a child in each), and
// peer 6 is a leaf of both. No fetcher has more than two children.
func ExamplePlan() {
	t, err := stripes.Plan(stripes.Config{Peers: 7, Stripes: 2, Order: []int{1, 2, 3, 4, 5, 6}, Seed: 0})
	if err != nil {
		panic(err)
	}
	for s, root := range t.Roots {
		fmt.Printf("stripe %d: seed -> %d", s, root)
		for p, kids := range t.Kids[s] {
			if len(kids) > 0 {
				fmt.Printf(", %d -> %v", p, kids)
			}
		}
		fmt.Println()
	}
	// Block 5 is in stripe 1: the seed sends it to peer 3, which passes it
	// on to peer 4.
	fmt.Println("block 5:", t.Root(5), "->", t.Children(5, t.Root(5)))
	// Output:
	// stripe 0: seed -> 1, 1 -> [2 3], 2 -> [4 5], 3 -> [6]
	// stripe 1: seed -> 3, 3 -> [4], 4 -> [5 1], 5 -> [2 6]
	// block 5: 3 -> [4]
}

// A seed's place in one stripe whose root, r, left: its children a, b and
// c ask the seed to adopt them. The seed adopts the first, cuts the root
// at the second (two of its children failed by it) and sends the others
// on to the first, which adopts them in turn: the orphans form a binary
// tree under the seed instead of all loading it.
func ExampleTree() {
	seed := stripes.NewTree(stripes.Place[string]{Self: "seed", Parents: []string{""}, Children: [][]string{{"r"}}}, time.Time{})
	a := stripes.NewTree(stripes.Place[string]{Self: "a", Parents: []string{"r"}, Grandparents: []string{"seed"}, Children: [][]string{{"a1"}}}, time.Time{})
	for _, orphan := range []string{"a", "b", "c"} {
		next, adopted, err := seed.Adoptee(orphan, 0, true)
		fmt.Printf("%s asks the seed: adopted %t, sent on to %q, %v\n", orphan, adopted, next, err)
		if orphan == "a" {
			// a takes the seed as its parent.
			try, _ := a.Try(0, "seed")
			a.Adopted(try, "", time.Time{})
		}
	}
	next, adopted, err := a.Adoptee("b", 0, false)
	fmt.Printf("b asks a: adopted %t, sent on to %q, %v\n", adopted, next, err)
	fmt.Println("the seed pushes to", seed.Children(0), "and a to", a.Children(0))
	// Output:
	// a asks the seed: adopted true, sent on to "", <nil>
	// b asks the seed: adopted false, sent on to "a", <nil>
	// c asks the seed: adopted false, sent on to "a", <nil>
	// b asks a: adopted true, sent on to "", <nil>
	// the seed pushes to [a] and a to [a1 b]
}
