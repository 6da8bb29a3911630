package erasure

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func randomBlocks(rng *rand.Rand, n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, size)
		for j := range out[i] {
			out[i][j] = byte(rng.Uint32())
		}
	}
	return out
}

func TestNewParams(t *testing.T) {
	tests := []struct {
		kk, nn, size int
		opts         []Option
		ok           bool
		gf16         bool
	}{
		{1, 1, 1, nil, true, false},
		{10, 10, 3, nil, true, false},
		{10, 14, 3, nil, true, false},
		{200, 256, 1, nil, true, false},
		{200, 257, 64, nil, true, true},
		{200, 257, 65, nil, false, true},
		{5000, 8191, 64, nil, true, true},
		{7500, 8191, 64, nil, true, true},
		{10, 14, 64, []Option{WithGF16(true)}, true, true},
		{10, 14, 3, []Option{WithGF16(true)}, false, true},
		{0, 1, 1, nil, false, false},
		{5, 4, 1, nil, false, false},
		{10, MaxBlocks + 1, 64, nil, false, true},
		{10, 10, 0, nil, false, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d-%d-%d", tc.nn, tc.kk, tc.size), func(t *testing.T) {
			c, err := New(tc.kk, tc.nn, tc.size, tc.opts...)
			if tc.ok != (err == nil) {
				t.Fatalf("New: err = %v, want ok=%v", err, tc.ok)
			}
			if err != nil {
				if !errors.Is(err, ErrParams) {
					t.Fatalf("error %v does not wrap ErrParams", err)
				}
				return
			}
			if c.K() != tc.kk || c.N() != tc.nn || c.BlockSize() != tc.size || c.GF16() != tc.gf16 {
				t.Fatalf("got %v gf16=%v", c, c.GF16())
			}
		})
	}
}

