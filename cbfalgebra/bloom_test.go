package cbfalgebra

import (
	"errors"
	"testing"
)

func TestBloomFilter(t *testing.T) {
	b, err := NewBloom(1<<14, 6, WithHash(HashSHA1), WithCounterBits(8), WithSeed(2))
	if err != nil {
		t.Fatal(err)
	}
	if p := b.Params(); p != (Params{M: 1 << 14, K: 6, R: 1, Hash: HashSHA1, Seed: 2}) {
		t.Fatalf("Params = %v", p)
	}
	in, out := keys("bin", 1000), keys("bout", 20000)
	for _, k := range in {
		b.Add(k)
	}
	for _, k := range in {
		if !b.Contains(k) {
			t.Fatalf("false negative %s", k)
		}
	}
	fp := 0
	for _, k := range out {
		if b.Contains(k) {
			fp++
		}
	}
	// The plain BF and a CBF with the same hashing answer identically.
	c, _ := NewFromParams(Params{M: 1 << 14, K: 6, R: 4, Hash: HashSHA1, Seed: 2})
	for _, k := range in {
		c.Insert(k)
	}
	fromC, err := BloomOf(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range out {
		if c.Contains(k) != b.Contains(k) || fromC.Contains(k) != b.Contains(k) {
			t.Fatalf("CBF and BF disagree on %s", k)
		}
	}
	if want := FP(1<<14, 6, 1000); float64(fp)/float64(len(out)) > 2*want+0.002 {
		t.Fatalf("fp %v, theory %v", float64(fp)/float64(len(out)), want)
	}
	if b.Len() != 1000 || b.FillRatio() != fromC.FillRatio() || b.FillRatio() != c.FillRatio() {
		t.Fatalf("Len %d fill %v vs %v", b.Len(), b.FillRatio(), c.FillRatio())
	}
	d := b.Clone()
	d.Reset()
	if d.FillRatio() != 0 || b.FillRatio() == 0 || d.Len() != 0 {
		t.Fatal("Clone/Reset share state")
	}
	if b.ContainsLocations([]uint32{1 << 20}) || b.Bit(-1) || b.Bit(1<<14) {
		t.Fatal("out-of-range address")
	}
	if _, err := NewBloom(1000, 6, WithHash(HashSHA1)); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("sha1 with m=1000: %v", err)
	}
	if _, err := NewBloom(0, 6); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("m=0: %v", err)
	}
	if _, err := BloomOf(nil); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("BloomOf(nil): %v", err)
	}
}
