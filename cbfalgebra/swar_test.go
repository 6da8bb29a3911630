package cbfalgebra

import (
	"math/rand/v2"
	"testing"
)

// The plain per-counter reference implementation of the algebra with the
// saturation rules of the package doc. The SWAR word loops must agree with it.

func refDiff(u, b, max uint64) uint64 {
	switch {
	case u == max:
		return max
	case b == max:
		return u
	case b > u:
		return 0
	}
	return u - b
}

func refAdd(a, b, max uint64) uint64 { return min(a+b, max) }

type refOp func(a, b, u, max uint64) uint64

var refOps = map[string]refOp{
	"complement": func(a, b, u, max uint64) uint64 { return refDiff(u, b, max) },
	"intersect":  func(a, b, u, max uint64) uint64 { return min(a, b) },
	"subtract":   func(a, b, u, max uint64) uint64 { return min(a, refDiff(u, b, max)) },
	"union":      func(a, b, u, max uint64) uint64 { return refAdd(a, min(b, refDiff(u, a, max)), max) },
	"xor": func(a, b, u, max uint64) uint64 {
		return refAdd(min(a, refDiff(u, b, max)), min(b, refDiff(u, a, max)), max)
	},
}

// wordOps runs the SWAR loops on one word each; complement's operands are (u=u, s=b).
var wordOps = map[string]func(dst, a, b, u []uint64, l *lanes) uint64{
	"complement": func(dst, a, b, u []uint64, l *lanes) uint64 { return complementWords(dst, u, b, l) },
	"intersect":  func(dst, a, b, u []uint64, l *lanes) uint64 { return intersectWords(dst, a, b, l) },
	"subtract":   subtractWords,
	"union":      unionWords,
	"xor":        xorWords,
}

// laneValue draws a counter value biased to the edge cases 0, 1, max-1, max.
func laneValue(rng *rand.Rand, max uint64) uint64 {
	switch rng.IntN(6) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return max
	case 3:
		return max - 1
	}
	return rng.Uint64N(max + 1)
}

// randomWord fills a word with edge-biased lanes; with noSat it avoids the
// saturated value, so that the loops' unsaturated fast path is exercised.
func randomWord(rng *rand.Rand, l *lanes, noSat bool) uint64 {
	var w uint64
	for off := uint(0); off < 64; off += l.r {
		v := laneValue(rng, l.max)
		if noSat && v == l.max {
			v = rng.Uint64N(l.max)
		}
		w |= v << off
	}
	return w
}

func lane(w uint64, l *lanes, j uint) uint64 { return (w >> (j * l.r)) & l.max }

func checkWords(t testing.TB, l *lanes, a, b, u uint64) {
	t.Helper()
	per := 64 / l.r
	var rl, rs, rm, rn, ra, rmax uint64
	for j := uint(0); j < per; j++ {
		x, y := lane(a, l, j), lane(b, l, j)
		if x < y {
			rl |= 1 << (j*l.r + l.r - 1)
		}
		if x == l.max {
			rmax |= 1 << (j*l.r + l.r - 1)
		}
		if x != 0 {
			rn |= 1 << (j*l.r + l.r - 1)
		}
		if x > y {
			rs |= (x - y) << (j * l.r)
		}
		rm |= min(x, y) << (j * l.r)
		ra |= refAdd(x, y, l.max) << (j * l.r)
	}
	if got := l.less(a, b); got != rl {
		t.Fatalf("r=%d less(%016x, %016x) = %016x, want %016x", l.r, a, b, got, rl)
	}
	if got := l.isMax(a); got != rmax {
		t.Fatalf("r=%d isMax(%016x) = %016x, want %016x", l.r, a, got, rmax)
	}
	if got := l.nonzero(a); got != rn {
		t.Fatalf("r=%d nonzero(%016x) = %016x, want %016x", l.r, a, got, rn)
	}
	if got := l.subSat(a, b); got != rs {
		t.Fatalf("r=%d subSat(%016x, %016x) = %016x, want %016x", l.r, a, b, got, rs)
	}
	if got := l.minw(a, b); got != rm {
		t.Fatalf("r=%d minw(%016x, %016x) = %016x, want %016x", l.r, a, b, got, rm)
	}
	if got := l.addSat(a, b); got != ra {
		t.Fatalf("r=%d addSat(%016x, %016x) = %016x, want %016x", l.r, a, b, got, ra)
	}
	for name, op := range refOps {
		var want, wantSum uint64
		for j := uint(0); j < per; j++ {
			v := op(lane(a, l, j), lane(b, l, j), lane(u, l, j), l.max)
			want |= v << (j * l.r)
			wantSum += v
		}
		dst := []uint64{0}
		sum := wordOps[name](dst, []uint64{a}, []uint64{b}, []uint64{u}, l)
		if dst[0] != want || sum != wantSum {
			t.Fatalf("r=%d %s(a=%016x, b=%016x, u=%016x) = %016x sum %d, want %016x sum %d",
				l.r, name, a, b, u, dst[0], sum, want, wantSum)
		}
	}
}

// TestSWARMatchesReference checks the word-level arithmetic against the
// per-counter reference on random words full of edge values.
func TestSWARMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for _, l := range []*lanes{&lanes4, &lanes8, &lanes16} {
		for i := 0; i < n; i++ {
			// Half the triples have no saturated lane at all (fast path),
			// the rest mix saturated and unsaturated words.
			fast := i%2 == 0
			checkWords(t, l, randomWord(rng, l, fast || i%3 == 0), randomWord(rng, l, fast || i%5 == 0), randomWord(rng, l, fast || i%7 == 0))
		}
		// All-equal corner words.
		for _, w := range []uint64{0, ^uint64(0)} {
			checkWords(t, l, w, w, w)
			checkWords(t, l, w, ^w, w)
		}
	}
}

// FuzzSWAR compares the word loops with the reference on arbitrary words.
func FuzzSWAR(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint64(0), uint8(4))
	f.Add(^uint64(0), uint64(0x0123456789abcdef), uint64(0xfedcba9876543210), uint8(8))
	f.Add(uint64(0xffff0000ffff0000), uint64(0x00010002fffe0003), ^uint64(0), uint8(16))
	f.Fuzz(func(t *testing.T, a, b, u uint64, r uint8) {
		checkWords(t, lanesFor([]int{4, 8, 16}[int(r)%3]), a, b, u)
	})
}
