package erasure_test

import (
	"bytes"
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
