package erasure

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrNotClaimed reports a Decode of a generation that the caller has not
// claimed (see [Collector.Add] and [Collector.Claim]).
var ErrNotClaimed = errors.New("erasure: generation not claimed for decoding")

// Collector gathers the coded blocks of the generations of a file (see
// [Generations]) and tells when a generation has kk distinct coded blocks and
// can be decoded. It is the one place where a receiver of coded blocks decodes
// them: a reconcile session, a peer fetching with the Byers baseline, a
// simulator.
//
// Decoding is split from collecting so that no lock a caller's other
// goroutines need is held while Reed–Solomon runs: [Collector.Add] records a
// block under the collector's short lock and, when the block completes a
// generation, claims it for the caller, who then calls [Collector.Decode]
// outside its own locks. Decode snapshots the generation's blocks under the
// lock and decodes without it, waiting first for a decode slot when the
// collector has slots ([WithDecodeSlots]). A generation is claimed by one
// caller at a time and decoded once; a failed decode is returned and puts the
// generation back, to be claimed again.
//
// The collector keeps the slices it is given, never copies: many collectors
// (hundreds of peers in one process) can share one copy of the coded blocks.
// The slices must not be modified while the collector holds them. A Collector
// is safe for concurrent use.
type Collector struct {
	gens  *Generations
	slots chan struct{}

	mu     sync.Mutex
	blocks [][]byte   // by global coded block index (Generations.ID)
	have   []int      // distinct blocks held per generation
	state  []genState // per generation
	held   int
}

type genState uint8

const (
	collecting genState = iota // fewer than kk blocks, or kk and not claimed
	claimed                    // handed to a caller to decode
	decoded                    // decoded, or marked decoded
)

// CollectorOption configures a [Collector].
type CollectorOption func(*Collector)

// WithDecodeSlots bounds concurrent decodes: Decode takes a slot from slots
// (a send) before decoding and gives it back (a receive) after, so the
// capacity of slots bounds the decodes of every collector that shares it.
// Default: nil, no bound.
func WithDecodeSlots(slots chan struct{}) CollectorOption {
	return func(c *Collector) { c.slots = slots }
}

// NewCollector returns an empty collector for the coded blocks of g.
func NewCollector(g *Generations, opts ...CollectorOption) *Collector {
	c := &Collector{
		gens:   g,
		blocks: make([][]byte, g.Blocks()),
		have:   make([]int, g.Count()),
		state:  make([]genState, g.Count()),
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Generations returns the generations collected.
func (c *Collector) Generations() *Generations { return c.gens }

// Add records coded block id (a global index, see [Generations.ID]) with its
// data, kept as given. A block already held is ignored. When the generation
// of id now has kk distinct blocks and is neither decoded nor claimed, Add
// claims it and returns its index and ready true: the caller must then call
// [Collector.Decode] for it (outside any lock its other goroutines need).
// Errors wrap [ErrBlock] (an index outside the file, a block of the wrong size).
func (c *Collector) Add(id int, data []byte) (gen int, ready bool, err error) {
	if id < 0 || id >= len(c.blocks) {
		return 0, false, fmt.Errorf("%w: coded block %d outside [0, %d)", ErrBlock, id, len(c.blocks))
	}
	if len(data) != c.gens.code.size {
		return 0, false, fmt.Errorf("%w: coded block %d has %d bytes, want %d", ErrBlock, id, len(data), c.gens.code.size)
	}
	gen, _ = c.gens.Locate(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.blocks[id] != nil {
		return gen, false, nil
	}
	c.blocks[id] = data
	c.held++
	c.have[gen]++
	return gen, c.claimLocked(gen), nil
}

// Claim claims generation gen for decoding when it has kk distinct blocks and
// is neither decoded nor claimed, and reports whether it did. Add claims on
// its own; Claim is for retrying after a failed or abandoned Decode.
func (c *Collector) Claim(gen int) bool {
	if gen < 0 || gen >= len(c.state) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claimLocked(gen)
}

func (c *Collector) claimLocked(gen int) bool {
	if c.state[gen] != collecting || c.have[gen] < c.gens.code.kk {
		return false
	}
	c.state[gen] = claimed
	return true
}

// Decode decodes generation gen, which the caller claimed, and returns its kk
// source blocks (the last generation's padded with zeros past the end of the
// file, see [Generations.Span]); they may share memory with the blocks added,
// and must not be modified. It waits for a decode slot first when the
// collector has slots, and returns ctx's error if ctx ends meanwhile. On
// success the generation is decoded; on error (wrapping [ErrNotClaimed] for a
// generation not claimed) a claimed generation goes back to collecting and
// can be claimed again.
func (c *Collector) Decode(ctx context.Context, gen int) ([][]byte, error) {
	if gen < 0 || gen >= len(c.state) {
		return nil, fmt.Errorf("%w: generation %d outside [0, %d)", ErrBlock, gen, len(c.state))
	}
	nn := c.gens.code.nn
	c.mu.Lock()
	if c.state[gen] != claimed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: generation %d", ErrNotClaimed, gen)
	}
	blocks := make([]Block, 0, c.have[gen])
	for j, b := range c.blocks[gen*nn : (gen+1)*nn] {
		if b != nil {
			blocks = append(blocks, Block{Index: j, Data: b})
		}
	}
	c.mu.Unlock()

	src, err := c.decode(ctx, blocks)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.state[gen] = collecting
		return nil, fmt.Errorf("erasure: generation %d: %w", gen, err)
	}
	c.state[gen] = decoded
	return src, nil
}

// decode runs the code on blocks, in a decode slot if there are slots.
func (c *Collector) decode(ctx context.Context, blocks []Block) ([][]byte, error) {
	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
			defer func() { <-c.slots }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.gens.code.Decode(blocks)
}

// SetDecoded marks generation gen decoded without decoding it (its source is
// held some other way): no later Add claims it.
func (c *Collector) SetDecoded(gen int) {
	if gen < 0 || gen >= len(c.state) {
		return
	}
	c.mu.Lock()
	c.state[gen] = decoded
	c.mu.Unlock()
}

// Decoded reports whether generation gen is decoded (or marked so).
func (c *Collector) Decoded(gen int) bool {
	if gen < 0 || gen >= len(c.state) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state[gen] == decoded
}

// Needed reports whether coded block id is still of use to this receiver: it
// is not held, and its generation is neither decoded nor claimed for decoding.
func (c *Collector) Needed(id int) bool {
	if id < 0 || id >= len(c.blocks) {
		return false
	}
	gen, _ := c.gens.Locate(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blocks[id] == nil && c.state[gen] == collecting
}

// Block returns coded block id as added, or nil when it is not held.
func (c *Collector) Block(id int) []byte {
	if id < 0 || id >= len(c.blocks) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blocks[id]
}

// Len is the number of distinct coded blocks held.
func (c *Collector) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// Held returns the indices of the coded blocks held, in increasing order.
func (c *Collector) Held() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, 0, c.held)
	for i, b := range c.blocks {
		if b != nil {
			out = append(out, i)
		}
	}
	return out
}
