package cbfalgebra

import (
	"fmt"
	"math"
	"strconv"
	"testing"
)

// TestTheoryMatchesPaperTable1 checks the formulas against the "expected"
// rows of the paper's Table 1 (paper-notes §5), in percent: u = 12000,
// n1 = n2 = 6000, n3 = 2000. 50 of the 54 printed values match to every
// digit. Four are one unit off in the last printed digit in the paper
// itself (the formula gives 7.26990, 7.26990, 3.23448 and 0.0027460 where
// the paper prints 7.2700, 7.2700, 3.2344 and 0.0028; no variant of the
// formulas — exact (1-1/m)^(kn), float32, a rounded e — matches more of the
// table), so those four are held to one unit of the last digit.
func TestTheoryMatchesPaperTable1(t *testing.T) {
	const u, n1, n2, n3 = 12000, 6000, 6000, 2000
	// m, k, then CBF(S1), ~CBF(S2), CBF(S1∩S2), ∩, CBF(S1\S2), \, ∪, CBF(S1⊕S2), ⊕.
	rows := []struct {
		m, k int
		want []string
	}{
		{32768, 4, []string{"7.2700", "7.2700", "0.2202", "1.2376", "2.2273", "2.9695", "24.700", "15.103", "16.890"}},
		{32768, 6, []string{"8.7797", "8.7797", "0.0831", "1.4461", "1.9602", "3.2344", "35.069", "20.662", "24.423"}},
		{65536, 4, []string{"0.8842", "0.8842", "0.0174", "0.0599", "0.2202", "0.2654", "4.3557", "2.2273", "2.4202"}},
		{65536, 6, []string{"0.5701", "0.5701", "0.0022", "0.0220", "0.0831", "0.1202", "4.6514", "1.9602", "2.2855"}},
		{131072, 4, []string{"0.0784", "0.0784", "0.0012", "0.0026", "0.0174", "0.0194", "0.4785", "0.2202", "0.2316"}},
		{131072, 6, []string{"0.0192", "0.0192", "4.5e-5", "0.0002", "0.0022", "0.0028", "0.2456", "0.0831", "0.0922"}},
	}
	for _, r := range rows {
		m, k := r.m, r.k
		got := []float64{
			FP(m, k, n1),
			FPComplement(m, k, u, n2),
			FP(m, k, n3),                    // CBF(S1 ∩ S2)
			FPIntersect(m, k, n1, n2, n3),   // ∩
			FP(m, k, n1-n3),                 // CBF(S1 \ S2)
			FPSubtract(m, k, u, n1, n2, n3), // \
			FPUnion(m, k, n1, n2, n3),       // ∪ = CBF(S1 ∪ S2)
			FP(m, k, n1+n2-2*n3),            // CBF(S1 ⊕ S2)
			FPXor(m, k, u, n1, n2, n3),      // ⊕
		}
		for i, w := range r.want {
			s := formatLike(100*got[i], w)
			if paperOffByOne[[3]int{m, k, i}] {
				pw, _ := strconv.ParseFloat(w, 64)
				unit := math.Pow(10, -float64(len(w)-indexByte(w, '.')-1))
				if s == w || math.Abs(100*got[i]-pw) > unit {
					t.Errorf("m=%d k=%d column %d: %s%%, paper %s%%: expected a one-unit difference", m, k, i, s, w)
				}
				continue
			}
			if s != w {
				t.Errorf("m=%d k=%d column %d: %s%%, paper %s%%", m, k, i, s, w)
			}
		}
	}
}

// paperOffByOne lists (m, k, column) where the paper's printed expected value
// is one unit of its last digit away from the formula.
var paperOffByOne = map[[3]int]bool{
	{32768, 4, 0}: true, {32768, 4, 1}: true, {32768, 6, 5}: true, {131072, 6, 5}: true,
}

