package reconcile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// The rateless invertible Bloom lookup table of the [IBLT] method (Yang, Gilad,
// Alizadeh, "Practical Rateless Set Reconciliation", SIGCOMM 2024).
//
// A side's set is coded into an unbounded sequence of cells; element x goes into
// cell j with probability 1/(1+j/2) (always into cell 0), by a pseudo-random index
// sequence seeded with the element's checksum. A cell holds the XOR of its
// elements, the XOR of their 64-bit checksums and their count. The receiver
// subtracts its own cells from the peer's: what remains codes the symmetric
// difference, +1 for the sender's elements and -1 for its own. A cell holding one
// element (count ±1 and the checksum of the key matches) is pure; peeling it out of
// every cell it maps to makes others pure, until every cell is empty (decoded) or
// none is pure (more cells are needed).

// ErrDecode reports an IBLT that does not decode: no cells left to ask for, or an
// inconsistent result (a checksum collision or a hostile peer). The session never
// answers from a decode that failed.
var ErrDecode = errors.New("reconcile: IBLT decode failed")

// ibltCheckBytes is the size of a cell's checksum on the wire.
const ibltCheckBytes = 8

// ibltCell is one coded cell.
type ibltCell struct {
	key   uint64 // XOR of the elements
	check uint64 // XOR of their checksums
	count int64  // sum of their signs
}

func (c *ibltCell) apply(x, check uint64, sign int64) {
	c.key ^= x
	c.check ^= check
	c.count += sign
}

func (c *ibltCell) empty() bool { return c.key == 0 && c.check == 0 && c.count == 0 }

// ibltChecksum is the checksum of element x under the session's seed: a bijective
// 64-bit mix (SplitMix64's finalizer), so distinct elements never share one.
func ibltChecksum(seed, x uint64) uint64 {
	z := x + seed*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
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
	seed   uint64
	elems  []uint64
	checks []uint64
	maps   []ibltMapping
	cells  []ibltCell
}

func newIBLTEncoder(seed uint64, elems []int) *ibltEncoder {
	e := &ibltEncoder{seed: seed, elems: make([]uint64, len(elems)),
		checks: make([]uint64, len(elems)), maps: make([]ibltMapping, len(elems))}
	for i, x := range elems {
		e.elems[i] = uint64(x)
		e.checks[i] = ibltChecksum(seed, uint64(x))
		e.maps[i] = ibltMapping{prng: e.checks[i]}
	}
	return e
}

// extend makes the cells up to index n (exclusive).
func (e *ibltEncoder) extend(n int) {
	if n <= len(e.cells) {
		return
	}
	e.cells = slices.Grow(e.cells, n-len(e.cells))[:n]
	for i := range e.elems {
		m := &e.maps[i]
		for m.next < uint64(n) {
			e.cells[m.next].apply(e.elems[i], e.checks[i], 1)
			m.advance()
		}
	}
}

// ibltPeeled is an element the decoder has peeled, and where it goes next.
type ibltPeeled struct {
	x     uint64
	check uint64
	sign  int64
	m     ibltMapping
}

// ibltDecoder peels the difference between the peer's cells and this side's.
type ibltDecoder struct {
	seed     uint64
	universe uint64
	cells    []ibltCell // peer's minus own, with the peeled elements removed
	peeled   []ibltPeeled
	nonEmpty int
	queue    []int
}

func newIBLTDecoder(seed uint64, universe int) *ibltDecoder {
	return &ibltDecoder{seed: seed, universe: uint64(universe)}
}

func (d *ibltDecoder) pure(c *ibltCell) bool {
	return (c.count == 1 || c.count == -1) && c.key < d.universe && ibltChecksum(d.seed, c.key) == c.check
}

