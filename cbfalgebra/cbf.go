package cbfalgebra

import (
	"fmt"
	"math"
	"math/bits"
)

// CBF is a counting Bloom filter: m counters of r bits packed into 64-bit
// words, and k hash functions. The zero value is not usable; build one with
// New, NewForEstimate, NewFromParams, an algebra operation or a decoder.
// A CBF is not safe for concurrent mutation; concurrent reads are fine.
type CBF struct {
	p     Params
	n     int
	words []uint64
	l     *lanes
}

// New returns an empty CBF of m counters and k hash functions, with 4-bit
// counters and HashFast unless options say otherwise.
func New(m, k int, opts ...Option) (*CBF, error) {
	p, err := buildParams(m, k, opts)
	if err != nil {
		return nil, err
	}
	return NewFromParams(p)
}

// NewForEstimate returns an empty CBF sized for n elements at false-positive
// rate fp: m is the smallest power of two with m >= -n ln(fp)/(ln 2)^2 (so
// it also suits HashSHA1) and k = round(ln2 * m/n).
func NewForEstimate(n int, fp float64, opts ...Option) (*CBF, error) {
	m, k, err := EstimateParams(n, fp)
	if err != nil {
		return nil, err
	}
	return New(m, k, opts...)
}

// NewFromParams returns an empty CBF with parameters p.
func NewFromParams(p Params) (*CBF, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &CBF{p: p, words: make([]uint64, wordsFor(p.M, p.R)), l: lanesFor(p.R)}, nil
}

// Params returns the filter's parameters.
func (c *CBF) Params() Params { return c.p }

// Len returns the number of elements: inserted minus deleted for a filter
// built element by element, round(sum of counters / k) for a result of the
// algebra.
func (c *CBF) Len() int { return c.n }

// MaxCounter returns the saturated counter value 2^r - 1.
func (c *CBF) MaxCounter() int { return int(c.l.max) }

// Counter returns the value of counter i, or 0 when i is outside [0, m).
func (c *CBF) Counter(i int) int {
	if i < 0 || i >= c.p.M {
		return 0
	}
	return int(c.get(uint32(i)))
}

func (c *CBF) get(i uint32) uint64 {
	off := (uint(i) & uint(c.l.idxMask)) * c.l.r
	return (c.words[i>>c.l.shift] >> off) & c.l.max
}

// Insert adds key: each of its k counters is incremented (twice when two
// addresses coincide); a saturated counter stays saturated.
func (c *CBF) Insert(key []byte) {
	var buf [MaxK]uint32
	c.InsertLocations(c.p.Locations(buf[:0], key))
}

// InsertLocations adds one element given its addresses, as returned by
// Params.Locations for this filter's parameters. Addresses >= m are ignored.
func (c *CBF) InsertLocations(locs []uint32) {
	l := c.l
	for _, i := range locs {
		if int64(i) >= int64(c.p.M) {
			continue
		}
		w := &c.words[i>>l.shift]
		off := (uint(i) & uint(l.idxMask)) * l.r
		if (*w>>off)&l.max != l.max {
			*w += 1 << off
		}
	}
	c.n++
}

// Delete removes key. When one of its counters shows that key is absent (an
// unsaturated counter below the number of key's addresses that hit it), Delete
// returns ErrNotMember and changes nothing. Saturated counters stay saturated.
func (c *CBF) Delete(key []byte) error {
	var buf [MaxK]uint32
	return c.DeleteLocations(c.p.Locations(buf[:0], key))
}

// DeleteLocations is Delete with precomputed addresses.
func (c *CBF) DeleteLocations(locs []uint32) error {
	l := c.l
	for j, i := range locs {
		if int64(i) >= int64(c.p.M) {
			return fmt.Errorf("%w: address %d out of range m=%d", ErrNotMember, i, c.p.M)
		}
		v := c.get(i)
		if v == l.max {
			continue
		}
		need := uint64(1)
		for _, o := range locs[:j] {
			if o == i {
				need++
			}
		}
		if v < need {
			return ErrNotMember
		}
	}
	for _, i := range locs {
		w := &c.words[i>>l.shift]
		off := (uint(i) & uint(l.idxMask)) * l.r
		if (*w>>off)&l.max != l.max {
			*w -= 1 << off
		}
	}
	if c.n > 0 {
		c.n--
	}
	return nil
}

// Contains reports whether key may be in the set: every one of its counters
// is at least 1. There are no false negatives.
func (c *CBF) Contains(key []byte) bool {
	var buf [MaxK]uint32
	return c.ContainsLocations(c.p.Locations(buf[:0], key))
}

// ContainsLocations is Contains with precomputed addresses; it stops at the
// first zero counter. Addresses >= m give false.
func (c *CBF) ContainsLocations(locs []uint32) bool {
	l := c.l
	for _, i := range locs {
		if int64(i) >= int64(c.p.M) {
			return false
		}
		if (c.words[i>>l.shift]>>((uint(i)&uint(l.idxMask))*l.r))&l.max == 0 {
			return false
		}
	}
	return true
}

// Probe is Contains that also returns the number of counters read before
// the answer was known (it stops at the first zero counter).
func (c *CBF) Probe(key []byte) (member bool, probes int) {
	var buf [MaxK]uint32
	return c.ProbeLocations(c.p.Locations(buf[:0], key))
}

// ProbeLocations is ContainsLocations that also returns the number of
// counters read before the answer was known (for probe-count experiments).
func (c *CBF) ProbeLocations(locs []uint32) (member bool, probes int) {
	for j, i := range locs {
		if int64(i) >= int64(c.p.M) || c.get(i) == 0 {
			return false, j + 1
		}
	}
	return true, len(locs)
}

// Count returns the minimum of key's counters, an upper bound of the number
// of times key is in the multiset (2^r-1 when that counter is saturated).
func (c *CBF) Count(key []byte) int {
	var buf [MaxK]uint32
	return c.CountLocations(c.p.Locations(buf[:0], key))
}

// CountLocations is Count with precomputed addresses.
func (c *CBF) CountLocations(locs []uint32) int {
	m := c.l.max
	for _, i := range locs {
		if int64(i) >= int64(c.p.M) {
			return 0
		}
		m = min(m, c.get(i))
	}
	return int(m)
}

// FillRatio returns the share of counters that are not zero.
func (c *CBF) FillRatio() float64 {
	nz := 0
	for _, w := range c.words {
		nz += bits.OnesCount64(c.l.nonzero(w))
	}
	return float64(nz) / float64(c.p.M)
}

// Saturated returns the number of saturated counters (at 2^r - 1).
func (c *CBF) Saturated() int {
	s := 0
	for _, w := range c.words {
		s += bits.OnesCount64(c.l.isMax(w))
	}
	return s
}

// Sum returns the sum of all counters (saturated ones counted as 2^r-1).
func (c *CBF) Sum() uint64 {
	var s uint64
	for _, w := range c.words {
		s += c.l.sum(w)
	}
	return s
}

// Clone returns an independent copy of c.
func (c *CBF) Clone() *CBF {
	d := *c
	d.words = append([]uint64(nil), c.words...)
	return &d
}

// Reset sets every counter and Len to zero.
func (c *CBF) Reset() {
	clear(c.words)
	c.n = 0
}

// setLenFromSum sets n to round(sum/k) after an algebra operation.
func (c *CBF) setLenFromSum(sum uint64) {
	k := uint64(c.p.K)
	n := (sum + k/2) / k
	if n > math.MaxInt {
		n = math.MaxInt
	}
	c.n = int(n)
}
