package reconcile

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkCompressFilter codes the paper's filter (m = 32768, n = 4000, r = 4):
// ns/op is the encoder, pct_of_rm the size against r*m bits.
func BenchmarkCompressFilter(b *testing.B) {
	_, data := optimalCBF(b, 32768, 4000, 4, 1)
	var z []byte
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		z = CompressFilter(z[:0], data)
	}
	b.ReportMetric(100*float64(len(z)*8)/float64(4*32768), "pct_of_rm")
}

// BenchmarkDecompressFilter decodes it (the CCBF receiver's extra work before
// cbfalgebra.DecodeCBF).
func BenchmarkDecompressFilter(b *testing.B) {
	_, data := optimalCBF(b, 32768, 4000, 4, 1)
	z := CompressFilter(nil, data)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecompressFilter(z, len(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIBLTEncode makes the cells for a difference of d among n = 4000 blocks
// (1.5 d cells, what a decode needs).
func BenchmarkIBLTEncode(b *testing.B) {
	for _, d := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("n=4000/d=%d", d), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			s, _ := splitSets(rng, 4000+d, 4000, 4000, 4000-d)
			idx := s.Indices()
			cells := ibltCellsFor(float64(2 * d))
			for b.Loop() {
				e := newIBLTEncoder(0, idx)
				e.extend(cells)
			}
			b.ReportMetric(float64(cells), "cells")
		})
	}
}

// BenchmarkIBLTDecode peels a symmetric difference of d elements from cells that
// suffice (subtraction and peeling; the encoders are built outside the loop).
func BenchmarkIBLTDecode(b *testing.B) {
	for _, d := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 4))
			x, y := splitSets(rng, 4000+d, 4000, 4000, 4000-d/2)
			cells := 3*d + 64
			ex, ey := newIBLTEncoder(0, x.Indices()), newIBLTEncoder(0, y.Indices())
			ex.extend(cells)
			ey.extend(cells)
			for b.Loop() {
				dec := newIBLTDecoder(0, 4000+d)
				if err := dec.add(ex.cells, ey.cells); err != nil || !dec.done() {
					b.Fatal("no decode", err)
				}
			}
		})
	}
}

// BenchmarkMethods runs one whole one-way session (offers, no payloads) per method
// for n = 4000 blocks a side and difference d each way, the experiment's setting:
// wire_B is the bytes on the wire, rtt the round trips, session_us both sessions'
// own compute (Start and Step).
func BenchmarkMethods(b *testing.B) {
	for _, d := range []int{10, 1000} {
		for _, m := range []Method{Complete, CCBF, Bitfield, IBLT} {
			b.Run(fmt.Sprintf("d=%d/%v", d, m), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(5, 6))
				u := 4000 + d
				uv, _ := NewUniverse(u)
				x, y := splitSets(rng, u, 4000, 4000, 4000-d)
				cfg := Config{Method: m, OneWay: true, M: 32768, K: 6}
				if !m.usesCBF() {
					cfg.M, cfg.K = 0, 0
				}
				fy, _ := NewFilters(uv, y)
				var o Outcome
				var compute time.Duration
				for b.Loop() {
					cb := cfg
					cb.Filters = fy
					A, _ := NewSession(1, cfg, uv, x, nil)
					B, _ := NewSession(1, cb, uv, y, nil)
					if err := Run(A, B, Limits{}); err != nil {
						b.Fatal(err)
					}
					o = A.Outcome()
					compute += o.Compute + B.Outcome().Compute
				}
				b.ReportMetric(float64(compute.Microseconds())/float64(b.N), "session_us")
				b.ReportMetric(float64(o.WireBytes()), "wire_B")
				b.ReportMetric(float64(o.Flights)/2, "rtt")
			})
		}
	}
}

// BenchmarkBitfield encodes and decodes the bitfield of a 4000-block set in a file
// of 8000 blocks (the Bitfield method's filter).
func BenchmarkBitfield(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	s, _ := splitSets(rng, 8000, 4000, 4000, 2000)
	var buf []byte
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			buf = s.AppendBitfield(buf[:0])
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
	buf = s.AppendBitfield(nil)
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeBitfield(buf, 8000); err != nil {
				b.Fatal(err)
			}
		}
	})
}
