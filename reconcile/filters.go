package reconcile

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// Filters caches one side's own filters of a fixed set of blocks, by parameter set,
// so that a peer answering many sessions with the same blocks builds CBF(S) (or the
// Bloom filter of S, or the first IBLT cells of S) once rather than once per session. Pass it in Config.Filters.
// It is safe for concurrent use; build a new one when the set changes.
type Filters struct {
	u   *Universe
	set *Set
	mu  sync.Mutex
	cbf map[cbfalgebra.Params]*cbfalgebra.CBF
	bf  map[cbfalgebra.Params]*cbfalgebra.BloomFilter
	// bytes is the memory of the cached CBFs and Bloom filters, at most
	// maxCachedBytes beside the newest.
	bytes int64
	iblt  map[uint64]*ibltEncoder // by seed, with the first filtersIBLTCells cells
	idx   []int
	once  sync.Once
}

// filtersIBLTCells is how many IBLT cells a Filters cache makes ahead: enough for
// the first batch and a request or two of most sessions.
const filtersIBLTCells = 256

// NewFilters returns an empty cache for the filters of held (copied) in universe u.
func NewFilters(u *Universe, held *Set) (*Filters, error) {
	if u == nil || held == nil || held.Universe() != u.Blocks() {
		return nil, fmt.Errorf("%w: held set and universe disagree", ErrUniverse)
	}
	return &Filters{
		u: u, set: held.Clone(),
		cbf:  map[cbfalgebra.Params]*cbfalgebra.CBF{},
		bf:   map[cbfalgebra.Params]*cbfalgebra.BloomFilter{},
		iblt: map[uint64]*ibltEncoder{},
	}, nil
}

// matches reports whether the cache is for exactly the set s in universe u.
func (f *Filters) matches(u *Universe, s *Set) bool {
	return f.u == u && f.set.n == s.n && slices.Equal(f.set.words, s.words)
}

// CBF returns CBF(S) for parameters p, built on first use. Callers must not
// modify it.
func (f *Filters) CBF(p cbfalgebra.Params) (*cbfalgebra.CBF, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.cbf[p]; ok {
		return c, nil
	}
	loc, err := f.u.locator(p)
	if err != nil {
		return nil, err
	}
	c, err := buildCBF(f.u, p, loc, f.set, f.indices())
	if err != nil {
		return nil, err
	}
	f.makeRoom(p)
	f.cbf[p] = c
	return c, nil
}

// Bloom returns the Bloom filter of S for parameters p (R = 1), built on first use.
// Callers must not modify it.
func (f *Filters) Bloom(p cbfalgebra.Params) (*cbfalgebra.BloomFilter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.bf[p]; ok {
		return b, nil
	}
	loc, err := f.u.locator(p)
	if err != nil {
		return nil, err
	}
	b, err := cbfalgebra.NewBloomFromParams(p)
	if err != nil {
		return nil, err
	}
	for _, i := range f.indices() {
		b.AddLocations(loc.at(i))
	}
	f.makeRoom(p)
	f.bf[p] = b
	return b, nil
}

// ibltEncoder returns the IBLT cell encoder of S for a seed, with its first cells
// made, built on first use. Sessions work on a clone (it is not modified).
func (f *Filters) ibltEncoder(seed uint64) *ibltEncoder {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.iblt[seed]; ok {
		return e
	}
	e := newIBLTEncoder(seed, f.indices())
	e.extend(min(filtersIBLTCells, ibltMaxCells(f.u.Blocks())))
	if len(f.iblt) >= maxCachedParams {
		clear(f.iblt)
	}
	f.iblt[seed] = e
	return e
}

// makeRoom clears the filter caches when one more filter of parameters p
// would make them hold more than maxCachedParams filters of a kind or
// maxCachedBytes in all, and counts p's filter in.
func (f *Filters) makeRoom(p cbfalgebra.Params) {
	n := filterBytes(p)
	if len(f.cbf) >= maxCachedParams || len(f.bf) >= maxCachedParams || f.bytes+n > maxCachedBytes {
		clear(f.cbf)
		clear(f.bf)
		f.bytes = 0
	}
	f.bytes += n
}

func (f *Filters) indices() []int {
	f.once.Do(func() { f.idx = f.set.Indices() })
	return f.idx
}

// buildCBF returns CBF(S) of the blocks of set, whose indices are idx. When the set
// holds more than half the universe it inserts the fewer blocks of U \ S and takes
// the complement CBF(U) - CBF(U \ S), which is exactly CBF(S) (T2) as long as no
// counter of CBF(U) is saturated, and otherwise an upper bound that keeps every
// result free of false negatives (cbfalgebra's saturation rules).
func buildCBF(u *Universe, p cbfalgebra.Params, loc *locator, set *Set, idx []int) (*cbfalgebra.CBF, error) {
	c, err := cbfalgebra.NewFromParams(p)
	if err != nil {
		return nil, err
	}
	if missing := u.Blocks() - set.Len(); missing < set.Len() {
		full, err := u.Filter(p)
		if err != nil {
			return nil, err
		}
		for w, word := range set.words {
			word = ^word
			if rest := u.Blocks() - w*64; rest < 64 {
				word &= 1<<uint(rest) - 1
			}
			for word != 0 {
				c.InsertLocations(loc.at(w*64 + bits.TrailingZeros64(word)))
				word &= word - 1
			}
		}
		if err := cbfalgebra.ComplementInto(c, full, c); err != nil {
			return nil, err
		}
		return c, nil
	}
	for _, i := range idx {
		c.InsertLocations(loc.at(i))
	}
	return c, nil
}
