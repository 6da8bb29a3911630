package cbfalgebra

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"testing"
)

// bigSHA1Locations computes the paper's addresses independently: the digests
// are concatenated into one big integer and address j is read with shifts.
func bigSHA1Locations(key []byte, m, k int, seed uint64) []uint32 {
	a := 0
	for 1<<a < m {
		a++
	}
	t := (k*a + 159) / 160
	var all []byte
	for q := 1; q <= t; q++ {
		var msg []byte
		if seed != 0 {
			msg = binary.BigEndian.AppendUint64(msg, seed)
		}
		msg = append(msg, bytes.Repeat(key, q)...)
		d := sha1.Sum(msg)
		all = append(all, d[:]...)
	}
	total := len(all) * 8
	x := new(big.Int).SetBytes(all)
	mask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(a)), big.NewInt(1))
	var out []uint32
	for j := 0; j < k; j++ {
		v := new(big.Int).Rsh(x, uint(total-(j+1)*a))
		out = append(out, uint32(v.And(v, mask).Uint64()))
	}
	return out
}

func TestSHA1KnownAnswers(t *testing.T) {
	// SHA1("hello") = aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d: with m = 2^16
	// the addresses are its first 16-bit big-endian groups.
	p := Params{M: 1 << 16, K: 4, R: 4, Hash: HashSHA1}
	got := p.Locations(nil, []byte("hello"))
	want := []uint32{0xaaf4, 0xc61d, 0xdcc5, 0xe8a2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sha1 m=2^16 k=4 hello: got %x, want %x", got, want)
	}
	// m = 2^4, k = 3: the first three nibbles a, a, f; a coincides, so
	// counter 10 moves twice.
	p = Params{M: 16, K: 3, R: 4, Hash: HashSHA1}
	if got := p.Locations(nil, []byte("hello")); fmt.Sprint(got) != "[10 10 15]" {
		t.Fatalf("sha1 m=16 k=3 hello: got %v", got)
	}
	c, _ := NewFromParams(p)
	c.Insert([]byte("hello"))
	if c.Counter(10) != 2 || c.Counter(15) != 1 {
		t.Fatalf("coinciding addresses: counter 10 = %d, 15 = %d; want 2, 1", c.Counter(10), c.Counter(15))
	}
	// The element concatenated with itself: SHA1("hellohello") starts the
	// second digest when k*A > 160 (m = 2^17, k = 10: T = 2).
	for _, tc := range []struct {
		m, k int
		seed uint64
		key  string
	}{
		{1 << 17, 10, 0, "hello"},
		{1 << 15, 4, 0, "the quick brown fox"},
		{1 << 15, 6, 0, "the quick brown fox"},
		{1 << 16, 6, 0, ""},
		{1 << 17, 6, 0, "word"},
		{1 << 32, 64, 0, "x"},
		{2, 64, 0, "y"},
		{1 << 20, 33, 7, "seeded"},
		{1 << 13, 64, 1<<63 + 5, "seeded-too"},
	} {
		p := Params{M: tc.m, K: tc.k, R: 4, Hash: HashSHA1, Seed: tc.seed}
		got := p.Locations(nil, []byte(tc.key))
		want := bigSHA1Locations([]byte(tc.key), tc.m, tc.k, tc.seed)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v key %q:\n got %v\nwant %v", p, tc.key, got, want)
		}
	}
}

func TestLocationsRangeAndDeterminism(t *testing.T) {
	for _, p := range []Params{
		{M: 1, K: 3, R: 4},
		{M: 1000, K: 7, R: 4, Seed: 99},
		{M: 1 << 20, K: 6, R: 8},
		{M: int(MaxM), K: 6, R: 4},
		{M: 2, K: 5, R: 4, Hash: HashSHA1},
		{M: 1 << 20, K: 6, R: 16, Hash: HashSHA1, Seed: 3},
	} {
		for i := 0; i < 500; i++ {
			key := []byte(fmt.Sprint("key-", i))
			a := p.Locations(nil, key)
			b := p.Locations(make([]uint32, 2, 10), key)[2:]
			if len(a) != p.K || fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("%v: Locations not deterministic: %v vs %v", p, a, b)
			}
			for _, x := range a {
				if int64(x) >= int64(p.M) {
					t.Fatalf("%v: address %d out of range", p, x)
				}
			}
		}
	}
	// Seeds change the addresses of both families.
	for _, h := range []HashFamily{HashFast, HashSHA1} {
		p := Params{M: 1 << 20, K: 6, R: 4, Hash: h}
		q := p
		q.Seed = 1
		if fmt.Sprint(p.Locations(nil, []byte("a"))) == fmt.Sprint(q.Locations(nil, []byte("a"))) {
			t.Errorf("%s: seed does not change addresses", h)
		}
	}
}

// TestFastUniformity is a coarse chi-square check of the fast family.
func TestFastUniformity(t *testing.T) {
	const m, k, n = 1000, 4, 50000
	p := Params{M: m, K: k, R: 4}
	counts := make([]int, m)
	var buf []uint32
	for i := 0; i < n; i++ {
		buf = p.Locations(buf[:0], []byte(fmt.Sprint(i)))
		for _, x := range buf {
			counts[x]++
		}
	}
	exp := float64(n*k) / m
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - exp
		chi += d * d / exp
	}
	// 999 degrees of freedom: mean 999, sd ~45; 1300 is ~6.7 sd.
	if chi > 1300 {
		t.Fatalf("chi-square %.0f too large for 999 degrees of freedom", chi)
	}
}

func TestParseHashFamily(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want HashFamily
		err  bool
	}{
		{"fast", HashFast, false}, {"sha1", HashSHA1, false}, {"SHA1", HashSHA1, false},
		{"md5", 0, true}, {"", 0, true},
	} {
		got, err := ParseHashFamily(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseHashFamily(%q) = %v, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidParams) {
			t.Errorf("ParseHashFamily(%q) error %v does not wrap ErrInvalidParams", tc.in, err)
		}
		if err == nil {
			if back, _ := ParseHashFamily(got.String()); back != got {
				t.Errorf("String round trip of %v failed", got)
			}
		}
	}
	if s := HashFamily(9).String(); s != "HashFamily(9)" {
		t.Errorf("unknown family String = %q", s)
	}
}
