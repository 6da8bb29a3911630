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

// The methods below are the lane arithmetic with l's masks; the word loops
// use the free-function forms further down directly.

// fill turns a mask of lane top bits into a mask of whole lanes.
func (l *lanes) fill(h uint64) uint64 { return fillW(h, l.r-1) }

// nonzero returns the top bit of every lane of x that is not zero.
func (l *lanes) nonzero(x uint64) uint64 {
	return (((x &^ l.hi) + ^l.hi) | x) & l.hi
}

// isMax returns the top bit of every lane of x that is saturated (2^r-1).
func (l *lanes) isMax(x uint64) uint64 { return isMaxW(x, l.hi) }

// less returns the top bit of every lane where a < b.
func (l *lanes) less(a, b uint64) uint64 { return lessW(a, b, l.hi) }

// subSat returns a - b per lane, clamped at 0.
func (l *lanes) subSat(a, b uint64) uint64 { return subSatW(a, b, l.hi, l.r-1) }

// addSat returns a + b per lane, saturating at 2^r-1.
func (l *lanes) addSat(a, b uint64) uint64 { return addSatW(a, b, l.hi, l.r-1) }

// minw returns min(a, b) per lane.
func (l *lanes) minw(a, b uint64) uint64 { return minW(a, b, l.hi, l.r-1) }

// sum returns the sum of the lanes of x.
func (l *lanes) sum(x uint64) uint64 { return sumW(x, l.even, l.sumMul, l.r, l.sumShift) }

// Free-function forms of the lane arithmetic for the word loops: the masks
// come in as arguments so that, once inlined, they live in registers (a
// method on *lanes would reload them after every store to dst, which may
// alias). hi is the lanes' top-bit mask and r1 = r-1.

func fillW(h uint64, r1 uint) uint64 { return (h - h>>(r1&63)) | h }

func isMaxW(x, hi uint64) uint64 {
	z := ^x
	return ^(((z &^ hi) + ^hi) | z) & hi
}

func lessW(a, b, hi uint64) uint64 {
	d := ((a | hi) - (b &^ hi)) ^ ((a ^ ^b) & hi)
	return ((^a & b) | (^(a ^ b) & d)) & hi
}

func minW(a, b, hi uint64, r1 uint) uint64 {
	f := fillW(lessW(a, b, hi), r1)
	return (a & f) | (b &^ f)
}

func subSatW(a, b, hi uint64, r1 uint) uint64 {
	d := ((a | hi) - (b &^ hi)) ^ ((a ^ ^b) & hi)
	return d &^ fillW(((^a&b)|(^(a^b)&d))&hi, r1)
}

func addSatW(a, b, hi uint64, r1 uint) uint64 {
	s := ((a &^ hi) + (b &^ hi)) ^ ((a ^ b) & hi)
	return s | fillW(((a&b)|((a^b)&^s))&hi, r1)
}

// anySatW reports (as a non-zero result) whether any lane of a, b or u is
// saturated: the classic exact "has a zero lane" test applied to ^x.
func anySatW(a, b, u, lo, hi uint64) uint64 {
	return (((^a - lo) & a) | ((^b - lo) & b) | ((^u - lo) & u)) & hi
}

func sumW(x, even, mul uint64, r, shift uint) uint64 {
	return (((x & even) + ((x >> (r & 63)) & even)) * mul) >> (shift & 63)
}

// The word loops below return the sum of the result's counters. In each,
// fX is the whole-lane mask of X's saturated counters and the "u - x" term
// of the algebra is (subSat(u, x) &^ fx) | (u & fx) | fu: saturated if u is,
// u if x is saturated, else u - x clamped at 0.
// Words without a saturated lane (nearly all of them) take a fast path where
// u - x is a plain saturating subtraction and the sums of Union and Xor need
// no saturation: a + min(b, u - a) <= max(a, u) < 2^r-1, and
// min(a, u - b) + min(b, u - a) <= u < 2^r-1.

func complementWords(dst, u, s []uint64, l *lanes) (sum uint64) {
	if l.r == 4 {
		return complementWords4(dst, u, s)
	}
	u, s = u[:len(dst)], s[:len(dst)]
	hi, r1, even, mul, r, sh := l.hi, l.r-1, l.even, l.sumMul, l.r, l.sumShift
	lo := hi >> r1
	for i := range dst {
		ui, si := u[i], s[i]
		if anySatW(ui, si, 0, lo, hi) == 0 {
			x := subSatW(ui, si, hi, r1)
			dst[i] = x
			sum += sumW(x, even, mul, r, sh)
			continue
		}
		fs, fu := fillW(isMaxW(si, hi), r1), fillW(isMaxW(ui, hi), r1)
		x := (subSatW(ui, si, hi, r1) &^ fs) | (ui & fs) | fu
		dst[i] = x
		sum += sumW(x, even, mul, r, sh)
	}
	return sum
}

