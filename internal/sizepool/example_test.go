package sizepool_test

import (
	"fmt"

	"github.com/reconcile-p2p/reconcile/internal/sizepool"
)

// A framed 16 KiB block gets a slice of 17 KiB, not 32; the slice goes back
// once the bytes are delivered.
func Example() {
	frame := make([]byte, 16<<10+7)
	b := append(sizepool.Get(len(frame)), frame...)
	fmt.Println(len(b), cap(b))
	sizepool.Put(b)
	_, size := sizepool.Class(256<<10 + 7)
	fmt.Println(size)
	// Output:
	// 16391 17408
	// 278528
}
