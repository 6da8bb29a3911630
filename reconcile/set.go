package reconcile

import (
	"fmt"
	"math/bits"
)

// Set is a set of block indices in [0, universe), kept as a bitmap. The zero value is
// an empty set over an empty universe; use [NewSet]. A Set is not safe for concurrent
// mutation.
type Set struct {
	words []uint64
	n     int
	u     int
}

// NewSet returns an empty set over [0, universe).
func NewSet(universe int) *Set {
	universe = max(universe, 0)
	return &Set{words: make([]uint64, (universe+63)/64), u: universe}
}

// SetOf returns the set over [0, universe) holding the given indices; it fails on an
// index outside the universe.
func SetOf(universe int, indices ...int) (*Set, error) {
	s := NewSet(universe)
	for _, i := range indices {
		if i < 0 || i >= s.u {
			return nil, fmt.Errorf("%w: index %d outside [0, %d)", ErrIndex, i, s.u)
		}
		s.Add(i)
	}
	return s, nil
}

// Universe is the size of the universe the set lives in.
func (s *Set) Universe() int { return s.u }

// Len is the number of indices in the set.
func (s *Set) Len() int { return s.n }

// Has reports whether i is in the set (false outside the universe).
func (s *Set) Has(i int) bool {
	if i < 0 || i >= s.u {
		return false
	}
	return s.words[i>>6]&(1<<(uint(i)&63)) != 0
}

// Add inserts i and reports whether it was new. It panics if i is outside the
// universe, like an out-of-range slice index: callers validate untrusted indices first.
func (s *Set) Add(i int) bool {
	if i < 0 || i >= s.u {
		panic(fmt.Sprintf("reconcile: Set.Add(%d) outside [0, %d)", i, s.u))
	}
	w, b := i>>6, uint64(1)<<(uint(i)&63)
	if s.words[w]&b != 0 {
		return false
	}
	s.words[w] |= b
	s.n++
	return true
}

// Clone returns an independent copy.
func (s *Set) Clone() *Set {
	return &Set{words: append([]uint64(nil), s.words...), n: s.n, u: s.u}
}

// AppendIndices appends the indices of the set in increasing order to dst.
func (s *Set) AppendIndices(dst []int) []int {
	for w, word := range s.words {
		for word != 0 {
			dst = append(dst, w*64+bits.TrailingZeros64(word))
			word &= word - 1
		}
	}
	return dst
}

// Indices returns the indices of the set in increasing order.
func (s *Set) Indices() []int { return s.AppendIndices(make([]int, 0, s.n)) }

// Difference returns |s \ t| (t may have another universe).
func (s *Set) Difference(t *Set) int {
	d := 0
	for w, word := range s.words {
		if w < len(t.words) {
			word &^= t.words[w]
		}
		d += bits.OnesCount64(word)
	}
	return d
}
