package cut

import (
	"bytes"
	"context"
	"github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc"
	"io"
	"math"
	"math/rand/v2"
	"testing"
	"testing/iotest"
	"time"

	cdc "github.com/PlakarKorp/go-cdc-chunkers"
	"github.com/reconcile-p2p/reconcile/chunker/internal/blake3sum"
)

// libCuts returns the block lengths go-cdc-chunkers gives for data.
func libCuts(t testing.TB, data []byte, c CDC) []int { return algoCuts(t, Algorithm, data, c) }

// algoCuts returns the block lengths go-cdc-chunkers' algorithm algo gives
// for data.
func algoCuts(t testing.TB, algo string, data []byte, c CDC) []int {
	ch, err := cdc.NewChunker(algo, bytes.NewReader(data), &cdc.ChunkerOpts{MinSize: c.Min, NormalSize: c.Normal, MaxSize: c.Max})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for {
		b, err := ch.Next()
		if len(b) > 0 {
			out = append(out, len(b))
		}
		if err != nil {
			return out
		}
	}
}

// gearCuts returns the block lengths gear gives for data.
func gearCuts(data []byte, g gear) []int {
	var out []int
	for len(data) > 0 {
		n := g.next(data)
		out = append(out, n)
		data = data[n:]
	}
	return out
}

// testData returns n random bytes of seed.
func testData(seed uint64, n int) []byte {
	d := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}).Read(d)
	return d
}

var benchCDC = CDC{Min: 96 << 10, Normal: 128 << 10, Max: 1 << 20}

// BenchmarkGear measures finding the cuts of 64 MiB of random bytes in
// memory (no hashing) with gear against go-cdc-chunkers' Chunker, one after
// the other in each iteration; ratio = library time / gear time.
func BenchmarkGear(b *testing.B) {
	data := testData(1, 64<<20)
	g := newGear(benchCDC, 2)
	var libNs, gearNs int64
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		t0 := time.Now()
		libCuts(b, data, benchCDC)
		t1 := time.Now()
		gearCuts(data, g)
		libNs += int64(t1.Sub(t0))
		gearNs += int64(time.Since(t1))
	}
	b.ReportMetric(float64(libNs)/float64(gearNs), "ratio")
	b.ReportMetric(float64(len(data))*float64(b.N)/float64(gearNs)*1e3, "gearMB/s")
	b.ReportMetric(float64(len(data))*float64(b.N)/float64(libNs)*1e3, "libMB/s")
}

// TestGearSame checks gear's cuts against go-cdc-chunkers' on random bytes.
func TestGearSame(t *testing.T) {
	data := testData(1, 16<<20)
	for _, c := range []CDC{benchCDC, {Min: 1 << 10, Normal: 4 << 10, Max: 16 << 10}, {Min: 1000, Normal: 1024, Max: 5000}} {
		a, b := libCuts(t, data, c), gearCuts(data, newGear(c, 2))
		if len(a) != len(b) {
			t.Fatalf("%v: %d vs %d blocks", c, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%v: block %d: %d vs %d", c, i, a[i], b[i])
			}
		}
	}
}

// TestContentSameAsLibrary checks that Content cuts where go-cdc-chunkers'
// Algorithm does, on random bytes, zeros, short repeats and long repeats, read
// whole, a byte at a time and in odd pieces, one reader after another.
func TestContentSameAsLibrary(t *testing.T) {
	rnd := testData(5, 9<<20+12345)
	zeros := make([]byte, 5<<20+7)
	short := bytes.Repeat([]byte("abcdefg"), 700000)
	long := bytes.Repeat(testData(6, 300<<10), 12)
	small := CDC{Min: 1 << 10, Normal: 4 << 10, Max: 16 << 10}
	for _, c := range []CDC{benchCDC, small, {Min: 64, Normal: 128, Max: 1000}} {
		for _, inputs := range [][][]byte{{rnd}, {zeros}, {short}, {long}, {rnd[:100], nil, long, rnd[5 : c.Max+5], zeros[:c.Min]}} {
			var want []int64
			off := int64(0)
			for _, in := range inputs {
				for _, n := range libCuts(t, in, c) {
					off += int64(n)
					want = append(want, off)
				}
			}
			for _, wrap := range []func(io.Reader) io.Reader{
				func(r io.Reader) io.Reader { return r }, iotest.HalfReader, oddReader,
			} {
				k := 0
				next := func() (io.Reader, error) {
					if k == len(inputs) {
						return nil, nil
					}
					k++
					return wrap(bytes.NewReader(inputs[k-1])), nil
				}
				offs, flat, err := Content(context.Background(), next, c, 2, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(offs)-1 != len(want) || len(flat) != len(want)*HashSize {
					t.Fatalf("%v: %d blocks, want %d", c, len(offs)-1, len(want))
				}
				all := bytes.Join(inputs, nil)
				for i, o := range want {
					if offs[i+1] != o {
						t.Fatalf("%v: cut %d at %d, want %d", c, i, offs[i+1], o)
					}
					if h := blake3sum.Sum256(all[offs[i]:o]); !bytes.Equal(flat[i*HashSize:(i+1)*HashSize], h[:]) {
						t.Fatalf("%v: block %d: wrong hash", c, i)
					}
				}
			}
		}
	}
}

// oddReader reads in pieces of 1 to 70,000 bytes.
func oddReader(r io.Reader) io.Reader { return &odd{r: r} }

type odd struct {
	r io.Reader
	n int
}

func (o *odd) Read(p []byte) (int, error) {
	o.n = (o.n*7919 + 13) % 70000
	return o.r.Read(p[:min(len(p), o.n+1)])
}

// TestGearNC0Reference checks gear at level 0 (AlgorithmNC0) against the
// rule written plainly, a byte at a time: one mask from min to max.
func TestGearNC0Reference(t *testing.T) {
	for _, c := range []CDC{{Min: 56 << 10, Normal: 64 << 10, Max: 1 << 20}, {Min: 1 << 10, Normal: 4 << 10, Max: 16 << 10}} {
		g, mask := newGear(c, 0), spacedMask(int(math.Log2(float64(c.Normal))))
		for _, data := range [][]byte{testData(8, 8<<20), make([]byte, 3<<20), bytes.Repeat([]byte("xyz"), 1<<20)} {
			for off := 0; off < len(data); {
				d := data[off:min(off+c.Max, len(data))]
				want := len(d)
				fp := uint64(0)
				for i := c.Min; i < len(d); i++ {
					if fp = fp<<1 + fastcdc.G[d[i]]; fp&mask == 0 {
						want = i
						break
					}
				}
				if got := g.next(data[off:]); got != want {
					t.Fatalf("%v: block at %d: %d bytes, want %d", c, off, got, want)
				}
				off += want
			}
		}
	}
}

// BenchmarkScan measures scan alone over 1 MiB of random bytes with a mask
// that (almost) never matches: the bytes scanned per second.
func BenchmarkScan(b *testing.B) {
	data := testData(3, 1<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if i, _ := scan(data, 0, math.MaxUint64); i >= 0 {
			b.Fatal("matched")
		}
	}
}
