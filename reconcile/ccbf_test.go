package reconcile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// optimalCBF returns the CBF of n random blocks with m counters of r bits and the
// optimal k = round(ln2 m/n), in the wire format.
func optimalCBF(t testing.TB, m, n, r int, seed uint64) (*cbfalgebra.CBF, []byte) {
	c, err := cbfalgebra.New(m, cbfalgebra.OptimalK(m, n), cbfalgebra.WithCounterBits(r))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	var key []byte
	for range n {
		key = BlockKey(key[:0], int(rng.Uint32()))
		c.Insert(key)
	}
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return c, data
}

// TestCompressFilterRatio: at the optimal load a compressed 4-bit CBF takes at most
// 60 % of r*m bits (the entropy of its counters is about 1.6 bits, 40 %), and it
// decodes to the same filter. Wider counters compress better still.
func TestCompressFilterRatio(t *testing.T) {
	for _, tc := range []struct{ m, n, r int }{
		{32768, 4000, 4}, {32768, 2364, 4}, {4096, 500, 4}, {1 << 18, 1 << 15, 4},
		{32768, 4000, 8}, {32768, 4000, 16},
	} {
		t.Run(fmt.Sprintf("m=%d/n=%d/r=%d", tc.m, tc.n, tc.r), func(t *testing.T) {
			c, data := optimalCBF(t, tc.m, tc.n, tc.r, 1)
			z := CompressFilter(nil, data)
			ratio := float64(len(z)*8) / float64(tc.r*tc.m)
			t.Logf("%d bytes -> %d: %.1f %% of r*m bits", len(data), len(z), 100*ratio)
			if ratio > 0.6 {
				t.Errorf("compressed to %.1f %% of r*m bits, want <= 60 %%", 100*ratio)
			}
			back, err := DecompressFilter(z, len(data))
			if err != nil {
				t.Fatal(err)
			}
			got, err := cbfalgebra.DecodeCBF(back, len(back))
			if err != nil {
				t.Fatal(err)
			}
			if eq, _ := cbfalgebra.Equal(got, c); !eq {
				t.Fatal("decompressed filter differs")
			}
			if _, err := DecompressFilter(z, len(data)-1); !errors.Is(err, ErrLimit) {
				t.Fatalf("limit below the size: %v", err)
			}
		})
	}
	// Edge cases: empty, all zero (a run), incompressible.
	rng := rand.New(rand.NewPCG(2, 3))
	noise := make([]byte, 70000)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	for _, in := range [][]byte{nil, {}, {7}, make([]byte, 200000), noise} {
		back, err := DecompressFilter(CompressFilter(nil, in), len(in))
		if err != nil || !slices.Equal(back, in) {
			t.Fatalf("round trip of %d bytes: %v", len(in), err)
		}
	}
}

// TestCCBFSameAsComplete: CCBF sessions answer exactly what Complete sessions
// answer; only the filter bytes on the wire differ.
func TestCCBFSameAsComplete(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	uv, _ := NewUniverse(7000)
	a, b := splitSets(rng, 7000, 4000, 4000, 1000)
	var wanted [2]string
	var filterBytes [2]int
	for i, m := range []Method{Complete, CCBF} {
		A, _ := NewSession(1, Config{Method: m}, uv, a, nil)
		B, _ := NewSession(1, Config{Method: m}, uv, b, nil)
		if err := Run(A, B, Limits{}); err != nil {
			t.Fatal(err)
		}
		wanted[i] = fmt.Sprint(A.Wanted(), B.Wanted())
		filterBytes[i] = A.Outcome().WireSent[MsgFilter]
	}
	if wanted[0] != wanted[1] {
		t.Fatal("CCBF answers differ from Complete's")
	}
	t.Logf("filter message: complete %d bytes, ccbf %d (%.1f %%)", filterBytes[0], filterBytes[1], 100*float64(filterBytes[1])/float64(filterBytes[0]))
	if filterBytes[1]*10 > filterBytes[0]*6 {
		t.Fatalf("ccbf filter %d bytes, complete %d: not below 60 %%", filterBytes[1], filterBytes[0])
	}
}

// TestCompressFilterChunkTables: every chunk of a compressed filter carries its own
// Huffman table. huff0's default policy reused the first chunk's table for a later
// chunk of the same statistics when that was smaller, and left it out of the output,
// so that DecompressFilter failed ("Huffman table: corrupt input") on some filters
// of more than 64 KiB.
func TestCompressFilterChunkTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tail := range []int{300, 3000, ccbfChunk} {
		in := make([]byte, ccbfChunk+tail)
		for i := range in { // mostly zero counters, a few ones and twos
			switch v := rng.IntN(100); {
			case v < 3:
				in[i] = 0x01
			case v < 5:
				in[i] = 0x10
			case v < 6:
				in[i] = 0x12
			}
		}
		back, err := DecompressFilter(CompressFilter(nil, in), len(in))
		if err != nil || !slices.Equal(back, in) {
			t.Fatalf("round trip of %d bytes: %v", len(in), err)
		}
	}
}
