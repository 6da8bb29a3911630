package cbfalgebra_test

import (
	"bytes"
	"fmt"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

func Example() {
	c, err := cbfalgebra.New(1<<16, 6) // 65536 4-bit counters, 6 hash functions
	if err != nil {
		panic(err)
	}
	c.Insert([]byte("alpha"))
	c.Insert([]byte("beta"))
	fmt.Println(c.Contains([]byte("alpha")), c.Contains([]byte("gamma")), c.Len())
	if err := c.Delete([]byte("alpha")); err != nil {
		panic(err)
	}
	fmt.Println(c.Contains([]byte("alpha")), c.Delete([]byte("gamma")))
	// Output:
	// true false 2
	// false cbfalgebra: element is not a member
}

// Peers A and B hold blocks of one file (universe U). A sends CBF(A); B
// computes CBF(B) \ CBF(A) and returns every block of its own that the
// difference contains: all of B \ A, with no false negatives.
func ExampleSubtract() {
	opts := []cbfalgebra.Option{cbfalgebra.WithHash(cbfalgebra.HashSHA1)}
	var universe [][]byte
	for i := 0; i < 1000; i++ {
		universe = append(universe, fmt.Appendf(nil, "block-%04d", i))
	}
	filter := func(blocks [][]byte) *cbfalgebra.CBF {
		c, _ := cbfalgebra.New(1<<15, 6, opts...)
		for _, b := range blocks {
			c.Insert(b)
		}
		return c
	}
	a, b := universe[:600], universe[400:] // A lacks blocks 600..999
	cu, ca, cb := filter(universe), filter(a), filter(b)

	diff, err := cbfalgebra.Subtract(cb, ca, cu)
	if err != nil {
		panic(err)
	}
	missing := 0
	for _, x := range b {
		if diff.Contains(x) && bytes.Compare(x, []byte("block-0600")) >= 0 {
			missing++
		}
	}
	fmt.Println("blocks of B \\ A found:", missing, "of", 400)
	// Output: blocks of B \ A found: 400 of 400
}

func ExampleDecodeCBF() {
	c, _ := cbfalgebra.New(1000, 4, cbfalgebra.WithSeed(7))
	c.Insert([]byte("x"))
	wire, _ := c.MarshalBinary()
	fmt.Println(len(wire) == c.EncodedSize())

	d, err := cbfalgebra.DecodeCBF(wire, 1<<20)
	if err != nil {
		panic(err)
	}
	eq, _ := cbfalgebra.Equal(c, d)
	fmt.Println(d.Params(), eq)

	wire[len(wire)/2] ^= 1
	_, err = cbfalgebra.DecodeCBF(wire, 1<<20)
	fmt.Println(err != nil)
	// Output:
	// true
	// m=1000 k=4 r=4 hash=fast seed=7 true
	// true
}

func ExampleFPSubtract() {
	// Paper Table 1, m = 65536, k = 4: the fp of CBF(S1) \ CBF(S2), in percent.
	fmt.Printf("%.4f%%\n", 100*cbfalgebra.FPSubtract(65536, 4, 12000, 6000, 6000, 2000))
	// Output: 0.2654%
}

// A peer sums the filters of its three neighbours (T8) and reads, per block,
// how many of them hold it: the rarity rarest-first block choice needs,
// without the neighbours' block lists.
func ExampleTally() {
	neighbours := [][]string{{"b0", "b1"}, {"b1"}, {"b1", "b2"}}
	tally, err := cbfalgebra.NewTally(cbfalgebra.Params{M: 1 << 12, K: 4, R: 4})
	if err != nil {
		panic(err)
	}
	for _, held := range neighbours {
		c, _ := cbfalgebra.NewFromParams(tally.Params())
		for _, b := range held {
			c.Insert([]byte(b))
		}
		if err := tally.Add(c); err != nil {
			panic(err)
		}
	}
	for _, b := range []string{"b0", "b1", "b2", "b3"} {
		fmt.Print(b, ":", tally.Count([]byte(b)), " ")
	}
	fmt.Println()
	// Output:
	// b0:1 b1:3 b2:1 b3:0
}
