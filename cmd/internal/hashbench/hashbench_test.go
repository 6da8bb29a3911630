package hashbench

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	zeebo "github.com/zeebo/blake3"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// TestSame compares chunker.HashBlock with zeebo/blake3 on random inputs of
// random lengths up to the largest block.
func TestSame(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, chunker.MaxBlockSize)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	lens := []int{0, 1, 1024, 1025, 16 << 10, 16<<10 + 1, chunker.DefaultBlockSize, chunker.MaxBlockSize}
	n := 300
	if testing.Short() {
		n = 30
	}
	for range n {
		lens = append(lens, r.IntN(1<<20))
	}
	for _, n := range lens {
		off := r.IntN(len(buf) - n + 1)
		if !Same(buf[off : off+n]) {
			t.Fatalf("HashBlock and zeebo/blake3 differ on %d bytes", n)
		}
	}
}

// BenchmarkBlake3 hashes one block of each size with chunker.HashBlock and
// zeebo/blake3's Sum256 in alternation (so that the machine's load affects
// both alike) and reports each one's MB/s and zeebo-time = zeebo's time
// over HashBlock's (above 1: HashBlock is faster).
func BenchmarkBlake3(b *testing.B) {
	for _, size := range []int{64 << 10, chunker.DefaultBlockSize, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i * 7)
			}
			var th, tz time.Duration
			for b.Loop() {
				t0 := time.Now()
				chunker.HashBlock(data)
				t1 := time.Now()
				zeebo.Sum256(data)
				th, tz = th+t1.Sub(t0), tz+time.Since(t1)
			}
			n := float64(b.N) * float64(size)
			b.ReportMetric(n/th.Seconds()/1e6, "HashBlock-MB/s")
			b.ReportMetric(n/tz.Seconds()/1e6, "zeebo-MB/s")
			b.ReportMetric(float64(tz)/float64(th), "zeebo-time")
		})
	}
}

func ExampleSame() {
	fmt.Println(Same([]byte("reconcile")))
	// Output: true
}
