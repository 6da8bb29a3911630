package stripes

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDeal: blocks of one length (a shorter last one aside) are dealt as i
// mod k; blocks of varying lengths leave the stripes' bytes at most one
// block apart, every block dealt once.
func TestDeal(t *testing.T) {
	for _, k := range []int{1, 2, 3, 16, 256} {
		lengths := slices.Repeat([]int{1 << 14}, 1000)
		lengths[len(lengths)-1] = 100
		for i, s := range Deal(lengths, k) {
			if int(s) != i%k {
				t.Fatalf("k=%d: block %d of one length dealt to %d, want %d", k, i, s, i%k)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		k := 1 + r.IntN(32)
		lengths := make([]int, r.IntN(2000))
		longest := 0
		for i := range lengths {
			lengths[i] = 96<<10 + r.IntN(1<<20-96<<10)
			longest = max(longest, lengths[i])
		}
		bytes := make([]int, k)
		for i, s := range Deal(lengths, k) {
			bytes[s] += lengths[i]
		}
		if len(lengths) >= k && slices.Max(bytes)-slices.Min(bytes) > longest {
			t.Fatalf("trial %d, k=%d: stripes carry %d to %d bytes, more than one block (%d) apart", trial, k, slices.Min(bytes), slices.Max(bytes), longest)
		}
	}
}
