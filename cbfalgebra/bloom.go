package cbfalgebra

import (
	"fmt"
	"math/bits"
)

// BloomFilter is a plain Bloom filter (one bit per address) over the same
// hash families as CBF; its Params have R = 1. It is the filter of the Byers
// baseline.
type BloomFilter struct {
	p     Params
	n     int
	words []uint64
}

// NewBloom returns an empty Bloom filter of m bits and k hash functions
// (HashFast unless WithHash says otherwise; WithCounterBits is ignored).
func NewBloom(m, k int, opts ...Option) (*BloomFilter, error) {
	p, err := buildParams(m, k, opts)
	if err != nil {
		return nil, err
	}
	return NewBloomFromParams(p)
}

// NewBloomFromParams returns an empty Bloom filter with parameters p; p.R is
// ignored and reported as 1 by Params.
func NewBloomFromParams(p Params) (*BloomFilter, error) {
	p.R = 1
	if err := p.validateHashing(); err != nil {
		return nil, err
	}
	return &BloomFilter{p: p, words: make([]uint64, wordsFor(p.M, 1))}, nil
}

// Params returns the filter's parameters (R = 1).
func (b *BloomFilter) Params() Params { return b.p }

// Len returns the number of Add calls.
func (b *BloomFilter) Len() int { return b.n }

// Add inserts key.
func (b *BloomFilter) Add(key []byte) {
	var buf [MaxK]uint32
	b.AddLocations(b.p.Locations(buf[:0], key))
}

// AddLocations inserts one element given its addresses from
// Params.Locations; addresses >= m are ignored.
func (b *BloomFilter) AddLocations(locs []uint32) {
	for _, i := range locs {
		if int64(i) < int64(b.p.M) {
			b.words[i>>6] |= 1 << (i & 63)
		}
	}
	b.n++
}

// Contains reports whether key may have been added (no false negatives).
func (b *BloomFilter) Contains(key []byte) bool {
	var buf [MaxK]uint32
	return b.ContainsLocations(b.p.Locations(buf[:0], key))
}

// ContainsLocations is Contains with precomputed addresses; addresses >= m
// give false.
func (b *BloomFilter) ContainsLocations(locs []uint32) bool {
	for _, i := range locs {
		if int64(i) >= int64(b.p.M) || b.words[i>>6]&(1<<(i&63)) == 0 {
			return false
		}
	}
	return true
}

// FillRatio returns the share of bits set.
func (b *BloomFilter) FillRatio() float64 {
	s := 0
	for _, w := range b.words {
		s += bits.OnesCount64(w)
	}
	return float64(s) / float64(b.p.M)
}

// Bit reports whether bit i is set (false outside [0, m)).
func (b *BloomFilter) Bit(i int) bool {
	if i < 0 || i >= b.p.M {
		return false
	}
	return b.words[i>>6]&(1<<(uint(i)&63)) != 0
}

// Clone returns an independent copy of b.
func (b *BloomFilter) Clone() *BloomFilter {
	d := *b
	d.words = append([]uint64(nil), b.words...)
	return &d
}

// Reset clears every bit and Len.
func (b *BloomFilter) Reset() {
	clear(b.words)
	b.n = 0
}

// BloomOf returns the Bloom filter of c's support: bit i is set where
// counter i is not zero. It has the same m, k, hash family and seed.
func BloomOf(c *CBF) (*BloomFilter, error) {
	if c == nil || c.l == nil {
		return nil, fmt.Errorf("%w: nil CBF", ErrInvalidParams)
	}
	b, err := NewBloomFromParams(c.p)
	if err != nil {
		return nil, err
	}
	for i := 0; i < c.p.M; i++ {
		if c.get(uint32(i)) != 0 {
			b.words[i>>6] |= 1 << (uint(i) & 63)
		}
	}
	b.n = c.n
	return b, nil
}
