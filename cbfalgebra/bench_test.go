package cbfalgebra

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchKeys are 32-byte keys, like block hashes.
func benchKeys(n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 1))
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, 32)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		out[i] = b
	}
	return out
}

func benchSizes() []int { return []int{15, 17, 20, 24} }

func BenchmarkInsert(b *testing.B) {
	ks := benchKeys(1 << 12)
	for _, h := range []HashFamily{HashFast, HashSHA1} {
		for _, lg := range benchSizes() {
			b.Run(fmt.Sprintf("hash=%s/m=2^%d", h, lg), func(b *testing.B) {
				c, _ := New(1<<lg, 6, WithHash(h))
				b.ReportAllocs()
				cpu := cpuTime()
				for i := 0; b.Loop(); i++ {
					c.Insert(ks[i&(len(ks)-1)])
				}
				reportCPUPerOp(b, cpuTime()-cpu)
			})
		}
	}
}

func BenchmarkContains(b *testing.B) {
	ks := benchKeys(1 << 12)
	for _, h := range []HashFamily{HashFast, HashSHA1} {
		for _, lg := range benchSizes() {
			b.Run(fmt.Sprintf("hash=%s/m=2^%d", h, lg), func(b *testing.B) {
				c, _ := New(1<<lg, 6, WithHash(h))
				for _, k := range ks[:len(ks)/2] {
					c.Insert(k)
				}
				b.ReportAllocs()
				hits := 0
				cpu := cpuTime()
				for i := 0; b.Loop(); i++ {
					if c.Contains(ks[i&(len(ks)-1)]) {
						hits++
					}
				}
				reportCPUPerOp(b, cpuTime()-cpu)
				_ = hits
			})
		}
	}
}

// BenchmarkInsertLocations and BenchmarkContainsLocations isolate the
// counter updates from hashing: random addresses over filters up to 2^24
// counters, where cache misses dominate.
func BenchmarkContainsLocations(b *testing.B) {
	for _, lg := range benchSizes() {
		b.Run(fmt.Sprintf("m=2^%d", lg), func(b *testing.B) {
			p := Params{M: 1 << lg, K: 6, R: 4}
			c, _ := NewFromParams(p)
			ks := benchKeys(1 << 12)
			locs := make([][]uint32, len(ks))
			for i, k := range ks {
				locs[i] = p.Locations(nil, k)
				if i%2 == 0 {
					c.InsertLocations(locs[i])
				}
			}
			b.ReportAllocs()
			cpu := cpuTime()
			for i := 0; b.Loop(); i++ {
				c.ContainsLocations(locs[i&(len(locs)-1)])
			}
			reportCPUPerOp(b, cpuTime()-cpu)
		})
	}
}

func randomFilter(p Params, rng *rand.Rand, load float64) *CBF {
	c, _ := NewFromParams(p)
	n := int(load * float64(p.M) / float64(p.K))
	var locs []uint32
	var key [8]byte
	for i := 0; i < n; i++ {
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		locs = p.Locations(locs[:0], key[:])
		c.InsertLocations(locs)
	}
	return c
}

// reportCPUPerOp reports process CPU nanoseconds per operation beside the
// wall-clock ns/op, which a loaded machine inflates.
func reportCPUPerOp(b *testing.B, cpu time.Duration) {
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// reportCounters reports counters per second of wall time and per second
// of process CPU time (the per-core rate, robust to a loaded machine).
func reportCounters(b *testing.B, m int, cpu time.Duration) {
	total := float64(m) * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds(), "counters/s")
	if cpu > 0 {
		b.ReportMetric(total/cpu.Seconds(), "counters/cpu-s")
	}
}