func intersectWords(dst, a, b []uint64, l *lanes) (sum uint64) {
	if l.r == 4 {
		return intersectWords4(dst, a, b)
	}
	a, b = a[:len(dst)], b[:len(dst)]
	hi, r1, even, mul, r, sh := l.hi, l.r-1, l.even, l.sumMul, l.r, l.sumShift
	for i := range dst {
		x := minW(a[i], b[i], hi, r1)
		dst[i] = x
		sum += sumW(x, even, mul, r, sh)
	}
	return sum
}

func subtractWords(dst, a, b, u []uint64, l *lanes) (sum uint64) {
	if l.r == 4 {
		return subtractWords4(dst, a, b, u)
	}
	a, b, u = a[:len(dst)], b[:len(dst)], u[:len(dst)]
	hi, r1, even, mul, r, sh := l.hi, l.r-1, l.even, l.sumMul, l.r, l.sumShift
	lo := hi >> r1
	for i := range dst {
		ai, bi, ui := a[i], b[i], u[i]
		if anySatW(ai, bi, ui, lo, hi) == 0 {
			x := minW(ai, subSatW(ui, bi, hi, r1), hi, r1)
			dst[i] = x
			sum += sumW(x, even, mul, r, sh)
			continue
		}
		fb, fu := fillW(isMaxW(bi, hi), r1), fillW(isMaxW(ui, hi), r1)
		ub := (subSatW(ui, bi, hi, r1) &^ fb) | (ui & fb) | fu
		x := minW(ai, ub, hi, r1)
		dst[i] = x
		sum += sumW(x, even, mul, r, sh)
	}
	return sum
}

func unionWords(dst, a, b, u []uint64, l *lanes) (sum uint64) {
	if l.r == 4 {
		return unionWords4(dst, a, b, u)
	}
	a, b, u = a[:len(dst)], b[:len(dst)], u[:len(dst)]
	hi, r1, even, mul, r, sh := l.hi, l.r-1, l.even, l.sumMul, l.r, l.sumShift
	lo := hi >> r1
	for i := range dst {
		ai, bi, ui := a[i], b[i], u[i]
		if anySatW(ai, bi, ui, lo, hi) == 0 {
			x := ai + minW(bi, subSatW(ui, ai, hi, r1), hi, r1)
			dst[i] = x
			sum += sumW(x, even, mul, r, sh)
			continue
		}
		fa, fu := fillW(isMaxW(ai, hi), r1), fillW(isMaxW(ui, hi), r1)
		ua := (subSatW(ui, ai, hi, r1) &^ fa) | (ui & fa) | fu
		x := addSatW(ai, minW(bi, ua, hi, r1), hi, r1)
		dst[i] = x
		sum += sumW(x, even, mul, r, sh)
	}
	return sum
}

func xorWords(dst, a, b, u []uint64, l *lanes) (sum uint64) {
	if l.r == 4 {
		return xorWords4(dst, a, b, u)
	}
	a, b, u = a[:len(dst)], b[:len(dst)], u[:len(dst)]
	hi, r1, even, mul, r, sh := l.hi, l.r-1, l.even, l.sumMul, l.r, l.sumShift
	lo := hi >> r1
	for i := range dst {
		ai, bi, ui := a[i], b[i], u[i]
		if anySatW(ai, bi, ui, lo, hi) == 0 {
			x := minW(ai, subSatW(ui, bi, hi, r1), hi, r1) + minW(bi, subSatW(ui, ai, hi, r1), hi, r1)
			dst[i] = x
			sum += sumW(x, even, mul, r, sh)
			continue
		}
		fa, fb, fu := fillW(isMaxW(ai, hi), r1), fillW(isMaxW(bi, hi), r1), fillW(isMaxW(ui, hi), r1)
		ub := (subSatW(ui, bi, hi, r1) &^ fb) | (ui & fb) | fu
		ua := (subSatW(ui, ai, hi, r1) &^ fa) | (ui & fa) | fu
		x := addSatW(minW(ai, ub, hi, r1), minW(bi, ua, hi, r1), hi, r1)
		dst[i] = x
		sum += sumW(x, even, mul, r, sh)
	}
	return sum
}
