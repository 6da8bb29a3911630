package update_test

import (
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/testnet/update"
)

// Version 2 of a 1 MiB file with 1 % of its bytes overwritten in 10 places:
// in 16 KiB blocks, each place touches one block or two.
func ExampleCompare() {
	ctx := context.Background()
	v1 := make([]byte, 1<<20)
	for i := range v1 {
		v1[i] = byte(i*7 + i>>8)
	}
	v2 := update.Edit(v1, 0.01, 10, 1)
	m1, err := chunker.ChunkReader(ctx, "f", 0o644, bytes.NewReader(v1), 16<<10)
	if err != nil {
		log.Fatal(err)
	}
	m2, err := chunker.ChunkReader(ctx, "f", 0o644, bytes.NewReader(v2), 16<<10)
	if err != nil {
		log.Fatal(err)
	}
	d := update.Compare(m1, m2)
	fmt.Printf("%d of %d blocks new, %d KiB\n", d.NewBlocks, m2.BlockCount(), d.NewBytes>>10)
	// Output:
	// 12 of 64 blocks new, 192 KiB
}