// touch applies an element to cell j and keeps the bookkeeping.
func (d *ibltDecoder) touch(j int, x, check uint64, sign int64) {
	c := &d.cells[j]
	was := c.empty()
	c.apply(x, check, sign)
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
		c.apply(mine[i].key, mine[i].check, -mine[i].count)
		d.cells = append(d.cells, c)
		if !c.empty() {
			d.nonEmpty++
		}
	}
	for i := range d.peeled { // remove what is already peeled from the new cells
		p := &d.peeled[i]
		for p.m.next < uint64(n) {
			d.touch(int(p.m.next), p.x, p.check, -p.sign)
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
		p := ibltPeeled{x: c.key, check: c.check, sign: c.count, m: ibltMapping{prng: c.check}}
		for p.m.next < uint64(len(d.cells)) {
			d.touch(int(p.m.next), p.x, p.check, -p.sign)
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

// remaining estimates how many elements the non-empty cells still hold: the e for
// which the expected number of non-empty cells, sum over j of 1-(1-1/(1+j/2))^e,
// equals the number observed. ok is false when every cell is non-empty (then e is
// only known to be large).
func (d *ibltDecoder) remaining() (e float64, ok bool) {
	n := len(d.cells)
	if d.nonEmpty == 0 {
		return 0, true
	}
	if d.nonEmpty >= n {
		return 0, false
	}
	expect := func(e float64) float64 {
		s := 0.0
		for j := range n {
			s += 1 - math.Exp(e*math.Log1p(-1/(1+float64(j)/2+1e-12)))
		}
		return s
	}
	lo, hi := 0.0, 1.0
	for expect(hi) < float64(d.nonEmpty) && hi < 1e12 {
		lo, hi = hi, hi*2
	}
	for range 40 {
		mid := (lo + hi) / 2
		if expect(mid) < float64(d.nonEmpty) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, true
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

// ibltKeyBytes is the width of a cell key on the wire: the bytes that hold every
// block index of the universe (XORs of them fit too).
func ibltKeyBytes(universe int) int {
	return max(1, (bits.Len64(uint64(max(universe-1, 0)))+7)/8)
}

// appendIBLTCells encodes cells [start, start+len(cells)) of a universe: uvarint
// start, uvarint count, then per cell the key (ibltKeyBytes, little-endian), the
// checksum (8 bytes, little-endian) and the count (zigzag varint).
func appendIBLTCells(dst []byte, universe, start int, cells []ibltCell) []byte {
	kb := ibltKeyBytes(universe)
	dst = binary.AppendUvarint(dst, uint64(start))
	dst = binary.AppendUvarint(dst, uint64(len(cells)))
	var b [8]byte
	for _, c := range cells {
		binary.LittleEndian.PutUint64(b[:], c.key)
		dst = append(dst, b[:kb]...)
		dst = binary.LittleEndian.AppendUint64(dst, c.check)
		dst = binary.AppendVarint(dst, c.count)
	}
	return dst
}

// decodeIBLTCells parses [appendIBLTCells]. It accepts at most maxCells cells and
// allocates only for cells whose minimum encoding is present; errors wrap
// ErrMessage or ErrLimit.
func decodeIBLTCells(b []byte, universe, maxCells int) (start int, cells []ibltCell, err error) {
	kb := ibltKeyBytes(universe)
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
	per := kb + ibltCheckBytes + 1
	switch {
	case n > uint64(maxCells):
		return 0, nil, fmt.Errorf("%w: %d IBLT cells > %d", ErrLimit, n, maxCells)
	case n > uint64(len(b)/per):
		return 0, nil, fmt.Errorf("%w: IBLT cells: %d cells in %d bytes", ErrMessage, n, len(b))
	}
	cells = make([]ibltCell, n)
	var key [8]byte
	for i := range cells {
		if len(b) < kb+ibltCheckBytes {
			return 0, nil, fmt.Errorf("%w: IBLT cells: truncated cell %d", ErrMessage, i)
		}
		copy(key[:kb], b[:kb])
		cells[i].key = binary.LittleEndian.Uint64(key[:])
		cells[i].check = binary.LittleEndian.Uint64(b[kb:])
		b = b[kb+ibltCheckBytes:]
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
