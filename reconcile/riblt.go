package reconcile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// The rateless invertible Bloom lookup table of the [IBLT] method (Yang, Gilad,
// Alizadeh, "Practical Rateless Set Reconciliation", SIGCOMM 2024).
//
// A side's set is coded into an unbounded sequence of cells; element x goes into
// cell j with probability 1/(1+j/2) (always into cell 0), by a pseudo-random index
// sequence seeded with the element's hash. An element enters the cells as its
// 64-bit hash, a keyed bijective mix of the block index, so a cell holds just the
// XOR of its elements' hashes and their count: a cell holding one element is
// recognised and decoded by inverting the mix, which yields an index inside the
// universe (a chance of about u/2^64 for any other content). The receiver
// subtracts its own cells from the peer's: what remains codes the symmetric
// difference, +1 for the sender's elements and -1 for its own. Peeling a pure cell
// out of every cell its element maps to makes others pure, until every cell is
// empty (decoded) or none is pure (more cells are needed).

// ErrDecode reports an IBLT that does not decode: no cells left to ask for, or an
// inconsistent result (a checksum collision or a hostile peer). The session never
// answers from a decode that failed.
var ErrDecode = errors.New("reconcile: IBLT decode failed")

// ibltSumBytes is the size of a cell's hash sum on the wire.
const ibltSumBytes = 8

// ibltCell is one coded cell.
type ibltCell struct {
	sum   uint64 // XOR of the elements' hashes
	count int64  // sum of their signs
}

func (c *ibltCell) apply(h uint64, sign int64) {
	c.sum ^= h
	c.count += sign
}

func (c *ibltCell) empty() bool { return c.sum == 0 && c.count == 0 }

// Constants of the mix: SplitMix64's finalizer multipliers and their inverses
// modulo 2^64.
const (
	mixMul1 = 0xbf58476d1ce4e5b9
	mixMul2 = 0x94d049bb133111eb
	mixInv1 = 0x96de1b173f119089
	mixInv2 = 0x319642b2d24d8ec3
	mixAdd  = 0x632be59bd9b4e019
	mixSeed = 0x9e3779b97f4a7c15
)

// ibltHash is the hash of element x under the session's seed: a keyed bijective
// 64-bit mix (SplitMix64's finalizer), inverted by ibltUnhash.
func ibltHash(seed, x uint64) uint64 {
	z := x + seed*mixSeed + mixAdd
	z = (z ^ z>>30) * mixMul1
	z = (z ^ z>>27) * mixMul2
	return z ^ z>>31
}

// ibltUnhash inverts ibltHash.
func ibltUnhash(seed, h uint64) uint64 {
	z := h ^ h>>31 ^ h>>62
	z *= mixInv2
	z ^= z>>27 ^ z>>54
	z *= mixInv1
	z ^= z>>30 ^ z>>60
	return z - seed*mixSeed - mixAdd
}

// ibltNoIndex is past every cell index a session can reach.
const ibltNoIndex = 1 << 62

// ibltMapping generates the cell indices of one element: 0 first, then index j with
// probability 1/(1+j/2).
type ibltMapping struct {
	prng uint64
	next uint64 // the next cell index the element goes into
}

func (m *ibltMapping) advance() {
	r := m.prng * 0xda942042e4dd58b5
	m.prng = r
	// next += ceil((next + 1.5) * ((1-u)^(-1/2) - 1)) with u = r/2^64 uniform.
	step := math.Ceil((float64(m.next) + 1.5) * (4294967296/math.Sqrt(float64(r)+1) - 1))
	if !(step < ibltNoIndex) || m.next+uint64(step) >= ibltNoIndex {
		m.next = ibltNoIndex
		return
	}
	m.next += max(uint64(step), 1)
}

// ibltEncoder makes the cells of one set.
type ibltEncoder struct {
	hashes []uint64
	maps   []ibltMapping
	cells  []ibltCell
}

func newIBLTEncoder(seed uint64, elems []int) *ibltEncoder {
	e := &ibltEncoder{hashes: make([]uint64, len(elems)), maps: make([]ibltMapping, len(elems))}
	for i, x := range elems {
		e.hashes[i] = ibltHash(seed, uint64(x))
		e.maps[i] = ibltMapping{prng: e.hashes[i]}
	}
	return e
}

// clone returns an independent copy; the hashes, never written, are shared.
func (e *ibltEncoder) clone() *ibltEncoder {
	return &ibltEncoder{hashes: e.hashes, maps: slices.Clone(e.maps), cells: slices.Clone(e.cells)}
}

// extend makes the cells up to index n (exclusive).
func (e *ibltEncoder) extend(n int) {
	if n <= len(e.cells) {
		return
	}
	e.cells = slices.Grow(e.cells, n-len(e.cells))[:n]
	for i, h := range e.hashes {
		m := &e.maps[i]
		for m.next < uint64(n) {
			e.cells[m.next].apply(h, 1)
			m.advance()
		}
	}
}