// formatLike prints v with the precision of the printed value w.
func formatLike(v float64, w string) string {
	if e := indexByte(w, 'e'); e >= 0 {
		digits := e - indexByte(w, '.') - 1
		s := strconv.FormatFloat(v, 'e', digits, 64)
		// Go prints e-05; the paper e-5.
		return fmt.Sprintf("%se%d", s[:indexByte(s, 'e')], exponent(s))
	}
	return strconv.FormatFloat(v, 'f', len(w)-indexByte(w, '.')-1, 64)
}

func indexByte(s string, c byte) int {
	for i := range len(s) {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func exponent(s string) int {
	n, _ := strconv.Atoi(s[indexByte(s, 'e')+1:])
	return n
}

func TestDoubleFormulas(t *testing.T) {
	m, k, u, n1, n2, n3 := 32768, 4, 12000, 6000, 6000, 2000
	fi := FPIntersect(m, k, n1, n2, n3)
	f1, f2, fu := FP(m, k, n1), FP(m, k, n2), FP(m, k, u)
	check := func(name string, fp, fn, wantFP, wantFN float64) {
		if math.Abs(fp-wantFP) > 1e-15 || math.Abs(fn-wantFN) > 1e-15 {
			t.Errorf("%s = (%v, %v), want (%v, %v)", name, fp, fn, wantFP, wantFN)
		}
	}
	fp, fn := DoubleFPIntersect(m, k, n1, n2, n3)
	check("intersect", fp, fn, fi, 0)
	fp, fn = DoubleFPUnion(m, k, n1, n2, n3)
	check("union", fp, fn, f1+f2-fi, 0)
	fp, fn = DoubleFPSubtract(m, k, n1, n2, n3)
	check("subtract", fp, fn, f1-fi, f2)
	fp, fn = DoubleFPXor(m, k, n1, n2, n3)
	check("xor", fp, fn, f1+f2-2*fi, f1)
	fp, fn = DoubleFPComplement(m, k, u, n2)
	check("complement", fp, fn, fu-f2, f2)
	if FP(100, 3, 0) != 0 || FPIntersect(100, 3, 5, 5, 5) <= 0 {
		t.Error("edge cases")
	}
}

// TestTheoryAgreesWithMeasurement: the measured fp of every algebra result
// is within a few standard errors of its formula (a small Table 1, with the
// paper's SHA-1 scheme).
func TestTheoryAgreesWithMeasurement(t *testing.T) {
	const m, k, u, n1, n2, n3, probes = 1 << 13, 4, 3000, 1500, 1500, 500, 20000
	U := keys("theory-u", u)
	s1 := U[:n1]
	s2 := U[n1-n3 : n1-n3+n2]
	p := Params{M: m, K: k, R: 4, Hash: HashSHA1}
	cu, c1, c2 := build(t, p, U), build(t, p, s1), build(t, p, s2)
	comp, _ := Complement(cu, c2)
	inter, _ := Intersect(c1, c2)
	sub, _ := Subtract(c1, c2, cu)
	uni, _ := Union(c1, c2, cu)
	xor, _ := Xor(c1, c2, cu)
	out := keys("theory-out", probes)
	for _, tc := range []struct {
		name string
		c    *CBF
		want float64
	}{
		{"S1", c1, FP(m, k, n1)},
		{"complement", comp, FPComplement(m, k, u, n2)},
		{"intersect", inter, FPIntersect(m, k, n1, n2, n3)},
		{"subtract", sub, FPSubtract(m, k, u, n1, n2, n3)},
		{"union", uni, FPUnion(m, k, n1, n2, n3)},
		{"xor", xor, FPXor(m, k, u, n1, n2, n3)},
	} {
		fp := 0
		for _, x := range out {
			if tc.c.Contains(x) {
				fp++
			}
		}
		got := float64(fp) / probes
		se := math.Sqrt(tc.want * (1 - tc.want) / probes)
		if math.Abs(got-tc.want) > 5*se+0.002 {
			t.Errorf("%s: measured fp %.4f, theory %.4f (se %.4f)", tc.name, got, tc.want, se)
		}
	}
}
