package chunker

import (
	"crypto/sha256"
	"testing"
	"time"

	"lukechampine.com/blake3"
)

// BenchmarkHash compares the candidate block hashes over one default-size block; it
// is the measurement behind HashName.
func BenchmarkHash(b *testing.B) {
	data := make([]byte, DefaultBlockSize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, c := range []struct {
		name string
		fn   func([]byte) [32]byte
	}{
		{"blake3", blake3.Sum256},
		{"sha256", sha256.Sum256},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				c.fn(data)
			}
		})
	}
}

func nanotime() int64 { return time.Now().UnixNano() }