// ibltPeeled is an element the decoder has peeled, and where it goes next.
type ibltPeeled struct {
	x    uint64
	h    uint64
	sign int64
	m    ibltMapping
}

// ibltDecoder peels the difference between the peer's cells and this side's.
type ibltDecoder struct {
	seed     uint64
	universe uint64
	cells    []ibltCell // peer's minus own, with the peeled elements removed
	peeled   []ibltPeeled
	nonEmpty int
	queue    []int
	logq     []float64 // log(1-ρ_j) by cell index, for estimate
	// raw are the counts of the cells as they arrived (peer's minus own, before
	// peeling), rawNonEmpty how many were non-empty: for estimate.
	raw         []int64
	rawNonEmpty int
}

func newIBLTDecoder(seed uint64, universe int) *ibltDecoder {
	return &ibltDecoder{seed: seed, universe: uint64(universe)}
}

func (d *ibltDecoder) pure(c *ibltCell) bool {
	return (c.count == 1 || c.count == -1) && ibltUnhash(d.seed, c.sum) < d.universe
}

// touch applies an element to cell j and keeps the bookkeeping.
func (d *ibltDecoder) touch(j int, h uint64, sign int64) {
	c := &d.cells[j]
	was := c.empty()
	c.apply(h, sign)
	switch now := c.empty(); {
	case was && !now:
		d.nonEmpty++
	case !was && now:
		d.nonEmpty--
	}
	if d.pure(c) {
		d.queue = append(d.queue, j)
	}
}

// add appends the cells theirs[i] - mine[i] as the next indices and peels as far as
// it goes. It fails with ErrDecode if an element is peeled twice (a checksum
// collision or a hostile peer).
func (d *ibltDecoder) add(theirs, mine []ibltCell) error {
	start := len(d.cells)
	n := start + len(theirs)
	for i := range theirs {
		c := theirs[i]
		c.apply(mine[i].sum, -mine[i].count)
		d.cells = append(d.cells, c)
		d.raw = append(d.raw, c.count)
		if !c.empty() {
			d.nonEmpty++
			d.rawNonEmpty++
		}
	}
	for i := range d.peeled { // remove what is already peeled from the new cells
		p := &d.peeled[i]
		for p.m.next < uint64(n) {
			d.touch(int(p.m.next), p.h, -p.sign)
			p.m.advance()
		}
	}
	for j := start; j < n; j++ {
		if d.pure(&d.cells[j]) {
			d.queue = append(d.queue, j)
		}
	}
	return d.peel()
}

func (d *ibltDecoder) peel() error {
	for len(d.queue) > 0 {
		j := d.queue[len(d.queue)-1]
		d.queue = d.queue[:len(d.queue)-1]
		c := d.cells[j]
		if !d.pure(&c) {
			continue
		}
		p := ibltPeeled{x: ibltUnhash(d.seed, c.sum), h: c.sum, sign: c.count, m: ibltMapping{prng: c.sum}}
		for p.m.next < uint64(len(d.cells)) {
			d.touch(int(p.m.next), p.h, -p.sign)
			p.m.advance()
		}
		d.peeled = append(d.peeled, p)
		if len(d.peeled) > len(d.cells) {
			// Every peeled element empties a pure cell: more elements than cells
			// means the same one came out twice.
			return fmt.Errorf("%w: more elements than cells", ErrDecode)
		}
	}
	return nil
}

// done reports whether every cell received is empty: the difference is decoded.
func (d *ibltDecoder) done() bool { return len(d.cells) > 0 && d.nonEmpty == 0 }

// result returns the decoded elements: those only the peer holds (sign +1) and
// those only this side holds (-1), each sorted. It fails with ErrDecode when an
// element appears twice.
func (d *ibltDecoder) result() (theirs, mine []uint32, err error) {
	for _, p := range d.peeled {
		if p.sign > 0 {
			theirs = append(theirs, uint32(p.x))
		} else {
			mine = append(mine, uint32(p.x))
		}
	}
	slices.Sort(theirs)
	slices.Sort(mine)
	for _, l := range [][]uint32{theirs, mine} {
		for i := 1; i < len(l); i++ {
			if l[i] == l[i-1] {
				return nil, nil, fmt.Errorf("%w: element %d decoded twice", ErrDecode, l[i])
			}
		}
	}
	return theirs, mine, nil
}

