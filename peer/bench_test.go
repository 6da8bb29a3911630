package peer

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkFetch fetches a file from one seed over loopback TCP, both peers in
// this process; it reports MB/s of content.
func BenchmarkFetch(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			src := writeRandomFile(b, dir, "data.bin", size, 3)
			seed := newTestPeer(b)
			tk, err := seed.Seed(ctx, src)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := range b.N {
				f := newTestPeer(b, benchOpts...)
				if _, err := f.Fetch(ctx, tk, filepath.Join(dir, fmt.Sprint("out", i))); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}

var benchOpts []Option

// benchSizes are the file sizes of BenchmarkFetch (kept small for CI).
var benchSizes = []int{16 << 20}
