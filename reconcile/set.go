package reconcile

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
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

// RandomSplit draws two sets over [0, universe) for experiments: S_A of na blocks
// and S_B of nb blocks sharing shared of them, all at random (one rng.Perm). It needs
// shared <= min(na, nb) and na + nb - shared <= universe.
func RandomSplit(rng *rand.Rand, universe, shared, na, nb int) (sa, sb *Set, err error) {
	if shared < 0 || shared > min(na, nb) || na+nb-shared > universe {
		return nil, nil, fmt.Errorf("%w: sets of %d and %d sharing %d do not fit %d blocks",
			ErrUniverse, na, nb, shared, universe)
	}
	perm := rng.Perm(universe)
	sa, sb = NewSet(universe), NewSet(universe)
	for _, i := range perm[:shared] {
		sa.Add(i)
		sb.Add(i)
	}
	for _, i := range perm[shared:na] {
		sa.Add(i)
	}
	for _, i := range perm[na : na+nb-shared] {
		sb.Add(i)
	}
	return sa, sb, nil
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
