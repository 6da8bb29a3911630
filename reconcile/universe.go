package reconcile

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// BlockKey appends the filter key of block index i to dst: its 4 bytes big-endian
// (the paper's 32-bit integers). Every filter of this package hashes blocks this way.
func BlockKey(dst []byte, i int) []byte { return binary.BigEndian.AppendUint32(dst, uint32(i)) }

// maxLocationTable bounds the addresses a Universe caches per parameter set
// (4 bytes each); larger universes hash on the fly.
const maxLocationTable = 1 << 24

// maxCachedParams bounds the parameter sets a Universe caches, so peers that announce
// ever new parameters cannot grow it without bound.
const maxCachedParams = 8

// maxCachedBytes bounds the memory of the filters (and address tables) a
// Universe or a Filters caches over all parameter sets: peers that announce
// ever new large parameters make it rebuild, not grow. The newest entry is
// kept whatever its size.
const maxCachedBytes = 32 << 20

// filterBytes is the memory of a filter of parameters p.
func filterBytes(p cbfalgebra.Params) int64 { return (int64(p.M)*int64(max(p.R, 1)) + 7) / 8 }

// Universe describes the blocks of one file, [0, Blocks), and caches what depends
// only on the block count and the filter parameters: the k addresses of every block
// and CBF(U). Build it once per file and share it between the sessions of that file;
// it is safe for concurrent use.
type Universe struct {
	blocks int
	mu     sync.Mutex
	cache  map[cbfalgebra.Params]*universeEntry
	bytes  int64 // of the cached entries
	epoch  uint64
}

type universeEntry struct {
	once sync.Once
	locs []uint32        // k addresses per block, nil when too large to cache
	full *cbfalgebra.CBF // CBF(U), nil for Bloom parameters (R = 1)
	err  error
	size int64  // bytes of locs and full
	used uint64 // the epoch of the last use (Trim)
}

// NewUniverse returns the universe of a file of blocks blocks.
func NewUniverse(blocks int) (*Universe, error) {
	if blocks < 0 || blocks > 1<<32 {
		return nil, fmt.Errorf("%w: %d blocks", ErrUniverse, blocks)
	}
	return &Universe{blocks: blocks, cache: map[cbfalgebra.Params]*universeEntry{}}, nil
}

// Trim drops the cached entries not used since the previous call of Trim,
// so that a caller that calls it now and then (every few seconds) keeps only
// what sessions use: what a burst of sessions with unusual parameters made
// the universe build is given back. It returns the bytes dropped.
func (u *Universe) Trim() int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	var dropped int64
	for p, e := range u.cache {
		if e.used < u.epoch {
			dropped += e.size
			u.bytes -= e.size
			delete(u.cache, p)
		}
	}
	u.epoch++
	return dropped
}

// Blocks is the number of blocks of the file.
func (u *Universe) Blocks() int { return u.blocks }

func (u *Universe) entry(p cbfalgebra.Params) *universeEntry {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.cache[p]
	if !ok {
		if len(u.cache) >= maxCachedParams {
			for q, x := range u.cache { // evict one at random
				u.bytes -= x.size
				delete(u.cache, q)
				break
			}
		}
		e = &universeEntry{}
		u.cache[p] = e
	}
	e.used = u.epoch
	e.once.Do(func() {
		e.build(u.blocks, p)
		e.size = 4*int64(len(e.locs)) + filterBytes(p)
		u.bytes += e.size
		for q, x := range u.cache { // over the byte bound: evict others
			if u.bytes <= maxCachedBytes {
				break
			}
			if q != p {
				u.bytes -= x.size
				delete(u.cache, q)
			}
		}
	})
	return e
}

func (e *universeEntry) build(blocks int, p cbfalgebra.Params) {
	check := p
	if check.R == 1 {
		check.R = cbfalgebra.DefaultCounterBits // Bloom parameters: validate the hashing
	}
	if e.err = check.Validate(); e.err != nil {
		return
	}
	if blocks*p.K <= maxLocationTable {
		e.locs = make([]uint32, 0, blocks*p.K)
		var key [4]byte
		for i := range blocks {
			e.locs = p.Locations(e.locs, BlockKey(key[:0], i))
		}
	}
	if p.R == 1 {
		return
	}
	e.full, e.err = cbfalgebra.NewFromParams(p)
	if e.err != nil {
		return
	}
	var scratch []uint32
	for i := range blocks {
		e.full.InsertLocations(e.locate(p, scratch[:0], i))
	}
}

// locate returns the addresses of block i, from the table when there is one.
func (e *universeEntry) locate(p cbfalgebra.Params, scratch []uint32, i int) []uint32 {
	if e.locs != nil {
		return e.locs[i*p.K : (i+1)*p.K : (i+1)*p.K]
	}
	var key [4]byte
	return p.Locations(scratch, BlockKey(key[:0], i))
}

// Filter returns CBF(U) for parameters p, built on first use and cached. The
// result is shared: callers must not modify it.
func (u *Universe) Filter(p cbfalgebra.Params) (*cbfalgebra.CBF, error) {
	if p.R == 1 {
		return nil, fmt.Errorf("%w: CBF(U) needs a counter width, got r=1", cbfalgebra.ErrInvalidParams)
	}
	e := u.entry(p)
	return e.full, e.err
}

// Locations appends the addresses of block i under parameters p to dst (from the
// cache when the universe is small enough to have one).
func (u *Universe) Locations(p cbfalgebra.Params, dst []uint32, i int) ([]uint32, error) {
	if i < 0 || i >= u.blocks {
		return dst, fmt.Errorf("%w: %d outside [0, %d)", ErrIndex, i, u.blocks)
	}
	e := u.entry(p)
	if e.err != nil {
		return dst, e.err
	}
	return append(dst, e.locate(p, nil, i)...), nil
}

// locator gives a session fast access to the addresses of its blocks.
type locator struct {
	p       cbfalgebra.Params
	e       *universeEntry
	scratch []uint32
}

func (u *Universe) locator(p cbfalgebra.Params) (*locator, error) {
	e := u.entry(p)
	if e.err != nil {
		return nil, e.err
	}
	return &locator{p: p, e: e, scratch: make([]uint32, 0, p.K)}, nil
}

func (l *locator) at(i int) []uint32 { return l.e.locate(l.p, l.scratch[:0], i) }
