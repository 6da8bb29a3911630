package heldlog

import "math/bits"

// Bitset is a set of block indices, 64 to a word.
type Bitset []uint64

// NewBitset returns an empty set of indices below n.
func NewBitset(n int) Bitset { return make(Bitset, (n+63)/64) }

// Has reports whether i is a member.
func (b Bitset) Has(i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }

// Set adds i.
func (b Bitset) Set(i int) { b[i>>6] |= 1 << (i & 63) }

// Clear removes i.
func (b Bitset) Clear(i int) { b[i>>6] &^= 1 << (i & 63) }

// SetAll makes every index below n a member.
func (b Bitset) SetAll(n int) {
	for i := range b {
		b[i] = ^uint64(0)
	}
	if r := n & 63; r != 0 {
		b[len(b)-1] = 1<<r - 1
	}
}

// Count returns the number of members.
func (b Bitset) Count() int {
	c := 0
	for _, w := range b {
		c += bits.OnesCount64(w)
	}
	return c
}
