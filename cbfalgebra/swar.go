package cbfalgebra

import "math/bits"

// lanes describes how r-bit counters are packed into 64-bit words and holds
// the masks of the SWAR (SIMD within a register) arithmetic.
type lanes struct {
	r        uint   // bits per counter
	shift    uint   // log2(counters per word)
	idxMask  int    // counters per word - 1
	max      uint64 // 2^r - 1
	hi       uint64 // top bit of every lane
	even     uint64 // every other lane, all ones
	sumMul   uint64 // multiplier that adds the halves of a pair-summed word
	sumShift uint   // shift that extracts that sum
}

var (
	lanes4  = newLanes(4)
	lanes8  = newLanes(8)
	lanes16 = newLanes(16)
)

func newLanes(r uint) lanes {
	l := lanes{r: r, max: 1<<r - 1}
	l.shift = uint(bits.TrailingZeros(64 / r))
	l.idxMask = int(64/r) - 1
	for i := uint(0); i < 64; i += r {
		l.hi |= 1 << (i + r - 1)
		if (i/r)%2 == 0 {
			l.even |= l.max << i
		}
	}
	for i := uint(0); i < 64; i += 2 * r {
		l.sumMul |= 1 << i
	}
	l.sumShift = 64 - 2*r
	return l
}

func lanesFor(r int) *lanes {
	switch r {
	case 8:
		return &lanes8
	case 16:
		return &lanes16
	}
	return &lanes4
}

// words returns the number of 64-bit words holding m counters of r bits.
func wordsFor(m, r int) int { return int((int64(m)*int64(r) + 63) / 64) }

// fill turns a mask of lane top bits into a mask of whole lanes.
func (l *lanes) fill(h uint64) uint64 { return (h >> (l.r - 1)) * l.max }

// nonzero returns the top bit of every lane of x that is not zero.
func (l *lanes) nonzero(x uint64) uint64 {
	return (((x &^ l.hi) + ^l.hi) | x) & l.hi
}

// isMax returns the top bit of every lane of x that is saturated (2^r-1).
func (l *lanes) isMax(x uint64) uint64 { return ^l.nonzero(^x) & l.hi }

// less returns the top bit of every lane where a < b.
func (l *lanes) less(a, b uint64) uint64 {
	d := ((a | l.hi) - (b &^ l.hi)) ^ ((a ^ ^b) & l.hi)
	return ((^a & b) | (^(a ^ b) & d)) & l.hi
}

// subSat returns a - b per lane, clamped at 0.
func (l *lanes) subSat(a, b uint64) uint64 {
	d := ((a | l.hi) - (b &^ l.hi)) ^ ((a ^ ^b) & l.hi)
	borrow := ((^a & b) | (^(a ^ b) & d)) & l.hi
	return d &^ l.fill(borrow)
}

// addSat returns a + b per lane, saturating at 2^r-1.
func (l *lanes) addSat(a, b uint64) uint64 {
	s := ((a &^ l.hi) + (b &^ l.hi)) ^ ((a ^ b) & l.hi)
	carry := ((a & b) | ((a ^ b) &^ s)) & l.hi
	return s | l.fill(carry)
}

// minw returns min(a, b) per lane.
func (l *lanes) minw(a, b uint64) uint64 {
	f := l.fill(l.less(a, b))
	return (a & f) | (b &^ f)
}

// diff returns the "u - b" term of the algebra with the saturation rules:
// saturated if u is, u if b is saturated, else u - b clamped at 0.
func (l *lanes) diff(u, b uint64) uint64 {
	fb := l.fill(l.isMax(b))
	return (l.subSat(u, b) &^ fb) | (u & fb) | l.fill(l.isMax(u))
}

// sum returns the sum of the lanes of x.
func (l *lanes) sum(x uint64) uint64 {
	t := (x & l.even) + ((x >> l.r) & l.even)
	return (t * l.sumMul) >> l.sumShift
}

// The word loops below return the sum of the result's counters.

func complementWords(dst, u, s []uint64, l *lanes) (sum uint64) {
	u, s = u[:len(dst)], s[:len(dst)]
	for i := range dst {
		x := l.diff(u[i], s[i])
		dst[i] = x
		sum += l.sum(x)
	}
	return sum
}

func intersectWords(dst, a, b []uint64, l *lanes) (sum uint64) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		x := l.minw(a[i], b[i])
		dst[i] = x
		sum += l.sum(x)
	}
	return sum
}

func subtractWords(dst, a, b, u []uint64, l *lanes) (sum uint64) {
	a, b, u = a[:len(dst)], b[:len(dst)], u[:len(dst)]
	for i := range dst {
		x := l.minw(a[i], l.diff(u[i], b[i]))
		dst[i] = x
		sum += l.sum(x)
	}
	return sum
}

func unionWords(dst, a, b, u []uint64, l *lanes) (sum uint64) {
	a, b, u = a[:len(dst)], b[:len(dst)], u[:len(dst)]
	for i := range dst {
		x := l.addSat(a[i], l.minw(b[i], l.diff(u[i], a[i])))
		dst[i] = x
		sum += l.sum(x)
	}
	return sum
}

func xorWords(dst, a, b, u []uint64, l *lanes) (sum uint64) {
	a, b, u = a[:len(dst)], b[:len(dst)], u[:len(dst)]
	for i := range dst {
		ai, bi, ui := a[i], b[i], u[i]
		x := l.addSat(l.minw(ai, l.diff(ui, bi)), l.minw(bi, l.diff(ui, ai)))
		dst[i] = x
		sum += l.sum(x)
	}
	return sum
}
