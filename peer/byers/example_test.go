package byers_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/byers"
)

// A seed codes its content into generations of 4 source blocks, each coded
// into 8 coded blocks; a fetcher checks the coded blocks it gets against the
// seed's header and decodes every generation from any 4 of its coded blocks,
// here the parity blocks alone.
func Example() {
	ctx := context.Background()
	data := bytes.Repeat([]byte("reconcile "), 1000) // 10000 bytes
	m, _ := chunker.ChunkReader(ctx, "f", 0o644, bytes.NewReader(data), 1024)
	seed := emptyStore(m)
	for i := range m.BlockCount() {
		off, n := m.BlockSpan(i)
		seed.blocks[i] = data[off : off+int64(n)]
	}

	coded, err := byers.Encode(ctx, m, seed, byers.Params{K: 4, N: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d blocks, %d coded blocks\n", m.BlockCount(), coded.Count())

	// The fetcher has the manifest, and the header from a peer it trusts.
	set, err := byers.DecodeHeader(coded.Header(), m)
	if err != nil {
		fmt.Println(err)
		return
	}
	out := emptyStore(m)
	t, err := byers.NewTarget(ctx, set, m, out)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range coded.Count() {
		if i%8 < 4 || t.Has(i) {
			continue // a source block, or one no longer needed
		}
		b, _ := coded.Get(i)
		if err := t.Put(i, b); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Printf("decoded: %v, %d coded blocks received\n", out.complete(), len(t.Held()))
	// Output:
	// 10 blocks, 24 coded blocks
	// decoded: true, 12 coded blocks received
}
