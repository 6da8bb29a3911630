package cbfalgebra

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		p  Params
		ok bool
	}{
		{Params{M: 1, K: 1, R: 4}, true},
		{Params{M: 100, K: 6, R: 8}, true},
		{Params{M: 100, K: 6, R: 16, Seed: 1}, true},
		{Params{M: int(MaxM), K: MaxK, R: 4}, true},
		{Params{M: 0, K: 6, R: 4}, false},
		{Params{M: -5, K: 6, R: 4}, false},
		{Params{M: int(MaxM) + 1, K: 6, R: 4}, false},
		{Params{M: 100, K: 0, R: 4}, false},
		{Params{M: 100, K: MaxK + 1, R: 4}, false},
		{Params{M: 100, K: 6, R: 2}, false},
		{Params{M: 100, K: 6, R: 0}, false},
		{Params{M: 100, K: 6, R: 32}, false},
		{Params{M: 128, K: 6, R: 4, Hash: HashSHA1}, true},
		{Params{M: 2, K: 6, R: 4, Hash: HashSHA1}, true},
		{Params{M: 1, K: 6, R: 4, Hash: HashSHA1}, false},
		{Params{M: 100, K: 6, R: 4, Hash: HashSHA1}, false},
		{Params{M: 128, K: 6, R: 4, Hash: 7}, false},
	} {
		err := tc.p.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%v: Validate = %v, want ok=%v", tc.p, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%v: %v does not wrap ErrInvalidParams", tc.p, err)
		}
		if _, err := NewFromParams(tc.p); (err == nil) != tc.ok {
			t.Errorf("%v: NewFromParams = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
}

func TestConstructorsAndOptions(t *testing.T) {
	c, err := New(1000, 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Params{M: 1000, K: 5, R: 4, Hash: HashFast}); c.Params() != want {
		t.Fatalf("defaults: %v, want %v", c.Params(), want)
	}
	c, err = New(1024, 5, WithCounterBits(16), WithHash(HashSHA1), WithSeed(42))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Params{M: 1024, K: 5, R: 16, Hash: HashSHA1, Seed: 42}); c.Params() != want {
		t.Fatalf("options: %v, want %v", c.Params(), want)
	}
	for _, o := range []Option{WithCounterBits(5), WithHash(9)} {
		if _, err := New(1024, 5, o); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("bad option accepted: %v", err)
		}
	}
	if _, err := New(1000, 5, WithHash(HashSHA1)); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("sha1 with m=1000 accepted: %v", err)
	}
	c, err = NewForEstimate(6000, 0.01, WithHash(HashSHA1))
	if err != nil {
		t.Fatal(err)
	}
	// -6000 ln(0.01)/ln2^2 = 57510 -> 65536; k = round(ln2*65536/6000) = 8.
	if p := c.Params(); p.M != 65536 || p.K != 8 {
		t.Fatalf("NewForEstimate(6000, 0.01) = %v, want m=65536 k=8", p)
	}
	for _, tc := range []struct {
		n  int
		fp float64
	}{{0, 0.01}, {10, 0}, {10, 1}, {10, math.NaN()}, {1 << 30, 1e-300}} {
		if _, err := NewForEstimate(tc.n, tc.fp); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("NewForEstimate(%d, %v) = %v, want ErrInvalidParams", tc.n, tc.fp, err)
		}
	}
}

func TestOptimalK(t *testing.T) {
	for _, tc := range []struct{ m, n, k int }{
		{32768, 6000, 4}, {65536, 6000, 8}, {131072, 6000, 15}, {100, 1000, 1},
		{100, 0, MaxK}, {0, 5, 1}, {1 << 30, 1, MaxK},
	} {
		if got := OptimalK(tc.m, tc.n); got != tc.k {
			t.Errorf("OptimalK(%d, %d) = %d, want %d", tc.m, tc.n, got, tc.k)
		}
	}
}

func keys(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s-%d", prefix, i)
	}
	return out
}

func TestInsertDeleteContains(t *testing.T) {
	for _, p := range []Params{
		{M: 4096, K: 6, R: 4},
		{M: 4096, K: 6, R: 8, Hash: HashSHA1},
		{M: 5000, K: 3, R: 16, Seed: 9},
	} {
		c, _ := NewFromParams(p)
		in, out := keys("in", 300), keys("out", 3000)
		for _, k := range in {
			c.Insert(k)
		}
		if c.Len() != len(in) {
			t.Fatalf("%v: Len = %d", p, c.Len())
		}
		for _, k := range in {
			if !c.Contains(k) || c.Count(k) < 1 {
				t.Fatalf("%v: false negative for %s", p, k)
			}
		}
		fp := 0
		for _, k := range out {
			if c.Contains(k) {
				fp++
			}
		}
		want := FP(p.M, p.K, len(in))
		if got := float64(fp) / float64(len(out)); got > 3*want+0.01 {
			t.Errorf("%v: fp %.4f, theory %.4f", p, got, want)
		}
		// Fill ratio near 1 - e^(-kn/m).
		if got, want := c.FillRatio(), 1-math.Exp(-float64(p.K*len(in))/float64(p.M)); math.Abs(got-want) > 0.05 {
			t.Errorf("%v: FillRatio %.3f, want about %.3f", p, got, want)
		}
		// Deleting what is absent fails and changes nothing.
		before := c.Clone()
		for _, k := range out {
			if c.Contains(k) {
				continue
			}
			if err := c.Delete(k); !errors.Is(err, ErrNotMember) {
				t.Fatalf("%v: Delete(absent) = %v", p, err)
			}
		}
		if eq, _ := Equal(before, c); !eq || c.Len() != before.Len() {
			t.Fatalf("%v: failed deletes changed the filter", p)
		}
		for _, k := range in {
			if err := c.Delete(k); err != nil {
				t.Fatalf("%v: Delete(member): %v", p, err)
			}
		}
		if c.Len() != 0 || c.FillRatio() != 0 {
			t.Fatalf("%v: after deleting all: Len %d fill %v", p, c.Len(), c.FillRatio())
		}
	}
}

