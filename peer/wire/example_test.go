package wire_test

import (
	"bufio"
	"bytes"
	"fmt"

	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// A fetcher asks for blocks 3 and 7 of a content; the server answers with
// block 3 and says it lacks block 7. Every frame is read with a size limit.
func Example() {
	var stream bytes.Buffer
	w := bufio.NewWriter(&stream)
	wire.WriteFrame(w, wire.Hello{Root: []byte{0xab, 0xcd}}.Append(nil))
	wire.WriteFrame(w, wire.AppendWant(nil, []int{3, 7}))
	wire.WriteFrame(w, wire.AppendBlockHeader(nil, 3), []byte("block three"))
	wire.WriteFrame(w, wire.AppendMissing(nil, 7))
	w.Flush()

	r := wire.NewReader(&stream)
	f, _ := r.Next(64)
	h, _ := wire.DecodeHello(f)
	f, _ = r.Next(1 << 10)
	want, _ := wire.DecodeWant(nil, f, 256, 10)
	fmt.Printf("hello for root %x, want %v\n", h.Root, want)
	for range 2 {
		f, _ = r.Next(1 << 20)
		i, data, ok, err := wire.DecodeBlock(f, 10)
		fmt.Printf("block %d: %q held %v err %v\n", i, data, ok, err)
	}
	// Output:
	// hello for root abcd, want [3 7]
	// block 3: "block three" held true err <nil>
	// block 7: "" held false err <nil>
}

// A Counter counts what a stream carries, length prefixes included: here a
// hello frame of 5 bytes goes out in 6.
func ExampleCounter() {
	var stream bytes.Buffer
	var c wire.Counter
	w := bufio.NewWriter(c.Wrap(&stream))
	wire.WriteFrame(w, wire.Hello{Root: []byte{0xab, 0xcd}}.Append(nil))
	w.Flush()
	fmt.Println(c.Sent(), "bytes sent,", c.Received(), "received")
	// Output:
	// 6 bytes sent, 0 received
}
