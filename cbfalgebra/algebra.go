package cbfalgebra

import "fmt"

// check verifies that no filter is nil and that all are homologous.
func check(fs ...*CBF) error {
	for i, f := range fs {
		if f == nil || f.l == nil {
			return fmt.Errorf("%w: operand %d is a nil or zero CBF", ErrInvalidParams, i)
		}
		if i > 0 && !fs[0].p.Homologous(f.p) {
			return fmt.Errorf("%w: %v and %v", ErrNotHomologous, fs[0].p, f.p)
		}
	}
	return nil
}

// Complement returns ~CBF(S) = CBF(U) - CBF(S) counter by counter, which is
// exactly CBF(U \ S) when S is a subset of U and no counter is saturated (T2).
func Complement(u, s *CBF) (*CBF, error) {
	if err := check(u, s); err != nil {
		return nil, err
	}
	dst, _ := NewFromParams(u.p)
	return dst, ComplementInto(dst, u, s)
}

// ComplementInto writes Complement(u, s) into dst without allocating; dst
// must be homologous and may be u or s.
func ComplementInto(dst, u, s *CBF) error {
	if err := check(dst, u, s); err != nil {
		return err
	}
	dst.setLenFromSum(complementWords(dst.words, u.words, s.words, dst.l))
	return nil
}

// Intersect returns CBF(A) ∩ CBF(B) = min(A_i, B_i).
func Intersect(a, b *CBF) (*CBF, error) {
	if err := check(a, b); err != nil {
		return nil, err
	}
	dst, _ := NewFromParams(a.p)
	return dst, IntersectInto(dst, a, b)
}

// IntersectInto writes Intersect(a, b) into dst without allocating; dst
// must be homologous and may be a or b.
func IntersectInto(dst, a, b *CBF) error {
	if err := check(dst, a, b); err != nil {
		return err
	}
	dst.setLenFromSum(intersectWords(dst.words, a.words, b.words, dst.l))
	return nil
}

// Subtract returns CBF(A) \ CBF(B) = min(A_i, U_i - B_i) with universe u.
// It contains every element of A \ B (no false negatives): querying it with
// one's own elements finds everything the other side lacks.
func Subtract(a, b, u *CBF) (*CBF, error) {
	if err := check(a, b, u); err != nil {
		return nil, err
	}
	dst, _ := NewFromParams(a.p)
	return dst, SubtractInto(dst, a, b, u)
}

// SubtractInto writes Subtract(a, b, u) into dst without allocating; dst
// must be homologous and may be any of the operands.
func SubtractInto(dst, a, b, u *CBF) error {
	if err := check(dst, a, b, u); err != nil {
		return err
	}
	dst.setLenFromSum(subtractWords(dst.words, a.words, b.words, u.words, dst.l))
	return nil
}

// Union returns CBF(A) ∪ CBF(B) = A_i + min(B_i, U_i - A_i) with universe u;
// for disjoint A and B it equals CBF(A ∪ B) (T8).
func Union(a, b, u *CBF) (*CBF, error) {
	if err := check(a, b, u); err != nil {
		return nil, err
	}
	dst, _ := NewFromParams(a.p)
	return dst, UnionInto(dst, a, b, u)
}

// UnionInto writes Union(a, b, u) into dst without allocating; dst must be
// homologous and may be any of the operands.
func UnionInto(dst, a, b, u *CBF) error {
	if err := check(dst, a, b, u); err != nil {
		return err
	}
	dst.setLenFromSum(unionWords(dst.words, a.words, b.words, u.words, dst.l))
	return nil
}

// Xor returns CBF(A) ⊕ CBF(B) = min(A_i, U_i - B_i) + min(B_i, U_i - A_i)
// with universe u.
func Xor(a, b, u *CBF) (*CBF, error) {
	if err := check(a, b, u); err != nil {
		return nil, err
	}
	dst, _ := NewFromParams(a.p)
	return dst, XorInto(dst, a, b, u)
}

// XorInto writes Xor(a, b, u) into dst without allocating; dst must be
// homologous and may be any of the operands.
func XorInto(dst, a, b, u *CBF) error {
	if err := check(dst, a, b, u); err != nil {
		return err
	}
	dst.setLenFromSum(xorWords(dst.words, a.words, b.words, u.words, dst.l))
	return nil
}

// Equal reports whether a and b hold the same counters.
func Equal(a, b *CBF) (bool, error) {
	if err := check(a, b); err != nil {
		return false, err
	}
	for i, w := range a.words {
		if w != b.words[i] {
			return false, nil
		}
	}
	return true, nil
}

// LessEq reports whether a_i <= b_i for every counter i (CBF(A) <= CBF(B));
// by T1 this holds when A is a subset of B.
func LessEq(a, b *CBF) (bool, error) {
	if err := check(a, b); err != nil {
		return false, err
	}
	l := a.l
	bw := b.words[:len(a.words)]
	for i, w := range a.words {
		if l.less(bw[i], w) != 0 {
			return false, nil
		}
	}
	return true, nil
}