func TestDeleteCoincidingAddresses(t *testing.T) {
	// m=16 sha1: "hello" -> [10 10 15]; counter 10 must show 2 to delete.
	c, _ := New(16, 3, WithHash(HashSHA1))
	c.InsertLocations([]uint32{10, 15, 3})
	if err := c.Delete([]byte("hello")); !errors.Is(err, ErrNotMember) {
		t.Fatalf("delete with counter 10 at 1: %v", err)
	}
	if c.Counter(10) != 1 || c.Counter(15) != 1 {
		t.Fatalf("failed delete changed counters")
	}
	c.Insert([]byte("hello"))
	if c.Count([]byte("hello")) != 2 || c.Counter(10) != 3 {
		t.Fatalf("Count = %d, counter 10 = %d", c.Count([]byte("hello")), c.Counter(10))
	}
	if err := c.Delete([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if c.Counter(10) != 1 || c.Counter(15) != 1 || c.Counter(3) != 1 {
		t.Fatalf("after delete: %d %d %d", c.Counter(10), c.Counter(15), c.Counter(3))
	}
}

func TestSaturationSticks(t *testing.T) {
	for _, r := range []int{4, 8} {
		c, _ := New(8, 1, WithCounterBits(r))
		locs := []uint32{3}
		max := 1<<r - 1
		for i := 0; i < max+10; i++ {
			c.InsertLocations(locs)
		}
		if c.Counter(3) != max || c.Saturated() != 1 || c.MaxCounter() != max {
			t.Fatalf("r=%d: counter %d saturated %d", r, c.Counter(3), c.Saturated())
		}
		for i := 0; i < 3*max; i++ {
			if err := c.DeleteLocations(locs); err != nil {
				t.Fatalf("r=%d: delete through saturated counter: %v", r, err)
			}
		}
		if c.Counter(3) != max {
			t.Fatalf("r=%d: saturated counter moved to %d", r, c.Counter(3))
		}
		if c.Counter(-1) != 0 || c.Counter(8) != 0 {
			t.Fatalf("out-of-range Counter not 0")
		}
	}
}

func TestOutOfRangeLocations(t *testing.T) {
	c, _ := New(10, 2)
	c.InsertLocations([]uint32{3, 10, 1 << 31})
	if c.Counter(3) != 1 || c.Sum() != 1 {
		t.Fatalf("out-of-range insert touched counters: sum %d", c.Sum())
	}
	if c.ContainsLocations([]uint32{3, 10}) || c.CountLocations([]uint32{3, 12}) != 0 {
		t.Fatal("out-of-range address reported as member")
	}
	if err := c.DeleteLocations([]uint32{3, 99}); !errors.Is(err, ErrNotMember) || c.Counter(3) != 1 {
		t.Fatalf("out-of-range delete: %v", err)
	}
	if ok, probes := c.ProbeLocations([]uint32{3, 4, 5}); ok || probes != 2 {
		t.Fatalf("ProbeLocations = %v, %d", ok, probes)
	}
	c.InsertLocations([]uint32{4, 5})
	if ok, probes := c.ProbeLocations([]uint32{3, 4, 5}); !ok || probes != 3 {
		t.Fatalf("ProbeLocations of a member = %v, %d", ok, probes)
	}
	d, _ := New(1<<10, 4)
	d.Insert([]byte("m"))
	if ok, probes := d.Probe([]byte("m")); !ok || probes != 4 {
		t.Fatalf("Probe(member) = %v, %d", ok, probes)
	}
	if ok, probes := d.Probe([]byte("not there")); ok || probes < 1 || probes > 4 {
		t.Fatalf("Probe(absent) = %v, %d", ok, probes)
	}
}

func TestCloneResetIndependent(t *testing.T) {
	c, _ := New(100, 3)
	c.Insert([]byte("a"))
	d := c.Clone()
	d.Insert([]byte("b"))
	if c.Len() != 1 || d.Len() != 2 || c.Contains([]byte("b")) && !d.Contains([]byte("b")) {
		t.Fatal("clone shares state")
	}
	d.Reset()
	if d.Len() != 0 || d.Sum() != 0 || c.Sum() != 3 {
		t.Fatalf("Reset: len %d sum %d, original sum %d", d.Len(), d.Sum(), c.Sum())
	}
}

// TestConcurrentReads: queries may run in parallel on a shared filter (run
// with -race).
func TestConcurrentReads(t *testing.T) {
	for _, h := range []HashFamily{HashFast, HashSHA1} {
		p := Params{M: 1 << 12, K: 5, R: 4, Hash: h}
		in := keys("conc", 200)
		c := build(t, p, in)
		done := make(chan error, 4)
		for g := 0; g < 4; g++ {
			go func() {
				for _, k := range in {
					if !c.Contains(k) || c.Count(k) < 1 {
						done <- fmt.Errorf("%s: false negative for %s", h, k)
						return
					}
				}
				done <- nil
			}()
		}
		for g := 0; g < 4; g++ {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
}
