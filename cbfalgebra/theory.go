package cbfalgebra

import "math"

// e returns E(x) = e^(-k x / m).
func e(m, k, x int) float64 { return math.Exp(-float64(k) * float64(x) / float64(m)) }

func powk(base float64, k int) float64 {
	if base <= 0 {
		return 0
	}
	return math.Pow(base, float64(k))
}

// FP returns the expected false-positive rate of a filter of m counters and
// k hash functions holding n elements: (1 - e^(-k n/m))^k.
func FP(m, k, n int) float64 { return powk(1-e(m, k, n), k) }

// FPComplement returns the expected fp of ~CBF(S2) for |U| = u, |S2| = n2
// (T3): the fp of CBF(U \ S2).
func FPComplement(m, k, u, n2 int) float64 { return FP(m, k, u-n2) }

// FPIntersect returns the expected fp of CBF(S1) ∩ CBF(S2) with |S1| = n1,
// |S2| = n2, |S1 ∩ S2| = n3 (T5): (1 - E(n1) - E(n2) + E(n1+n2-n3))^k.
func FPIntersect(m, k, n1, n2, n3 int) float64 {
	return powk(1-e(m, k, n1)-e(m, k, n2)+e(m, k, n1+n2-n3), k)
}

// FPSubtract returns the expected fp of CBF(S1) \ CBF(S2) (T7):
// (1 - E(n1) - E(u-n2) + E(u-n2+n3))^k.
func FPSubtract(m, k, u, n1, n2, n3 int) float64 {
	return powk(1-e(m, k, n1)-e(m, k, u-n2)+e(m, k, u-n2+n3), k)
}

// FPUnion returns the expected fp of CBF(S1) ∪ CBF(S2) (T10): the fp of
// CBF(S1 ∪ S2), (1 - E(n1+n2-n3))^k.
func FPUnion(m, k, n1, n2, n3 int) float64 { return FP(m, k, n1+n2-n3) }

// FPXor returns the expected fp of CBF(S1) ⊕ CBF(S2) (T12):
// (1 - E(n1+n2-n3) - E(u-n3) + E(u))^k.
func FPXor(m, k, u, n1, n2, n3 int) float64 {
	return powk(1-e(m, k, n1+n2-n3)-e(m, k, u-n3)+e(m, k, u), k)
}

// DoubleFPIntersect returns (fp, fn) of answering "x in S1 ∩ S2" by querying
// CBF(S1) and CBF(S2) separately: fp as FPIntersect, fn = 0.
func DoubleFPIntersect(m, k, n1, n2, n3 int) (fp, fn float64) {
	return FPIntersect(m, k, n1, n2, n3), 0
}

// DoubleFPUnion returns (fp, fn) of the double-CBF union query (x in CBF(S1)
// or in CBF(S2)): fp = fp(n1) + fp(n2) - fp∩, fn = 0.
func DoubleFPUnion(m, k, n1, n2, n3 int) (fp, fn float64) {
	return FP(m, k, n1) + FP(m, k, n2) - FPIntersect(m, k, n1, n2, n3), 0
}

// DoubleFPSubtract returns (fp, fn) of the double-CBF difference query (x in
// CBF(S1) and not in CBF(S2)): fp = fp(n1) - fp∩ and fn = fp(n2).
func DoubleFPSubtract(m, k, n1, n2, n3 int) (fp, fn float64) {
	return FP(m, k, n1) - FPIntersect(m, k, n1, n2, n3), FP(m, k, n2)
}

// DoubleFPXor returns (fp, fn) of the double-CBF symmetric-difference query
// (in exactly one of CBF(S1), CBF(S2)): fp = fp(n1) + fp(n2) - 2 fp∩ and
// fn = fp(n1).
func DoubleFPXor(m, k, n1, n2, n3 int) (fp, fn float64) {
	return FP(m, k, n1) + FP(m, k, n2) - 2*FPIntersect(m, k, n1, n2, n3), FP(m, k, n1)
}

// DoubleFPComplement returns (fp, fn) of the double-CBF complement query (x
// in CBF(U) and not in CBF(S2)): fp = fp(u) - fp(n2) and fn = fp(n2).
func DoubleFPComplement(m, k, u, n2 int) (fp, fn float64) {
	return FP(m, k, u) - FP(m, k, n2), FP(m, k, n2)
}
