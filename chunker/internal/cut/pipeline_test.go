package cut

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"lukechampine.com/blake3"
)

const blockSize = 1 << 10

// TestStreamWorkers checks that the pipeline gives the same hashes with any number of
// workers, block sizes and stream lengths.
func TestStreamWorkers(t *testing.T) {
	data := make([]byte, 37*blockSize+123)
	rand.NewChaCha8([32]byte{9}).Read(data)
	var want [][HashSize]byte
	for off := 0; off < len(data); off += blockSize {
		want = append(want, blake3.Sum256(data[off:min(off+blockSize, len(data))]))
	}
	for _, w := range []int{1, 2, 3, 8} {
		for _, n := range []int{0, 1, blockSize, 5*blockSize - 1, len(data)} {
			flat, total, err := Stream(context.Background(), bytes.NewReader(data[:n]), blockSize, w, -1, nil)
			if err != nil || total != int64(n) {
				t.Fatalf("workers %d, %d bytes: %v, total %d", w, n, err, total)
			}
			nb := (n + blockSize - 1) / blockSize
			if len(flat) != nb*HashSize {
				t.Fatalf("workers %d, %d bytes: %d hashes", w, n, len(flat)/HashSize)
			}
			if n == len(data) {
				for i := range nb {
					if !bytes.Equal(flat[i*HashSize:(i+1)*HashSize], want[i][:]) {
						t.Fatalf("workers %d: block %d hash differs", w, i)
					}
				}
			}
		}
	}
}
