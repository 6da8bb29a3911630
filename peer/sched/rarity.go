package sched

import (
	"sync"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// NeighbourTally sums the counting Bloom filters this peer's watchers sent
// it (the CBF of their held blocks, in the reconciliation that started each
// watch), kept up to date with the blocks their have frames announce: by the
// algebra's T8, the sum of CBF(S_1), ..., CBF(S_n) is the CBF of their
// multiset union, so the minimum of a block's counters is never below the
// number of watchers that hold it, and equals it unless its counters are
// shared with other blocks. A fetch with BlockRarestFilters orders its
// requests by it: rarity from the filters alone, where BlockRarest counts
// its sources' offers exactly.
//
// Filters are summed per parameter set (a peer sizes its filter for its own
// set, so neighbours' filters need not be homologous); a block's count is
// the sum of its counts in each group, still never below the number of
// watchers holding it. Safe for concurrent use.
type NeighbourTally[K comparable] struct {
	U *reconcile.Universe

	mu      sync.Mutex
	groups  map[cbfalgebra.Params]*cbfalgebra.Tally
	filters map[K]*cbfalgebra.CBF
	bytes   int // encoded size of the filters kept
	locs    []uint32
}

// Bounds of what a tally holds, whatever its watchers send: beyond them a
// filter is left out (the estimate then counts fewer neighbours, and a
// fetch choosing by it falls back towards random order among them).
const (
	// maxTallied bounds the watchers whose filters are summed.
	maxTallied = 1024
	// maxTallyBytes bounds the encoded bytes of the filters kept.
	maxTallyBytes = 32 << 20
	// maxTallyGroups bounds the parameter sets summed apart, and
	// maxTallyCounters the counters of each (4 bytes each in the sum).
	maxTallyGroups   = 8
	maxTallyCounters = 1 << 20
)

// NewNeighbourTally returns an empty tally of the blocks of universe u.
func NewNeighbourTally[K comparable](u *reconcile.Universe) *NeighbourTally[K] {
	return &NeighbourTally[K]{U: u, groups: make(map[cbfalgebra.Params]*cbfalgebra.Tally), filters: make(map[K]*cbfalgebra.CBF)}
}

// Set makes c (which the tally keeps and changes) the filter of watcher id,
// in place of its earlier one.
func (t *NeighbourTally[K]) Set(id K, c *cbfalgebra.CBF) {
	if c == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropLocked(id)
	size := c.EncodedSize()
	if len(t.filters) >= maxTallied || t.bytes+size > maxTallyBytes || c.Params().M > maxTallyCounters {
		return
	}
	g := t.groups[c.Params()]
	if g == nil {
		if len(t.groups) >= maxTallyGroups {
			return
		}
		var err error
		if g, err = cbfalgebra.NewTally(c.Params()); err != nil {
			return
		}
		t.groups[c.Params()] = g
	}
	if g.Add(c) == nil {
		t.filters[id] = c
		t.bytes += size
	}
}

// Have inserts the blocks idx, which watcher id announced, into its filter
// and the sum.
func (t *NeighbourTally[K]) Have(id K, idx []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.filters[id]
	if c == nil {
		return
	}
	g := t.groups[c.Params()]
	for _, i := range idx {
		locs, err := t.U.Locations(c.Params(), t.locs[:0], i)
		if err != nil {
			continue
		}
		t.locs = locs
		if c.ContainsLocations(locs) {
			// Held already, or a false positive: either way every counter
			// of the block is at least 1 in the watcher's filter, so the
			// sum still counts the watcher.
			continue
		}
		c.InsertLocations(locs)
		g.InsertLocations(locs)
	}
}

// Drop takes watcher id's filter c out of the sum, unless a later watch of
// id set another.
func (t *NeighbourTally[K]) Drop(id K, c *cbfalgebra.CBF) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.filters[id] == c {
		t.dropLocked(id)
	}
}

func (t *NeighbourTally[K]) dropLocked(id K) {
	c := t.filters[id]
	if c == nil {
		return
	}
	delete(t.filters, id)
	t.bytes -= c.EncodedSize()
	g := t.groups[c.Params()]
	if g == nil {
		return
	}
	_ = g.Remove(c)
	if g.Filters() == 0 {
		delete(t.groups, c.Params())
	}
}

// Count estimates how many watchers hold block i: never fewer than do.
func (t *NeighbourTally[K]) Count(i int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for p, g := range t.groups {
		locs, err := t.U.Locations(p, t.locs[:0], i)
		if err != nil {
			continue
		}
		t.locs = locs
		n += g.CountLocations(locs)
	}
	return n
}

// Holders counts the watchers whose filter holds block i, up to most:
// never fewer than hold it, more by the false positives of each filter
// alone. Unlike count, a block no watcher holds is not counted up by the
// load of the others' blocks in the sum (with two dozen watchers holding
// half of the content each, the sum's counters hold about eight each), so
// it answers "do several neighbours hold it?" where count ranks blocks by
// rarity.
func (t *NeighbourTally[K]) Holders(i, most int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	var at cbfalgebra.Params // the parameters of t.locs, valid when ok
	ok := false
	for _, c := range t.filters {
		if !ok || c.Params() != at {
			locs, err := t.U.Locations(c.Params(), t.locs[:0], i)
			if ok = err == nil; !ok {
				continue
			}
			t.locs, at = locs, c.Params()
		}
		if c.ContainsLocations(t.locs) {
			if n++; n >= most {
				break
			}
		}
	}
	return n
}

// Watchers is the number of watchers whose filters are summed.
func (t *NeighbourTally[K]) Watchers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.filters)
}
