package cbfalgebra

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// world is a universe with two random subsets and their filters.
type world struct {
	p          Params
	u, s1, s2  [][]byte
	in1, in2   map[string]bool
	cu, c1, c2 *CBF
}

func build(t testing.TB, p Params, elems [][]byte) *CBF {
	t.Helper()
	c, err := NewFromParams(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range elems {
		c.Insert(e)
	}
	return c
}

// newWorld draws S1 and S2 from U with membership probabilities q1, q2.
// With churn, S1 and S2 are built by inserting all of U and deleting the rest,
// which exercises deletes through saturated counters.
func newWorld(t testing.TB, rng *rand.Rand, p Params, nu int, q1, q2 float64, churn bool) *world {
	w := &world{p: p, u: keys(fmt.Sprint("u", rng.Uint64()), nu), in1: map[string]bool{}, in2: map[string]bool{}}
	for _, x := range w.u {
		if rng.Float64() < q1 {
			w.s1 = append(w.s1, x)
			w.in1[string(x)] = true
		}
		if rng.Float64() < q2 {
			w.s2 = append(w.s2, x)
			w.in2[string(x)] = true
		}
	}
	w.cu = build(t, p, w.u)
	if !churn {
		w.c1, w.c2 = build(t, p, w.s1), build(t, p, w.s2)
		return w
	}
	w.c1, w.c2 = w.cu.Clone(), w.cu.Clone()
	for _, x := range w.u {
		if !w.in1[string(x)] {
			if err := w.c1.Delete(x); err != nil {
				t.Fatalf("churn delete of a member failed: %v", err)
			}
		}
		if !w.in2[string(x)] {
			if err := w.c2.Delete(x); err != nil {
				t.Fatalf("churn delete of a member failed: %v", err)
			}
		}
	}
	return w
}

// results returns each algebra result with its true set.
func (w *world) results(t testing.TB) map[string]struct {
	c   *CBF
	set [][]byte
} {
	t.Helper()
	type res = struct {
		c   *CBF
		set [][]byte
	}
	sel := func(f func(a, b bool) bool) [][]byte {
		var out [][]byte
		for _, x := range w.u {
			if f(w.in1[string(x)], w.in2[string(x)]) {
				out = append(out, x)
			}
		}
		return out
	}
	must := func(c *CBF, err error) *CBF {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return map[string]res{
		"complement": {must(Complement(w.cu, w.c2)), sel(func(a, b bool) bool { return !b })},
		"intersect":  {must(Intersect(w.c1, w.c2)), sel(func(a, b bool) bool { return a && b })},
		"subtract":   {must(Subtract(w.c1, w.c2, w.cu)), sel(func(a, b bool) bool { return a && !b })},
		"union":      {must(Union(w.c1, w.c2, w.cu)), sel(func(a, b bool) bool { return a || b })},
		"xor":        {must(Xor(w.c1, w.c2, w.cu)), sel(func(a, b bool) bool { return a != b })},
	}
}

// checkNoFalseNegatives asserts T13 and T4/T6/T9/T11 for every result:
// every member of the result set is found, can be deleted, and
// CBF(result set) <= result.
func (w *world) checkNoFalseNegatives(t *testing.T) {
	t.Helper()
	for name, r := range w.results(t) {
		for _, x := range r.set {
			if !r.c.Contains(x) {
				t.Fatalf("%v %s: false negative for %s", w.p, name, x)
			}
		}
		exact := build(t, w.p, r.set)
		if le, err := LessEq(exact, r.c); err != nil || !le {
			t.Fatalf("%v %s: CBF(result set) <= result fails (%v)", w.p, name, err)
		}
		d := r.c.Clone()
		for _, x := range r.set {
			if err := d.Delete(x); err != nil {
				t.Fatalf("%v %s: deleting member %s of the result: %v", w.p, name, x, err)
			}
		}
	}
	for _, x := range w.s1 {
		if !w.c1.Contains(x) {
			t.Fatalf("%v: S1 false negative", w.p)
		}
	}
}

func TestAlgebraNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	trials := 20
	if testing.Short() {
		trials = 5
	}
	params := []Params{
		{M: 2048, K: 4, R: 4},
		{M: 1024, K: 6, R: 4, Hash: HashSHA1},
		{M: 777, K: 3, R: 8, Seed: 5},
		{M: 300, K: 5, R: 16},
	}
	for _, p := range params {
		for i := 0; i < trials; i++ {
			w := newWorld(t, rng, p, 100+rng.IntN(400), rng.Float64(), rng.Float64(), i%2 == 1)
			w.checkNoFalseNegatives(t)
		}
	}
}

// TestSaturationStress loads a 64-counter filter with thousands of inserts and
// deletes so that most counters saturate, and checks zero false negatives.
func TestSaturationStress(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	trials := 10
	if testing.Short() {
		trials = 3
	}
	for _, p := range []Params{{M: 64, K: 3, R: 4}, {M: 64, K: 4, R: 4, Hash: HashSHA1}, {M: 64, K: 2, R: 8}} {
		for i := 0; i < trials; i++ {
			w := newWorld(t, rng, p, 1000+rng.IntN(3000), rng.Float64(), rng.Float64(), true)
			if p.R == 4 && w.cu.Saturated() < 32 {
				t.Fatalf("%v: only %d saturated counters, the stress is too light", p, w.cu.Saturated())
			}
			w.checkNoFalseNegatives(t)
		}
	}
}

// TestStickySaturationHistory builds S1 and S2 filters whose counters
// saturated in their past (thousands of elements outside U inserted and
// deleted again), next to an unsaturated CBF(U): the algebra must treat those
// saturated counters as unknown and still give no false negatives.
func TestStickySaturationHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, p := range []Params{{M: 256, K: 3, R: 4}, {M: 256, K: 4, R: 4, Hash: HashSHA1}} {
		for trial := 0; trial < 5; trial++ {
			w := newWorld(t, rng, p, 60, rng.Float64(), rng.Float64(), false)
			ghosts := keys(fmt.Sprint("ghost", trial), 3000)
			for _, c := range []*CBF{w.c1, w.c2} {
				for _, g := range ghosts {
					c.Insert(g)
				}
				for _, g := range ghosts {
					if err := c.Delete(g); err != nil {
						t.Fatal(err)
					}
				}
			}
			if w.c2.Saturated() < p.M/2 || w.cu.Saturated() != 0 {
				t.Fatalf("%v: setup: %d saturated in S2, %d in U", p, w.c2.Saturated(), w.cu.Saturated())
			}
			w.checkNoFalseNegatives(t)
		}
	}
}

