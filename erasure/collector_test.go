package erasure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// codedFile codes a random file of size bytes with RS(nn, kk) in generations.
func codedFile(t testing.TB, rng *rand.Rand, kk, nn, bs int, size int64) (*Generations, []byte, [][][]byte) {
	t.Helper()
	code, err := New(kk, nn, bs)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGenerations(code, size)
	if err != nil {
		t.Fatal(err)
	}
	file := make([]byte, size)
	for i := range file {
		file[i] = byte(rng.Uint32())
	}
	coded, err := g.Encode(file)
	if err != nil {
		t.Fatal(err)
	}
	return g, file, coded
}

// source returns the kk source blocks of generation gen of file, zero-padded.
func source(g *Generations, file []byte, gen int) []byte {
	off, n := g.Span(gen)
	out := make([]byte, g.Code().K()*g.Code().BlockSize())
	copy(out, file[off:off+n])
	return out
}

// TestCollectorAnyK: any kk distinct coded blocks of a generation, added in any
// order with duplicates, make Add claim it exactly once, and Decode gives the
// generation's source; blocks are kept, not copied.
func TestCollectorAnyK(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		kk := 1 + rng.IntN(40)
		nn := kk + rng.IntN(40)
		bs := 1 + rng.IntN(50)
		if trial%8 == 7 { // Leopard GF(2^16)
			kk, nn, bs = 100+rng.IntN(100), 300+rng.IntN(200), 64*(1+rng.IntN(2))
		}
		size := int64(rng.IntN(4*kk*bs + 1))
		t.Run(fmt.Sprintf("RS(%d,%d)x%d/%d", nn, kk, bs, size), func(t *testing.T) {
			g, file, coded := codedFile(t, rng, kk, nn, bs, size)
			c := NewCollector(g)
			// Each generation gets kk to nn of its coded blocks; all arrive
			// shuffled, some twice.
			var ids []int
			for gen := range g.Count() {
				for _, j := range rng.Perm(nn)[:kk+rng.IntN(nn-kk+1)] {
					ids = append(ids, g.ID(gen, j))
				}
			}
			ids = append(ids, ids[:len(ids)/4]...)
			rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			claims := make([]int, g.Count())
			for _, id := range ids {
				gen, j := g.Locate(id)
				got, ready, err := c.Add(id, coded[gen][j])
				if err != nil || got != gen {
					t.Fatalf("Add(%d): gen %d, %v", id, got, err)
				}
				if &c.Block(id)[0] != &coded[gen][j][0] {
					t.Fatalf("block %d was copied", id)
				}
				if !ready {
					continue
				}
				claims[gen]++
				if c.Needed(g.ID(gen, 0)) && c.Block(g.ID(gen, 0)) == nil {
					t.Errorf("generation %d claimed, yet its blocks are still needed", gen)
				}
				src, err := c.Decode(context.Background(), gen)
				if err != nil {
					t.Fatal(err)
				}
				if want := source(g, file, gen); !bytes.Equal(bytes.Join(src, nil), want) {
					t.Fatalf("generation %d decoded wrongly", gen)
				}
			}
			for gen, n := range claims {
				if n != 1 || !c.Decoded(gen) {
					t.Errorf("generation %d claimed %d times, decoded %v", gen, n, c.Decoded(gen))
				}
			}
		})
	}
}

func TestCollectorErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g, _, coded := codedFile(t, rng, 4, 6, 8, 64) // two generations
	c := NewCollector(g)
	for _, tc := range []struct {
		id   int
		data []byte
	}{{-1, coded[0][0]}, {12, coded[0][0]}, {0, coded[0][0][:7]}, {0, nil}} {
		if _, _, err := c.Add(tc.id, tc.data); !errors.Is(err, ErrBlock) {
			t.Errorf("Add(%d, %d bytes): %v, want ErrBlock", tc.id, len(tc.data), err)
		}
	}
	if _, err := c.Decode(context.Background(), 0); !errors.Is(err, ErrNotClaimed) {
		t.Errorf("Decode of an unclaimed generation: %v", err)
	}
	if _, err := c.Decode(context.Background(), 2); !errors.Is(err, ErrBlock) {
		t.Errorf("Decode of generation 2 of 2: %v", err)
	}
	if c.Claim(0) || c.Claim(-1) {
		t.Error("claimed a generation without kk blocks")
	}
	c.SetDecoded(1)
	for j := range 6 {
		if _, ready, _ := c.Add(g.ID(1, j), coded[1][j]); ready {
			t.Error("a generation marked decoded was claimed")
		}
	}
	if c.Needed(g.ID(0, 0)) != true || c.Needed(g.ID(1, 0)) || c.Len() != 6 || len(c.Held()) != 6 {
		t.Errorf("Needed %v %v, Len %d, Held %v", c.Needed(0), c.Needed(6), c.Len(), c.Held())
	}
}