// TestAnyKDecode is the property of an MDS code: every subset of kk coded blocks gives
// back the source.
func TestAnyKDecode(t *testing.T) {
	codes := []struct{ kk, nn, size int }{
		{1, 1, 5}, {1, 4, 5}, {4, 4, 7}, {10, 30, 16}, {100, 256, 1}, {200, 300, 64}, {500, 1023, 128},
	}
	if !testing.Short() {
		codes = append(codes, struct{ kk, nn, size int }{5000, 8191, 64})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cc := range codes {
		c, err := New(cc.kk, cc.nn, cc.size)
		if err != nil {
			t.Fatal(err)
		}
		src := randomBlocks(rng, cc.kk, cc.size)
		orig := make([][]byte, len(src))
		for i := range src {
			orig[i] = bytes.Clone(src[i])
		}
		coded, err := c.Encode(src)
		if err != nil {
			t.Fatal(err)
		}
		for trial := range 5 {
			perm := rng.Perm(cc.nn)
			take := cc.kk + trial%2 // exactly kk, or one more
			take = min(take, cc.nn)
			var blocks []Block
			for _, i := range perm[:take] {
				blocks = append(blocks, Block{Index: i, Data: bytes.Clone(coded[i])})
			}
			// duplicates are harmless
			blocks = append(blocks, blocks[0])
			got, err := c.Decode(blocks)
			if err != nil {
				t.Fatalf("%v trial %d: %v", c, trial, err)
			}
			for i := range orig {
				if !bytes.Equal(got[i], orig[i]) {
					t.Fatalf("%v trial %d: block %d differs", c, trial, i)
				}
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	c, err := New(4, 8, 16)
	if err != nil {
		t.Fatal(err)
	}
	coded, err := c.Encode(randomBlocks(rand.New(rand.NewPCG(3, 4)), 4, 16))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		blocks []Block
		want   error
	}{
		{"too few", []Block{{0, coded[0]}, {5, coded[5]}, {7, coded[7]}}, ErrTooFewBlocks},
		{"too few with duplicates", []Block{{0, coded[0]}, {0, coded[0]}, {5, coded[5]}, {7, coded[7]}}, ErrTooFewBlocks},
		{"index high", []Block{{8, coded[0]}}, ErrBlock},
		{"index negative", []Block{{-1, coded[0]}}, ErrBlock},
		{"wrong size", []Block{{1, coded[0][:3]}}, ErrBlock},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Decode(tc.blocks); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := c.Encode(coded[:3]); !errors.Is(err, ErrBlock) {
		t.Fatalf("Encode short: %v", err)
	}
}

func TestGenerations(t *testing.T) {
	c, err := New(8, 12, 64)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, size := range []int{0, 1, 511, 512, 513, 5000} {
		file := make([]byte, size)
		for i := range file {
			file[i] = byte(rng.Uint32())
		}
		g, err := NewGenerations(c, int64(size))
		if err != nil {
			t.Fatal(err)
		}
		coded, err := g.Encode(file)
		if err != nil {
			t.Fatal(err)
		}
		// keep a random kk of each generation
		var blocks []Block
		for gen := range coded {
			for _, i := range rng.Perm(c.N())[:c.K()] {
				blocks = append(blocks, Block{Index: g.ID(gen, i), Data: coded[gen][i]})
			}
		}
		got, err := g.Decode(blocks)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if !bytes.Equal(got, file) {
			t.Fatalf("size %d: round trip differs", size)
		}
		if size > 0 {
			// one generation short of a block must fail
			if _, err := g.Decode(blocks[1:]); !errors.Is(err, ErrTooFewBlocks) {
				t.Fatalf("size %d: short decode err = %v", size, err)
			}
		}
	}
}

func benchCode(b *testing.B, kk, nn, size int, decode bool) {
	c, err := New(kk, nn, size)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	coded, err := c.Encode(randomBlocks(rng, kk, size))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(kk * size))
	if !decode {
		b.ResetTimer()
		for b.Loop() {
			if err := c.EncodeInto(coded); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	// decode from the parity blocks plus the last source blocks: every source block
	// among the first nn-kk is missing, the worst case for a systematic code.
	lost := min(nn-kk, kk)
	shards := make([][]byte, nn)
	b.ResetTimer()
	for b.Loop() {
		copy(shards, coded)
		for i := range lost {
			shards[i] = nil
		}
		if err := c.Reconstruct(shards); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, cc := range []struct{ kk, nn, size int }{{200, 256, 4096}, {5000, 8191, 64}, {7500, 8191, 64}, {5000, 8191, 1024}} {
		b.Run(fmt.Sprintf("RS(%d,%d)x%d", cc.nn, cc.kk, cc.size), func(b *testing.B) { benchCode(b, cc.kk, cc.nn, cc.size, false) })
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, cc := range []struct{ kk, nn, size int }{{200, 256, 4096}, {5000, 8191, 64}, {7500, 8191, 64}, {5000, 8191, 1024}} {
		b.Run(fmt.Sprintf("RS(%d,%d)x%d", cc.nn, cc.kk, cc.size), func(b *testing.B) { benchCode(b, cc.kk, cc.nn, cc.size, true) })
	}
}

// FuzzDecode feeds arbitrary blocks (indices, sizes, contents) to small codes of
// both fields: errors are fine, panics are not, and whenever kk distinct genuine
// blocks are present the source comes back.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, uint8(16), false)
	f.Add([]byte{9, 9, 200, 1}, uint8(64), true)
	type setup struct {
		c     *Code
		coded [][]byte
	}
	var codes []setup
	for _, cc := range []struct {
		kk, nn, size int
		gf16         bool
	}{{4, 8, 16, false}, {4, 8, 64, true}, {3, 300, 64, false}} {
		c, err := New(cc.kk, cc.nn, cc.size, WithGF16(cc.gf16))
		if err != nil {
			f.Fatal(err)
		}
		coded, err := c.Encode(randomBlocks(rand.New(rand.NewPCG(1, 1)), cc.kk, cc.size))
		if err != nil {
			f.Fatal(err)
		}
		codes = append(codes, setup{c, coded})
	}
	f.Fuzz(func(t *testing.T, picks []byte, size uint8, corrupt bool) {
		for _, s := range codes {
			var blocks []Block
			genuine := map[int]bool{}
			for j, p := range picks {
				i := int(p) - 8 // some negative, some beyond nn
				if i >= 0 && i < s.c.N() && !corrupt {
					blocks = append(blocks, Block{Index: i, Data: s.coded[i]})
					genuine[i] = true
				} else {
					blocks = append(blocks, Block{Index: i, Data: make([]byte, int(size)+j%2)})
				}
			}
			src, err := s.c.Decode(blocks)
			if err == nil && len(src) != s.c.K() {
				t.Fatalf("%v: %d source blocks", s.c, len(src))
			}
			if err == nil && len(genuine) == len(blocks) && len(genuine) >= s.c.K() {
				for i := range src {
					if !bytes.Equal(src[i], s.coded[i]) {
						t.Fatalf("%v: wrong source block %d", s.c, i)
					}
				}
			}
		}
	})
}
