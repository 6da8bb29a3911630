package cut

import (
	"bytes"
	"context"
	"fmt"
)

// ExampleReader cuts 10,000 bytes into fixed-size blocks of 4 KiB, then into
// content-defined blocks of 1 to 16 KiB (which makes one block of bytes that
// are all zero: no cut point before the end).
func ExampleReader() {
	data := make([]byte, 10000)
	for _, cfg := range []Config{
		{Size: 4 << 10, Workers: 2},
		{CDC: CDC{Min: 1 << 10, Normal: 4 << 10, Max: 16 << 10}, Workers: 2},
	} {
		b, err := Reader(context.Background(), bytes.NewReader(data), cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("blocks %d, bytes %d, offsets %v\n", len(b.Hashes)/HashSize, b.Len, b.Offs)
	}
	// Output:
	// blocks 3, bytes 10000, offsets []
	// blocks 1, bytes 10000, offsets [0 10000]
}
