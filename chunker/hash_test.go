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

// BenchmarkHashVersus hashes the same 256 KiB block with BLAKE3 and SHA-256 in
// alternation, so that the machine's load affects both alike, and reports each
// one's MB/s and speedup = SHA-256 time / BLAKE3 time.
func BenchmarkHashVersus(b *testing.B) {
	data := make([]byte, DefaultBlockSize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var tb, ts int64
	for b.Loop() {
		t0 := nanotime()
		blake3.Sum256(data)
		t1 := nanotime()
		sha256.Sum256(data)
		tb, ts = tb+t1-t0, ts+nanotime()-t1
	}
	n := float64(b.N) * float64(len(data))
	b.ReportMetric(n/float64(tb)*1e3, "blake3MB/s")
	b.ReportMetric(n/float64(ts)*1e3, "sha256MB/s")
	b.ReportMetric(float64(ts)/float64(tb), "speedup")
}