// BenchmarkAlgebra measures each operation at m = 2^17 and 2^24, r = 4,
// reporting counters per second (goal: >= 1e9 on one core).
func BenchmarkAlgebra(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, lg := range []int{17, 24} {
		p := Params{M: 1 << lg, K: 4, R: 4}
		u := randomFilter(p, rng, 1.5)
		a, bb := u.Clone(), u.Clone()
		// A and B: random halves of the counters' mass, as by deleting elements.
		for i := range a.words {
			a.words[i] = a.l.minw(u.words[i], rng.Uint64()&0x3333333333333333)
			bb.words[i] = bb.l.minw(u.words[i], rng.Uint64()&0x3333333333333333)
		}
		dst, _ := NewFromParams(p)
		ops := []struct {
			name string
			f    func() error
		}{
			{"complement", func() error { return ComplementInto(dst, u, bb) }},
			{"intersect", func() error { return IntersectInto(dst, a, bb) }},
			{"subtract", func() error { return SubtractInto(dst, a, bb, u) }},
			{"union", func() error { return UnionInto(dst, a, bb, u) }},
			{"xor", func() error { return XorInto(dst, a, bb, u) }},
			{"lesseq", func() error { _, err := LessEq(a, u); return err }},
		}
		for _, op := range ops {
			b.Run(fmt.Sprintf("op=%s/m=2^%d", op.name, lg), func(b *testing.B) {
				b.ReportAllocs()
				cpu := cpuTime()
				for b.Loop() {
					if err := op.f(); err != nil {
						b.Fatal(err)
					}
				}
				reportCounters(b, p.M, cpuTime()-cpu)
			})
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, lg := range []int{17, 24} {
		c := randomFilter(Params{M: 1 << lg, K: 4, R: 4}, rand.New(rand.NewPCG(3, 3)), 1)
		buf := make([]byte, 0, c.EncodedSize())
		b.Run(fmt.Sprintf("m=2^%d", lg), func(b *testing.B) {
			b.SetBytes(int64(c.EncodedSize()))
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = c.AppendBinary(buf[:0])
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, lg := range []int{17, 24} {
		c := randomFilter(Params{M: 1 << lg, K: 4, R: 4}, rand.New(rand.NewPCG(3, 3)), 1)
		enc, _ := c.MarshalBinary()
		b.Run(fmt.Sprintf("bytes/m=2^%d", lg), func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if _, err := DecodeCBF(enc, len(enc)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("reader/m=2^%d", lg), func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if _, err := ReadCBF(bytes.NewReader(enc), len(enc)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAlgebraReference runs the plain per-counter reference
// implementation (swar_test.go) of each operation on the same inputs as
// BenchmarkAlgebra: the baseline for the SWAR speed-up.
func BenchmarkAlgebraReference(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, lg := range []int{17, 24} {
		p := Params{M: 1 << lg, K: 4, R: 4}
		u := randomFilter(p, rng, 1.5)
		a, bb := u.Clone(), u.Clone()
		for i := range a.words {
			a.words[i] = a.l.minw(u.words[i], rng.Uint64()&0x3333333333333333)
			bb.words[i] = bb.l.minw(u.words[i], rng.Uint64()&0x3333333333333333)
		}
		dst, _ := NewFromParams(p)
		for _, name := range []string{"complement", "intersect", "subtract", "union", "xor"} {
			op := refOps[name]
			b.Run(fmt.Sprintf("op=%s/m=2^%d", name, lg), func(b *testing.B) {
				cpu := cpuTime()
				for b.Loop() {
					refApply(dst, a, bb, u, op)
				}
				reportCounters(b, p.M, cpuTime()-cpu)
			})
		}
	}
}

// refApply computes dst_i = op(a_i, b_i, u_i) one counter at a time.
func refApply(dst, a, b, u *CBF, op refOp) {
	l := dst.l
	for i := 0; i < dst.p.M; i++ {
		w, off := i>>l.shift, (uint(i)&uint(l.idxMask))*l.r
		v := op((a.words[w]>>off)&l.max, (b.words[w]>>off)&l.max, (u.words[w]>>off)&l.max, l.max)
		dst.words[w] = dst.words[w]&^(l.max<<off) | v<<off
	}
}