// TestCollectorSlots: a decode waits for a slot; a cancelled wait returns the
// generation, to be claimed again.
func TestCollectorSlots(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	g, file, coded := codedFile(t, rng, 4, 6, 8, 32)
	slots := make(chan struct{}, 1)
	c := NewCollector(g, WithDecodeSlots(slots))
	var ready bool
	for j := 2; j < 6; j++ {
		_, ready, _ = c.Add(j, coded[0][j])
	}
	if !ready {
		t.Fatal("not ready after kk blocks")
	}
	slots <- struct{}{} // every slot taken
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Decode(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Decode without a slot: %v", err)
	}
	<-slots
	if !c.Claim(0) {
		t.Fatal("generation not claimable after a cancelled decode")
	}
	src, err := c.Decode(context.Background(), 0)
	if err != nil || !bytes.Equal(bytes.Join(src, nil), source(g, file, 0)) {
		t.Fatalf("decode: %v", err)
	}
	if len(slots) != 0 {
		t.Error("slot not given back")
	}
}

// TestCollectorConcurrent: many goroutines add the blocks of many generations
// at once, with two decode slots; each generation is decoded once, right.
func TestCollectorConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	g, file, coded := codedFile(t, rng, 8, 16, 16, 8*16*20)
	c := NewCollector(g, WithDecodeSlots(make(chan struct{}, 2)))
	ids := rng.Perm(g.Blocks())
	var wg sync.WaitGroup
	var mu sync.Mutex
	decodes := make([]int, g.Count())
	errs := make(chan error, len(ids))
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(ids); i += 8 {
				gen, j := g.Locate(ids[i])
				_, ready, err := c.Add(ids[i], coded[gen][j])
				if err != nil {
					errs <- err
					continue
				}
				if !ready {
					continue
				}
				src, err := c.Decode(context.Background(), gen)
				if err == nil && !bytes.Equal(bytes.Join(src, nil), source(g, file, gen)) {
					err = fmt.Errorf("generation %d decoded wrongly", gen)
				}
				if err != nil {
					errs <- err
				}
				mu.Lock()
				decodes[gen]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for gen, n := range decodes {
		if n != 1 {
			t.Errorf("generation %d decoded %d times", gen, n)
		}
	}
}

func TestCollectorAddAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	g, _, coded := codedFile(t, rng, 64, 128, 64, 64*64*4)
	c := NewCollector(g)
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		gen, j := g.Locate(i % g.Blocks())
		c.Add(i%g.Blocks(), coded[gen][j])
		i++
	})
	if allocs != 0 {
		t.Errorf("Add allocates %v times", allocs)
	}
}

// BenchmarkCollector adds the coded blocks of a 4 MiB file (RS(128, 64), 1 KiB
// blocks, in random order, half of them parity) and decodes every generation
// as it becomes ready.
func BenchmarkCollector(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	const kk, nn, bs = 64, 128, 1024
	g, _, coded := codedFile(b, rng, kk, nn, bs, 4<<20)
	ids := rng.Perm(g.Blocks())
	b.SetBytes(4 << 20)
	for b.Loop() {
		c := NewCollector(g)
		for _, id := range ids {
			gen, j := g.Locate(id)
			_, ready, err := c.Add(id, coded[gen][j])
			if err != nil {
				b.Fatal(err)
			}
			if ready {
				if _, err := c.Decode(context.Background(), gen); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.ReportMetric(float64(g.Count()), "generations/op")
}