func TestTheoremsT1T2T8(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, p := range []Params{{M: 1 << 14, K: 4, R: 4}, {M: 1 << 12, K: 6, R: 8, Hash: HashSHA1}} {
		for trial := 0; trial < 10; trial++ {
			w := newWorld(t, rng, p, 500, 0.5, 0.5, trial%2 == 0)
			if w.cu.Saturated() != 0 {
				t.Fatalf("%v: T2/T8 need an unsaturated universe", p)
			}
			// T1: S ⊆ U ⇒ CBF(S) <= CBF(U); and a subset of S1.
			sub := build(t, p, w.s1[:len(w.s1)/2])
			for _, pair := range [][2]*CBF{{w.c1, w.cu}, {w.c2, w.cu}, {sub, w.c1}} {
				if le, err := LessEq(pair[0], pair[1]); err != nil || !le {
					t.Fatalf("%v: T1 fails (%v)", p, err)
				}
			}
			// T2: ~CBF(S2) = CBF(U \ S2), and Len is |U \ S2|.
			var rest, s1only [][]byte
			for _, x := range w.u {
				if !w.in2[string(x)] {
					rest = append(rest, x)
				}
				if w.in1[string(x)] && !w.in2[string(x)] {
					s1only = append(s1only, x)
				}
			}
			comp, _ := Complement(w.cu, w.c2)
			if eq, _ := Equal(comp, build(t, p, rest)); !eq || comp.Len() != len(rest) {
				t.Fatalf("%v: T2 fails (Len %d, want %d)", p, comp.Len(), len(rest))
			}
			// T8: disjoint A = S1 \ S2 and B = S2: A ∪ B = CBF(A ∪ B).
			a := build(t, p, s1only)
			un, _ := Union(a, w.c2, w.cu)
			if eq, _ := Equal(un, build(t, p, append(append([][]byte{}, s1only...), w.s2...))); !eq {
				t.Fatalf("%v: T8 fails", p)
			}
			if le, _ := LessEq(w.cu, w.c1); le && len(w.s1) < len(w.u) {
				t.Fatalf("%v: LessEq(U, S1) true for a proper subset", p)
			}
		}
	}
}

