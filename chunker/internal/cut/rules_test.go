package cut

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/jc"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/ultracdc"
	"github.com/zeebo/xxh3"
)

// TestEditRules compares cut rules on what an edit costs: the bytes of the
// blocks of v2 that v1 lacks when v2 is v1 (16 MiB of random bytes) with
// 1 MiB overwritten or 1 KiB inserted at a random place, over many places and
// data seeds. It runs only with CUT_RULES=1 (about a minute).
func TestEditRules(t *testing.T) {
	if os.Getenv("CUT_RULES") == "" {
		t.Skip("CUT_RULES=1 runs it")
	}
	type rule struct {
		name  string
		cuts  func([]byte) []int
		level int
	}
	gearRule := func(min, normal, max, level int) rule {
		g := newGear(CDC{Min: min << 10, Normal: normal << 10, Max: max << 10}, level)
		return rule{fmt.Sprintf("gear nc%d %dK/%dK/%dK", level, min, normal, max), func(d []byte) []int { return gearCuts(d, g) }, level}
	}
	libRule := func(algo string, min, normal, max int) rule {
		c := CDC{Min: min << 10, Normal: normal << 10, Max: max << 10}
		return rule{fmt.Sprintf("%s %dK/%dK/%dK", algo, min, normal, max), func(d []byte) []int { return algoCuts(t, algo, d, c) }, -1}
	}
	rules := []rule{
		gearRule(96, 128, 1024, 2),
		gearRule(96, 128, 1024, 1),
		gearRule(96, 128, 1024, 0),
		gearRule(56, 64, 1024, 0),
		gearRule(56, 64, 256, 0),
		gearRule(48, 64, 192, 0),
		gearRule(64, 128, 256, 0),
		gearRule(56, 64, 1024, 1),
		gearRule(56, 64, 256, 1),
		libRule("ultracdc-v1.0.0", 96, 128, 1024),
		libRule("jc-v1.1.0", 96, 128, 1024),
	}
	const size, seeds, places = 16 << 20, 4, 12
	for _, r := range rules {
		var ow, ins []float64
		var blocks, total int
		for s := range seeds {
			v1 := testData(uint64(100+s), size)
			c1 := r.cuts(v1)
			blocks += len(c1)
			total += size
			have := blockSet(v1, c1)
			rng := rand.New(rand.NewPCG(uint64(s), 7))
			for range places {
				p := size/4 + rng.IntN(size/2)
				v2 := slices.Clone(v1)
				copy(v2[p:p+1<<20], testData(uint64(1000+p), 1<<20))
				ow = append(ow, newBytes(v2, r.cuts(v2), have))
				v3 := slices.Concat(v1[:p], testData(uint64(2000+p), 1<<10), v1[p:])
				ins = append(ins, newBytes(v3, r.cuts(v3), have))
			}
		}
		slices.Sort(ow)
		slices.Sort(ins)
		avg := float64(total) / float64(blocks) / 1024
		t.Logf("%-32s avg %5.1f KiB | overwrite 1 MiB: mean %6.0f KiB p90 %6.0f max %6.0f | insert 1 KiB: mean %5.0f KiB p90 %5.0f max %5.0f",
			r.name, avg, mean(ow), ow[len(ow)*9/10], ow[len(ow)-1], mean(ins), ins[len(ins)*9/10], ins[len(ins)-1])
	}
}

func blockSet(d []byte, cuts []int) map[[2]uint64]bool {
	m := map[[2]uint64]bool{}
	for _, n := range cuts {
		m[[2]uint64{xxh3.Hash(d[:n]), uint64(n)}] = true
		d = d[n:]
	}
	return m
}

// newBytes returns the KiB of d's blocks that have lacks.
func newBytes(d []byte, cuts []int, have map[[2]uint64]bool) float64 {
	var n float64
	for _, c := range cuts {
		if !have[[2]uint64{xxh3.Hash(d[:c]), uint64(c)}] {
			n += float64(c)
		}
		d = d[c:]
	}
	return n / 1024
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
