package erasure_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/reconcile-p2p/reconcile/erasure"
)

// The paper's Byers baseline codes kk blocks with RS(8191, kk): any kk of the 8191
// coded blocks give the file back.
func Example() {
	code, err := erasure.New(5000, 8191, 64)
	if err != nil {
		panic(err)
	}
	src := make([][]byte, code.K())
	for i := range src {
		src[i] = bytes.Repeat([]byte{byte(i)}, code.BlockSize())
	}
	coded, err := code.Encode(src)
	if err != nil {
		panic(err)
	}
	// keep the last 5000 coded blocks only: 3191 of the source blocks are lost
	var got []erasure.Block
	for i := code.N() - code.K(); i < code.N(); i++ {
		got = append(got, erasure.Block{Index: i, Data: coded[i]})
	}
	dec, err := code.Decode(got)
	if err != nil {
		panic(err)
	}
	fmt.Println(code, bytes.Equal(dec[42], src[42]))
	// Output: RS(8191, 5000) GF(2^16) 64 B true
}

// A receiver collects coded blocks as they arrive, from any peers in any order,
// and decodes each generation once it holds kk of them, outside its own locks.
func ExampleCollector() {
	code, _ := erasure.New(4, 8, 16) // RS(8, 4), 16-byte blocks
	file := []byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox")
	gens, _ := erasure.NewGenerations(code, int64(len(file)))
	coded, _ := gens.Encode(file)

	c := erasure.NewCollector(gens)
	var out [][]byte
	for _, j := range []int{7, 1, 5, 6} { // any four blocks of each generation
		for g := range gens.Count() {
			g, ready, err := c.Add(gens.ID(g, j), coded[g][j])
			if err != nil {
				panic(err)
			}
			if ready {
				src, err := c.Decode(context.Background(), g)
				if err != nil {
					panic(err)
				}
				out = append(out, bytes.Join(src, nil))
			}
		}
	}
	fmt.Printf("%d generations, %q\n", len(out), bytes.Join(out, nil)[:len(file)])
	// Output: 2 generations, "the quick brown fox jumps over the lazy dog, twice: the quick brown fox"
}
