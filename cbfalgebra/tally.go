package cbfalgebra

import (
	"fmt"
	"math"
)

// Tally is the counter-by-counter sum of homologous CBFs, in 32-bit
// counters that do not saturate. The sum of CBF(S_1), ..., CBF(S_n) is the
// CBF of the multiset union of the S_i; for disjoint sets, of their union
// (T8: CBF(S1) ∪ CBF(S2) = CBF(S1) + CBF(S2)). Count, the minimum of an
// element's counters, is then never below the number of added filters whose
// sets hold it (every such filter adds at least 1 to each of its counters,
// even a saturated one), and equals it unless its counters are shared with
// other elements: summing the filters of a peer's neighbours estimates, per
// block, how many neighbours hold it, the rarity that rarest-first block
// choice needs, from the filters alone.
//
// A Tally is not safe for concurrent mutation; concurrent reads are fine.
type Tally struct {
	p Params
	c []uint32
	n int
}

// MaxTallied is the most filters a Tally sums: with counters of at most 16
// bits, no 32-bit sum of them overflows.
const MaxTallied = 1 << 16

// NewTally returns an empty tally of filters with parameters p.
func NewTally(p Params) (*Tally, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Tally{p: p, c: make([]uint32, p.M)}, nil
}

// Params returns the parameters of the filters tallied.
func (t *Tally) Params() Params { return t.p }

// Filters returns the number of filters added and not removed.
func (t *Tally) Filters() int { return t.n }

// Add adds the counters of c, which must be homologous.
func (t *Tally) Add(c *CBF) error {
	if err := t.check(c); err != nil {
		return err
	}
	if t.n >= MaxTallied {
		return fmt.Errorf("%w: a tally sums at most %d filters", ErrInvalidParams, MaxTallied)
	}
	t.apply(c, false)
	t.n++
	return nil
}

// Remove subtracts the counters of c, a filter added before with the same
// counters (for example a neighbour's previous filter, before its new one is
// added). When a counter of c exceeds the tally's, c was not added: Remove
// returns an error wrapping ErrNotMember and changes nothing.
func (t *Tally) Remove(c *CBF) error {
	if err := t.check(c); err != nil {
		return err
	}
	if bad := t.apply(c, true); bad >= 0 {
		return fmt.Errorf("%w: the filter's counter %d exceeds the tally's", ErrNotMember, bad)
	}
	t.n--
	return nil
}

// InsertLocations adds one element, given its addresses, to the filters
// tallied: the tally of CBF(S_1), ..., CBF(S_j ∪ {x}), ... for x not in
// S_j, without the filter itself (T8 with the singleton {x}). Addresses >= m
// are ignored.
func (t *Tally) InsertLocations(locs []uint32) {
	for _, i := range locs {
		if int64(i) < int64(len(t.c)) && t.c[i] < math.MaxUint32 {
			t.c[i]++
		}
	}
}

// Count returns the minimum of key's counters: at least the number of
// tallied filters whose sets hold key.
func (t *Tally) Count(key []byte) int {
	var buf [MaxK]uint32
	return t.CountLocations(t.p.Locations(buf[:0], key))
}

// CountLocations is Count with precomputed addresses; an address >= m gives 0.
func (t *Tally) CountLocations(locs []uint32) int {
	m := uint32(math.MaxUint32)
	for _, i := range locs {
		if int64(i) >= int64(len(t.c)) {
			return 0
		}
		m = min(m, t.c[i])
	}
	if len(locs) == 0 {
		return 0
	}
	return int(m)
}

// Reset empties the tally.
func (t *Tally) Reset() {
	clear(t.c)
	t.n = 0
}

// apply adds (sub false) or subtracts (sub true) the counters of c, a word
// at a time; subtracting, it first checks that no counter goes below zero
// and returns the first that would, or -1.
func (t *Tally) apply(c *CBF, sub bool) int {
	l := c.l
	per := 1 << l.shift
	if sub {
		for w, word := range c.words {
			cs := t.c[w*per : min(len(t.c), (w+1)*per)]
			for j := range cs {
				if cs[j] < uint32(word&l.max) {
					return w*per + j
				}
				word >>= l.r
			}
		}
	}
	for w, word := range c.words {
		cs := t.c[w*per : min(len(t.c), (w+1)*per)]
		if word == 0 {
			continue
		}
		for j := range cs {
			if sub {
				cs[j] -= uint32(word & l.max)
			} else {
				cs[j] += uint32(word & l.max)
			}
			word >>= l.r
		}
	}
	return -1
}

func (t *Tally) check(c *CBF) error {
	if c == nil || c.l == nil {
		return fmt.Errorf("%w: nil or zero CBF", ErrInvalidParams)
	}
	if !t.p.Homologous(c.p) {
		return fmt.Errorf("%w: %v and %v", ErrNotHomologous, t.p, c.p)
	}
	return nil
}