// estimate estimates the size of the whole difference from the cells as they
// arrived (before peeling, which empties cells selectively). With enough empty
// cells it solves for the e at which the expected number of non-empty cells, sum
// over j of 1-(1-ρ_j)^e with ρ_j = 1/(1+j/2), equals the number observed. With
// few, that says only "many", and the counts speak instead: an element is in cell j
// with probability ρ_j and adds ±1, so with δ the count of cell 0 (which holds
// every element), E[c_j²] = e ρ_j(1-ρ_j) + δ²ρ_j², and e = sum of (c_j² - δ²ρ_j²)
// over sum of ρ_j(1-ρ_j), for j >= 1. The result is at least what is already
// peeled, plus one while a cell is non-empty.
func (d *ibltDecoder) estimate() float64 {
	n := len(d.raw)
	floor := float64(len(d.peeled))
	if d.nonEmpty > 0 {
		floor++
	}
	if n == 0 {
		return floor
	}
	rho := func(j int) float64 { return 1 / (1 + float64(j)/2) }
	var e float64
	if empty := n - d.rawNonEmpty; empty >= 8 {
		for len(d.logq) < n { // log(1-ρ_j), cached; -inf for j = 0
			d.logq = append(d.logq, math.Log1p(-rho(len(d.logq))))
		}
		expect := func(e float64) float64 {
			s := 0.0
			for _, l := range d.logq[:n] {
				s += 1 - math.Exp(e*l)
			}
			return s
		}
		lo, hi := 0.5, 1.0
		for expect(hi) < float64(d.rawNonEmpty) && hi < 1e12 {
			lo, hi = hi, hi*2
		}
		for hi-lo > 0.01*hi { // 1 % is plenty
			mid := (lo + hi) / 2
			if expect(mid) < float64(d.rawNonEmpty) {
				lo = mid
			} else {
				hi = mid
			}
		}
		e = hi
	} else {
		delta := float64(d.raw[0])
		num, den := 0.0, 0.0
		for j := 1; j < n; j++ {
			r, c := rho(j), float64(d.raw[j])
			num += c*c - delta*delta*r*r
			den += r * (1 - r)
		}
		e = math.Abs(delta)
		if den > 0 {
			e = max(e, num/den)
		}
	}
	return max(e, floor)
}

// ibltCellsFor is the number of cells to ask for, in all, to decode a difference
// of about d elements in one more round trip with high probability: the rateless
// code needs about 1.35 d for large d and relatively more for small d.
func ibltCellsFor(d float64) int {
	return int(math.Ceil(1.4*d + 3*math.Sqrt(d) + 4))
}

// ibltMaxCells bounds the cells of one session over a universe of u blocks: the
// difference is at most u elements, and 3u + 64 cells decode it with overwhelming
// probability.
func ibltMaxCells(u int) int { return 3*u + 64 }

// appendIBLTCells encodes cells [start, start+len(cells)): uvarint start, uvarint
// count, then per cell the hash sum (8 bytes, little-endian) and the count (zigzag
// varint): 9 bytes a cell but for the first few, whose counts are larger.
func appendIBLTCells(dst []byte, start int, cells []ibltCell) []byte {
	dst = binary.AppendUvarint(dst, uint64(start))
	dst = binary.AppendUvarint(dst, uint64(len(cells)))
	for _, c := range cells {
		dst = binary.LittleEndian.AppendUint64(dst, c.sum)
		dst = binary.AppendVarint(dst, c.count)
	}
	return dst
}

// decodeIBLTCells parses [appendIBLTCells]. It accepts at most maxCells cells and
// allocates only for cells whose minimum encoding is present; errors wrap
// ErrMessage or ErrLimit.
func decodeIBLTCells(b []byte, maxCells int) (start int, cells []ibltCell, err error) {
	s, k := binary.Uvarint(b)
	if k <= 0 || s > ibltNoIndex {
		return 0, nil, fmt.Errorf("%w: IBLT cells: bad start", ErrMessage)
	}
	b = b[k:]
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, nil, fmt.Errorf("%w: IBLT cells: bad count", ErrMessage)
	}
	b = b[k:]
	per := ibltSumBytes + 1
	switch {
	case n > uint64(maxCells):
		return 0, nil, fmt.Errorf("%w: %d IBLT cells > %d", ErrLimit, n, maxCells)
	case n > uint64(len(b)/per):
		return 0, nil, fmt.Errorf("%w: IBLT cells: %d cells in %d bytes", ErrMessage, n, len(b))
	}
	cells = make([]ibltCell, n)
	for i := range cells {
		if len(b) < ibltSumBytes {
			return 0, nil, fmt.Errorf("%w: IBLT cells: truncated cell %d", ErrMessage, i)
		}
		cells[i].sum = binary.LittleEndian.Uint64(b)
		b = b[ibltSumBytes:]
		c, k := binary.Varint(b)
		if k <= 0 {
			return 0, nil, fmt.Errorf("%w: IBLT cells: bad count in cell %d", ErrMessage, i)
		}
		cells[i].count = c
		b = b[k:]
	}
	if len(b) != 0 {
		return 0, nil, fmt.Errorf("%w: IBLT cells: %d trailing bytes", ErrMessage, len(b))
	}
	return int(s), cells, nil
}
