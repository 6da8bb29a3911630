// Package blake3sum hashes a buffer with BLAKE3-256 (unkeyed, 32 bytes of
// output) on the calling goroutine, allocating nothing: the SIMD kernels of
// lukechampine.com/blake3/guts without that package's goroutine per subtree.
// It is the block hash of package chunker.
package blake3sum

import (
	"lukechampine.com/blake3"
	"lukechampine.com/blake3/guts"
)

// simdChunks is how many 1 KiB chunks guts.CompressBuffer hashes at once
// (AVX-512: 16 lanes; AVX2: two calls of 8).
const simdChunks = guts.MaxSIMD

// groupLen is the bytes of one CompressBuffer call.
const groupLen = simdChunks * guts.ChunkSize

// Sum256 returns BLAKE3-256 of data, computed on the calling goroutine: groups of 16
// chunks go through the SIMD kernels of lukechampine.com/blake3/guts and
// their chaining values are merged into the BLAKE3 tree as that package's
// Hasher does, but without its goroutine per subtree (a 256 KiB block cost
// 16 goroutines, their stacks and 41 KiB of garbage; a fetcher hashes other
// blocks on the other cores anyway). It allocates nothing.
func Sum256(data []byte) [32]byte {
	if len(data) <= guts.ChunkSize {
		return blake3.Sum256(data) // one chunk: no tree, no goroutine
	}
	key := &guts.IV
	var stack [54][8]uint32 // subtree chaining values, one per height (2^54 chunks is more than a slice can hold)
	var counter uint64      // chunks hashed; bit h set: stack[h] holds a subtree of 2^h chunks
	// Whole groups, keeping the last 1 to 16 chunks for the root's side.
	for len(data) > groupLen {
		cv := guts.ChainingValue(guts.CompressBuffer((*[groupLen]byte)(data[:groupLen]), groupLen, key, counter, 0))
		h := 4 // a group is a subtree of 2^4 chunks
		for counter&(1<<h) != 0 {
			cv = guts.ChainingValue(guts.ParentNode(stack[h], cv, key, 0))
			h++
		}
		stack[h] = cv
		counter += simdChunks
		data = data[groupLen:]
	}
	// The last chunks form the tree's rightmost subtree (CompressBuffer merges
	// them left-balanced, as BLAKE3 does). The kernels read a whole group: a
	// shorter rest (the end of a file) is copied first.
	var n guts.Node
	if len(data) == groupLen {
		n = guts.CompressBuffer((*[groupLen]byte)(data), groupLen, key, counter, 0)
	} else {
		var tail [groupLen]byte
		copy(tail[:], data)
		n = guts.CompressBuffer(&tail, len(data), key, counter, 0)
	}
	// Merged with the subtrees on its left, from the smallest up, it gives the root.
	for h := range stack {
		if counter&(1<<h) != 0 {
			n = guts.ParentNode(stack[h], guts.ChainingValue(n), key, 0)
		}
	}
	n.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(n))
	return [32]byte(out[:32])
}
