// Package sizepool pools byte slices by size class, for buffers whose sizes
// vary and that are held a while: the testnet's bytes in flight, which wait
// a latency in a link stream by the thousand, and a fetch's block frames,
// whose content-defined blocks run from a few KiB to 1 MiB (a pool of
// buffers of the longest size would hold 1 MiB for a 121 KiB block).
//
// The classes are m<<e for m in [17, 32], sixteen from one power of two to
// the next, so a slice has at most 1/16 more room than asked for. (With
// powers of two, the framed 16 KiB blocks of a testnet took 32 KiB each: a
// third of a 200-peer run's heap.)
//
//	b := append(sizepool.Get(len(p)), p...)
//	// ... hold b, then, once nothing refers to it:
//	sizepool.Put(b)
package sizepool

import (
	"math/bits"
	"sync"
)

// subClasses is the number of size classes from one power of two to the
// next.
const subClasses = 16

// MinPooled is the smallest size pooled: Get makes smaller slices exactly
// and Put drops them (they cost the allocator little).
const MinPooled = 1 << 10

// pools holds the slices given back, class Class(n) those of capacity
// Size(n).
var pools [bits.UintSize * subClasses]sync.Pool

// Class returns the size class of n >= MinPooled bytes (an index from 0 up)
// and the capacity of its slices, the least m<<e >= n with m in [17, 32].
func Class(n int) (class, size int) {
	e := bits.Len(uint(n-1)) - 5
	m := (n-1)>>e + 1
	return subClasses*e + m - subClasses - 1, m << e
}

// Get returns an empty slice with room for n bytes: a pooled one of n's
// class, or a new one.
func Get(n int) []byte {
	if n < MinPooled {
		return make([]byte, 0, n)
	}
	k, size := Class(n)
	if bp, _ := pools[k].Get().(*[]byte); bp != nil {
		b := (*bp)[:0]
		*bp = nil
		holders.Put(bp)
		return b
	}
	return make([]byte, 0, size)
}

// holders holds empty slice headers for Put (sync.Pool takes pointers:
// putting &b would allocate a header each time).
var holders sync.Pool

// Put gives b back for a later Get of its class; slices whose capacity is
// no class's size (not from Get, or below MinPooled) are dropped. The
// caller must not use b afterwards.
func Put(b []byte) {
	c := cap(b)
	if c < MinPooled {
		return
	}
	if k, size := Class(c); size == c {
		bp, _ := holders.Get().(*[]byte)
		if bp == nil {
			bp = new([]byte)
		}
		*bp = b
		pools[k].Put(bp)
	}
}
