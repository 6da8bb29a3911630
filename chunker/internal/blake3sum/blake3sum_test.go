package blake3sum

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"lukechampine.com/blake3"
)

// The block sizes of package chunker: its smallest, default and largest.
const (
	minBlock     = 1 << 10
	defaultBlock = 256 << 10
	maxBlock     = 16 << 20
)

// TestSum256Reference checks Sum256 against lukechampine.com/blake3's
// Sum256 on random inputs of every length around the sizes where its tree
// changes shape (chunks, SIMD groups, powers of two) and of the usual block
// sizes.
func TestSum256Reference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lens := []int{minBlock, defaultBlock, 1 << 20, maxBlock}
	for _, base := range []int{0, 1 << 10, 2 << 10, 8 << 10, 15 << 10, 16 << 10, 17 << 10, 24 << 10, 31 << 10, 32 << 10, 48 << 10, 64 << 10, 256 << 10, 1 << 20} {
		for d := -2; d <= 2; d++ {
			if base+d >= 0 {
				lens = append(lens, base+d)
			}
		}
	}
	for range 200 {
		lens = append(lens, r.IntN(300<<10))
	}
	if testing.Short() {
		lens = lens[:len(lens)-150]
	}
	buf := make([]byte, maxBlock+2)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for _, n := range lens {
		// At both ends of buf: with other bytes after the data, a hash
		// that used bytes past its end would differ.
		for _, in := range [][]byte{buf[:n], buf[len(buf)-n:]} {
			if got, want := Sum256(in), blake3.Sum256(in); got != want {
				t.Fatalf("Sum256 of %d bytes = %x, lukechampine.com/blake3 says %x", n, got, want)
			}
		}
	}
}

// TestSum256Allocs checks that hashing a block allocates nothing.
func TestSum256Allocs(t *testing.T) {
	for _, n := range []int{0, 64, 1024, 5000, 16 << 10, defaultBlock, 1 << 20} {
		data := make([]byte, n)
		if a := testing.AllocsPerRun(20, func() { Sum256(data) }); a != 0 {
			t.Errorf("Sum256 of %d bytes: %v allocations, want 0", n, a)
		}
	}
}

func ExampleSum256() {
	h := Sum256([]byte("hello"))
	fmt.Println(hex.EncodeToString(h[:]))
	// Output: ea8f163db38682925e4491c5e58d4bb3506ef8c14eb78a86e908c5624a67200f
}
