package cdcbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	cdc "github.com/PlakarKorp/go-cdc-chunkers"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/jc"
	jotfs "github.com/jotfs/fastcdc-go"
	"github.com/reconcile-p2p/reconcile/chunker"
	restic "github.com/restic/chunker"
)

const size = 64 << 20

var data = func() []byte {
	r := rand.New(rand.NewPCG(1, 42))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

// cutter returns the next block of a stream (a view valid until the next
// call), or io.EOF.
type cutter func() ([]byte, error)

// pipeline hashes the blocks of next as the chunker does: each copied into one
// of a few buffers, hashed by workers goroutines. It returns the block count.
func pipeline(next cutter, maxLen, workers int) int {
	free := make(chan []byte, workers+2)
	for range workers + 2 {
		free <- make([]byte, maxLen)
	}
	jobs := make(chan []byte, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				chunker.HashBlock(j)
				free <- j[:cap(j)]
			}
		}()
	}
	n := 0
	for {
		b, err := next()
		if len(b) > 0 {
			buf := <-free
			jobs <- buf[:copy(buf, b)]
			n++
		}
		if err != nil {
			break
		}
	}
	close(jobs)
	wg.Wait()
	return n
}

func fixedCutter(bs int) cutter {
	off := 0
	return func() ([]byte, error) {
		if off >= len(data) {
			return nil, io.EOF
		}
		b := data[off:min(off+bs, len(data))]
		off += len(b)
		return b, nil
	}
}

// candidates are the chunkers compared, each with parameters for an average
// block under 256 KiB.
var candidates = []struct {
	name string
	max  int
	new  func() cutter
}{
	{"restic-chunker-v0.4.0/min64K-avgbits17-max1M", 1 << 20, func() cutter {
		c := restic.NewWithBoundaries(bytes.NewReader(data), restic.Pol(0x3DA3358B4DC173), 64<<10, 1<<20)
		c.SetAverageBits(17)
		buf := make([]byte, 1<<20)
		return func() ([]byte, error) {
			ch, err := c.Next(buf)
			return ch.Data, err
		}
	}},
	{"jotfs-fastcdc-go-v0.2.0/min96K-avg128K-max1M", 1 << 20, func() cutter {
		c, err := jotfs.NewChunker(bytes.NewReader(data), jotfs.Options{MinSize: 96 << 10, AverageSize: 128 << 10, MaxSize: 1 << 20})
		if err != nil {
			panic(err)
		}
		return func() ([]byte, error) {
			ch, err := c.Next()
			return ch.Data, err
		}
	}},
	{"go-cdc-chunkers-v1.1.0-fastcdc/min64K-normal128K-max1M", 1 << 20, plakar(chunker.CDCAlgorithm, 64<<10, 128<<10, 1<<20)},
	{"go-cdc-chunkers-v1.1.0-fastcdc/min96K-normal128K-max1M", 1 << 20, plakar(chunker.CDCAlgorithm, 96<<10, 128<<10, 1<<20)},
	// JC skips ahead after a near-cut: the fastest by far, but its cuts
	// depend on where it jumped from, and an edit moves many of them.
	{"go-cdc-chunkers-v1.1.0-jc/min128K-normal256K-max1M", 1 << 20, plakar("jc-v1.1.0", 128<<10, 256<<10, 1<<20)},
}

func plakar(algo string, mn, normal, mx int) func() cutter {
	return func() cutter {
		c, err := cdc.NewChunker(algo, bytes.NewReader(data), &cdc.ChunkerOpts{MinSize: mn, NormalSize: normal, MaxSize: mx})
		if err != nil {
			panic(err)
		}
		return c.Next
	}
}

// BenchmarkLibraries runs each candidate and the fixed-size blocks of
// chunker.DefaultBlockSize alternately over the same 64 MiB of random bytes in
// memory, with GOMAXPROCS hashing goroutines. ratio = candidate time / fixed
// time (the goal: at most 1.2).
func BenchmarkLibraries(b *testing.B) {
	workers := min(runtime.GOMAXPROCS(0), 8)
	for _, c := range candidates {
		b.Run(c.name, func(b *testing.B) {
			var fixedNs, cdcNs int64
			blocks := 0
			b.SetBytes(size)
			for b.Loop() {
				t0 := time.Now()
				pipeline(fixedCutter(chunker.DefaultBlockSize), chunker.DefaultBlockSize, workers)
				t1 := time.Now()
				blocks = pipeline(c.new(), c.max, workers)
				cdcNs += int64(time.Since(t1))
				fixedNs += int64(t1.Sub(t0))
			}
			b.ReportMetric(float64(cdcNs)/float64(fixedNs), "ratio")
			b.ReportMetric(float64(size)*float64(b.N)/float64(fixedNs)*1e3, "fixedMB/s")
			b.ReportMetric(float64(size)/float64(blocks)/1024, "avgKiB")
		})
	}
}

// BenchmarkChunker measures the chunker itself (ChunkReader) with
// WithContentDefined against its fixed-size blocks, alternately.
func BenchmarkChunker(b *testing.B) {
	ctx := context.Background()
	var fixedNs, cdcNs int64
	var m *chunker.Manifest
	b.SetBytes(size)
	for b.Loop() {
		t0 := time.Now()
		if _, err := chunker.ChunkReader(ctx, "f", 0o644, bytes.NewReader(data), 0); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		var err error
		if m, err = chunker.ChunkReader(ctx, "f", 0o644, bytes.NewReader(data), 0, chunker.WithContentDefined()); err != nil {
			b.Fatal(err)
		}
		cdcNs += int64(time.Since(t1))
		fixedNs += int64(t1.Sub(t0))
	}
	b.ReportMetric(float64(cdcNs)/float64(fixedNs), "ratio")
	b.ReportMetric(float64(size)*float64(b.N)/float64(fixedNs)*1e3, "fixedMB/s")
	b.ReportMetric(float64(m.AvgBlockLen())/1024, "avgKiB")
}

// TestEditLocality reports, for each candidate, the blocks that a 1 KiB
// insertion in the middle of 32 MiB adds (worst of 8 places).
func TestEditLocality(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	old := data
	defer func() { data = old }()
	base := bytes.Clone(old[:32<<20])
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range candidates {
		data = base
		have := map[string]bool{}
		next := c.new()
		for {
			b, err := next()
			have[string(b)] = true
			if err != nil {
				break
			}
		}
		worst := 0
		for range 8 {
			pos := len(base)/4 + r.IntN(len(base)/2)
			data = append(append(append([]byte{}, base[:pos]...), old[40<<20:40<<20+1024]...), base[pos:]...)
			n := 0
			next := c.new()
			for {
				b, err := next()
				if len(b) > 0 && !have[string(b)] {
					n++
				}
				if err != nil {
					break
				}
			}
			worst = max(worst, n)
		}
		fmt.Printf("%s: at most %d new blocks for a 1 KiB insert\n", c.name, worst)
	}
}
