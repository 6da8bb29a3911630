package erasure

import (
	"fmt"
)

// Generations splits a file larger than one code into independent generations: each
// holds kk source blocks (the last one zero-padded) and is coded on its own into nn
// coded blocks with the same [Code]. Coded block g*nn+i is block i of generation g.
type Generations struct {
	code  *Code
	size  int64
	count int
}

// NewGenerations plans the coding of a file of size bytes with code c.
func NewGenerations(c *Code, size int64) (*Generations, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: file size %d < 0", ErrParams, size)
	}
	span := int64(c.kk) * int64(c.size)
	count := int((size + span - 1) / span)
	if count == 0 {
		count = 1 // an empty file is one generation of zero blocks
	}
	return &Generations{code: c, size: size, count: count}, nil
}

// Code is the code used for every generation.
func (g *Generations) Code() *Code { return g.code }

// Count is the number of generations.
func (g *Generations) Count() int { return g.count }

// Size is the file size in bytes.
func (g *Generations) Size() int64 { return g.size }

// Span returns the byte range [off, off+n) of the file that generation i covers.
func (g *Generations) Span(i int) (off, n int64) {
	span := int64(g.code.kk) * int64(g.code.size)
	off = int64(i) * span
	n = min(span, g.size-off)
	return off, max(n, 0)
}

// Blocks is the total number of coded blocks, Count*nn.
func (g *Generations) Blocks() int { return g.count * g.code.nn }

// Locate splits a global coded block index into generation and index in the generation.
func (g *Generations) Locate(id int) (gen, i int) { return id / g.code.nn, id % g.code.nn }

// ID joins a generation and an index in it into a global coded block index.
func (g *Generations) ID(gen, i int) int { return gen*g.code.nn + i }

// EncodeGeneration codes generation i from its bytes (exactly the Span(i) range of the
// file) into nn coded blocks; short data is zero-padded.
func (g *Generations) EncodeGeneration(i int, data []byte) ([][]byte, error) {
	if i < 0 || i >= g.count {
		return nil, fmt.Errorf("%w: generation %d outside [0, %d)", ErrBlock, i, g.count)
	}
	if _, n := g.Span(i); int64(len(data)) != n {
		return nil, fmt.Errorf("%w: generation %d has %d bytes, want %d", ErrBlock, i, len(data), n)
	}
	c := g.code
	buf := make([]byte, c.nn*c.size)
	copy(buf, data)
	shards := make([][]byte, c.nn)
	for j := range shards {
		shards[j] = buf[j*c.size : (j+1)*c.size : (j+1)*c.size]
	}
	if err := c.EncodeInto(shards); err != nil {
		return nil, err
	}
	return shards, nil
}

// DecodeGeneration returns the bytes of generation i (Span(i) long) from any kk
// distinct coded blocks of it.
func (g *Generations) DecodeGeneration(i int, blocks []Block) ([]byte, error) {
	if i < 0 || i >= g.count {
		return nil, fmt.Errorf("%w: generation %d outside [0, %d)", ErrBlock, i, g.count)
	}
	src, err := g.code.Decode(blocks)
	if err != nil {
		return nil, fmt.Errorf("generation %d: %w", i, err)
	}
	_, n := g.Span(i)
	out := make([]byte, 0, n)
	for _, b := range src {
		if int64(len(out)) >= n {
			break
		}
		out = append(out, b[:min(int64(len(b)), n-int64(len(out)))]...)
	}
	return out, nil
}

// Encode codes a whole file: result[g] are the nn coded blocks of generation g.
func (g *Generations) Encode(file []byte) ([][][]byte, error) {
	if int64(len(file)) != g.size {
		return nil, fmt.Errorf("%w: file has %d bytes, plan is for %d", ErrBlock, len(file), g.size)
	}
	out := make([][][]byte, g.count)
	for i := range out {
		off, n := g.Span(i)
		blocks, err := g.EncodeGeneration(i, file[off:off+n])
		if err != nil {
			return nil, err
		}
		out[i] = blocks
	}
	return out, nil
}

// Decode rebuilds the file from coded blocks given by global index (see ID); every
// generation needs kk distinct blocks of its own.
func (g *Generations) Decode(blocks []Block) ([]byte, error) {
	per := make([][]Block, g.count)
	for _, b := range blocks {
		if b.Index < 0 || b.Index >= g.Blocks() {
			return nil, fmt.Errorf("%w: index %d outside [0, %d)", ErrBlock, b.Index, g.Blocks())
		}
		gen, i := g.Locate(b.Index)
		per[gen] = append(per[gen], Block{Index: i, Data: b.Data})
	}
	out := make([]byte, 0, g.size)
	for i := range per {
		data, err := g.DecodeGeneration(i, per[i])
		if err != nil {
			return nil, err
		}
		out = append(out, data...)
	}
	return out, nil
}
