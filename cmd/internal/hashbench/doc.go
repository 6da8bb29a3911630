// Package hashbench holds the comparison of chunker.HashBlock (BLAKE3-256 on
// lukechampine.com/blake3's SIMD kernels, one goroutine) with another BLAKE3
// implementation, github.com/zeebo/blake3 (SSE4.1/AVX2, no goroutines): a
// check that both give the same hash on random inputs, and a benchmark of
// the two taken in alternation. It lives in the CLI's module so that the
// library's users never get the second implementation as a dependency.
//
//	go test -run '^$' -bench . ./cmd/internal/hashbench
//
// Measured on the 2-core build machine (AVX-512): HashBlock 5420-5480 MB/s,
// zeebo/blake3 3980-4130 MB/s on 64 KiB, 256 KiB and 1 MiB blocks (zeebo
// takes 1.33-1.36x HashBlock's time), so the block hash stays on
// lukechampine.com/blake3's kernels (AVX-512 where the CPU has it, AVX2
// otherwise), which the library already depended on. On a later day the
// same machine (its CPU model unchanged) gave HashBlock 2330-2360 MB/s and
// zeebo/blake3 2360-2400 MB/s: the virtual machine's speed varies between
// days, and the two implementations then tie.
package hashbench

import (
	zeebo "github.com/zeebo/blake3"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// Same reports whether chunker.HashBlock and github.com/zeebo/blake3 agree
// on data.
func Same(data []byte) bool { return chunker.HashBlock(data) == zeebo.Sum256(data) }
