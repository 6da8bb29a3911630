package reconcile

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkComplete runs complete reconciliation at the paper's size (Table 3:
// n = 4000 blocks a side, m = 32768, k = 6, universe 2n - n0) through the codec, with
// CBF(U) built beforehand (once per file). one-way is the paper's measure (A sends its
// filter until A holds everything); two-way also brings B up to S_A ∪ S_B. The
// figure of interest is compute-ms: the sessions' compute time per exchange, and
// after-send-ms the same without building A's filter (the paper's interval starts
// when A sends it). prebuilt=true gives both sides their filters ready (Filters), as
// a peer that keeps them between sessions has.
func BenchmarkComplete(b *testing.B) {
	for _, n0 := range []int{3000, 2000, 1000, 500} {
		for _, oneWay := range []bool{true, false} {
			for _, payload := range []bool{false, true} {
				for _, warm := range []bool{false, true} {
					name := fmt.Sprintf("n0=%d/oneway=%v/blocks=%v/prebuilt=%v", n0, oneWay, payload, warm)
					b.Run(name, func(b *testing.B) { benchComplete(b, 4000, n0, oneWay, payload, warm) })
				}
			}
		}
	}
}

func benchComplete(b *testing.B, n, n0 int, oneWay, payload, warm bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	u := 2*n - n0
	uv, _ := NewUniverse(u)
	a, bs := splitSets(rng, u, n, n, n0)
	cfg := Config{M: 32768, K: 6, OneWay: oneWay}
	p, _ := cfg.Params(n)
	if _, err := uv.Filter(p); err != nil { // warm the per-file cache
		b.Fatal(err)
	}
	cfgA, cfgB := cfg, cfg
	if warm { // each peer keeps its own filter between sessions
		cfgA.Filters, _ = NewFilters(uv, a)
		cfgB.Filters, _ = NewFilters(uv, bs)
		if _, err := cfgA.Filters.CBF(p); err != nil {
			b.Fatal(err)
		}
		if _, err := cfgB.Filters.CBF(p); err != nil {
			b.Fatal(err)
		}
	}
	var sa, sb Blocks
	if payload {
		sa, sb = storeOf(a, 64), storeOf(bs, 64)
	}
	var compute, reconcile time.Duration
	var wire, redundant int
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		A, _ := NewSession(uint64(i), cfgA, uv, a, sa)
		B, _ := NewSession(uint64(i), cfgB, uv, bs, sb)
		if err := Run(A, B, Limits{}); err != nil {
			b.Fatal(err)
		}
		oa, ob := A.Outcome(), B.Outcome()
		if oa.Missed != 0 {
			b.Fatal("missed blocks")
		}
		compute += oa.Compute + ob.Compute
		reconcile += oa.Compute + ob.Compute - oa.Build
		wire += oa.WireBytes()
		redundant += oa.Redundant
	}
	b.ReportMetric(float64(compute.Microseconds())/1000/float64(b.N), "compute-ms")
	b.ReportMetric(float64(reconcile.Microseconds())/1000/float64(b.N), "after-send-ms")
	b.ReportMetric(float64(wire)/float64(b.N), "wire-B")
	b.ReportMetric(float64(redundant)/float64(b.N), "redundant")
}

// BenchmarkByersResponder is B's side of Byers at the paper's size: decode A's Bloom
// filter and pick the coded blocks it lacks (no erasure decoding).
func BenchmarkByersResponder(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	const nn, n0 = 8191, 3000
	uv, _ := NewUniverse(nn)
	each := (nn + n0) / 2
	a, bs := splitSets(rng, nn, each, each+1, n0)
	cfg := Config{Method: Byers, M: 32768, K: 6, OneWay: true}
	A, _ := NewSession(1, cfg, uv, a, nil)
	if err := A.Start(); err != nil {
		b.Fatal(err)
	}
	filter := A.Ready()[0]
	b.ResetTimer()
	for b.Loop() {
		B, _ := NewSession(1, cfg, uv, bs, nil)
		if err := B.Step(filter); err != nil {
			b.Fatal(err)
		}
		B.Ready()
	}
}

// BenchmarkCodec encodes and decodes the paper-size filter message (16 KiB of counters).
func BenchmarkCodec(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	uv, _ := NewUniverse(6000)
	a, _ := splitSets(rng, 6000, 4000, 4000, 2000)
	A, _ := NewSession(1, Config{M: 32768, K: 6}, uv, a, nil)
	if err := A.Start(); err != nil {
		b.Fatal(err)
	}
	m := A.Ready()[0]
	var buf []byte
	b.SetBytes(int64(m.EncodedSize()))
	b.ResetTimer()
	for b.Loop() {
		var err error
		buf, err = m.AppendBinary(buf[:0])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Decode(buf, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
