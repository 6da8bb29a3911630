package delta_test

import (
	"bytes"
	"fmt"

	"github.com/reconcile-p2p/reconcile/peer/delta"
)

// A peer that holds an older version sends the signature of the bytes an
// edit fell in; the peer holding the new run answers with a delta, from
// which the first rebuilds the run.
func Example() {
	old := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog. "), 400)
	run := append(append(bytes.Clone(old[:9000]), "NEW WORDS "...), old[9000:]...)

	sig, _ := delta.Signature(bytes.NewReader(old), int64(len(old))) // asking peer
	d, _ := delta.Make(sig, run)                                     // holder of the run
	got, err := delta.Apply(bytes.NewReader(old), int64(len(old)), d, len(run))
	fmt.Println(err, bytes.Equal(got, run), len(d) < len(run)/10)
	// Output: <nil> true true
}