// TestOpsMatchReference checks the exported operations counter by counter
// against the reference on random counters (including saturated ones and
// an m that leaves padding in the last word).
func TestOpsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, p := range []Params{{M: 1000, K: 3, R: 4}, {M: 67, K: 3, R: 8}, {M: 33, K: 2, R: 16}} {
		rnd := func() *CBF {
			c, _ := NewFromParams(p)
			for i := 0; i < p.M; i++ {
				v := laneValue(rng, c.l.max)
				c.words[i>>c.l.shift] |= v << ((uint(i) & uint(c.l.idxMask)) * c.l.r)
			}
			return c
		}
		for trial := 0; trial < 20; trial++ {
			a, b, u := rnd(), rnd(), rnd()
			got := map[string]*CBF{}
			var err error
			if got["complement"], err = Complement(u, b); err != nil {
				t.Fatal(err)
			}
			got["intersect"], _ = Intersect(a, b)
			got["subtract"], _ = Subtract(a, b, u)
			got["union"], _ = Union(a, b, u)
			got["xor"], _ = Xor(a, b, u)
			for name, op := range refOps {
				var sum uint64
				for i := 0; i < p.M; i++ {
					want := op(uint64(a.Counter(i)), uint64(b.Counter(i)), uint64(u.Counter(i)), a.l.max)
					sum += want
					if g := got[name].Counter(i); uint64(g) != want {
						t.Fatalf("%v %s counter %d = %d, want %d", p, name, i, g, want)
					}
				}
				if got[name].Sum() != sum || got[name].Len() != int((sum+uint64(p.K)/2)/uint64(p.K)) {
					t.Fatalf("%v %s: Sum %d Len %d, want sum %d", p, name, got[name].Sum(), got[name].Len(), sum)
				}
			}
			// In-place: dst aliasing an operand gives the same result.
			d := a.Clone()
			if err := SubtractInto(d, d, b, u); err != nil {
				t.Fatal(err)
			}
			if eq, _ := Equal(d, got["subtract"]); !eq {
				t.Fatalf("%v: SubtractInto with dst = a differs", p)
			}
			d = u.Clone()
			_ = XorInto(d, a, b, d)
			if eq, _ := Equal(d, got["xor"]); !eq {
				t.Fatalf("%v: XorInto with dst = u differs", p)
			}
			d = b.Clone()
			_ = UnionInto(d, a, d, u)
			_ = IntersectInto(a.Clone(), a, b)
			_ = ComplementInto(u.Clone(), u, b)
			if eq, _ := Equal(d, got["union"]); !eq {
				t.Fatalf("%v: UnionInto with dst = b differs", p)
			}
			// LessEq against a per-counter check.
			le, _ := LessEq(got["intersect"], a)
			if !le {
				t.Fatalf("%v: min(a, b) <= a fails", p)
			}
			want := true
			for i := 0; i < p.M; i++ {
				want = want && a.Counter(i) <= b.Counter(i)
			}
			if le, _ := LessEq(a, b); le != want {
				t.Fatalf("%v: LessEq = %v, want %v", p, le, want)
			}
		}
	}
}

func TestNotHomologous(t *testing.T) {
	base := Params{M: 1024, K: 4, R: 4}
	a, _ := NewFromParams(base)
	others := []Params{
		{M: 2048, K: 4, R: 4}, {M: 1024, K: 5, R: 4}, {M: 1024, K: 4, R: 8},
		{M: 1024, K: 4, R: 4, Hash: HashSHA1}, {M: 1024, K: 4, R: 4, Seed: 1},
	}
	for _, q := range others {
		b, _ := NewFromParams(q)
		if base.Homologous(q) {
			t.Fatalf("%v homologous to %v", base, q)
		}
		errs := []error{}
		add := func(_ any, err error) { errs = append(errs, err) }
		add(Complement(a, b))
		add(Intersect(a, b))
		add(Subtract(a, b, a))
		add(Subtract(a, a, b))
		add(Union(a, b, a))
		add(Xor(a, a, b))
		add(Equal(a, b))
		add(LessEq(b, a))
		errs = append(errs, SubtractInto(b, a, a, a), XorInto(a, a, a, b), UnionInto(a, b, a, a),
			IntersectInto(b, a, a), ComplementInto(a, a, b))
		for i, err := range errs {
			if !errors.Is(err, ErrNotHomologous) {
				t.Fatalf("%v vs %v: op %d error %v, want ErrNotHomologous", base, q, i, err)
			}
		}
	}
	if _, err := Subtract(a, nil, a); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("nil operand: %v", err)
	}
	if _, err := Intersect(&CBF{}, a); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("zero CBF operand: %v", err)
	}
}
