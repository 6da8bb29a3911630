package cbfalgebra

// The word loops of swar.go specialised for r = 4 (the paper's width and the
// default): with the masks as constants the compiler keeps every operand in
// a register and shifts by immediates, about twice as fast as the general
// loops. Keep these in step with swar.go; TestSWARMatchesReference and
// FuzzSWAR check both against the per-counter reference.

const (
	hi4   uint64 = 0x8888888888888888
	lo4   uint64 = 0x1111111111111111
	even4 uint64 = 0x0f0f0f0f0f0f0f0f
	mul4  uint64 = 0x0101010101010101
	r1of4 uint   = 3
	sh4   uint   = 56
)

func complementWords4(dst, u, s []uint64) (sum uint64) {
	u, s = u[:len(dst)], s[:len(dst)]
	const hi, r1, even, mul, r, sh, lo = hi4, r1of4, even4, mul4, 4, sh4, lo4
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

func intersectWords4(dst, a, b []uint64) (sum uint64) {
	a, b = a[:len(dst)], b[:len(dst)]
	const hi, r1, even, mul, r, sh, lo = hi4, r1of4, even4, mul4, 4, sh4, lo4
	for i := range dst {
		x := minW(a[i], b[i], hi, r1)
		dst[i] = x
		sum += sumW(x, even, mul, r, sh)
	}
	return sum
}

func subtractWords4(dst, a, b, u []uint64) (sum uint64) {
	a, b, u = a[:len(dst)], b[:len(dst)], u[:len(dst)]
	const hi, r1, even, mul, r, sh, lo = hi4, r1of4, even4, mul4, 4, sh4, lo4
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

func unionWords4(dst, a, b, u []uint64) (sum uint64) {
	a, b, u = a[:len(dst)], b[:len(dst)], u[:len(dst)]
	const hi, r1, even, mul, r, sh, lo = hi4, r1of4, even4, mul4, 4, sh4, lo4
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

func xorWords4(dst, a, b, u []uint64) (sum uint64) {
	a, b, u = a[:len(dst)], b[:len(dst)], u[:len(dst)]
	const hi, r1, even, mul, r, sh, lo = hi4, r1of4, even4, mul4, 4, sh4, lo4
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
