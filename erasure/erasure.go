// Package erasure Reed–Solomon codes fixed-size blocks for the Byers baseline of
// package reconcile: kk source blocks become nn coded blocks, and any kk distinct coded
// blocks give the source back.
//
// The code is systematic (coded blocks 0..kk-1 are the source blocks themselves) and
// comes from github.com/klauspost/reedsolomon: classic Vandermonde codes over GF(2^8)
// while nn <= 256, Leopard codes over GF(2^16) above (up to 65536 blocks, such as the
// paper's RS(8191, kk)). Leopard requires block sizes that are a multiple of 64 bytes;
// [New] checks this and the other limits and returns [ErrParams] otherwise.
//
// Files larger than one code are split into independent generations of kk source
// blocks each ([Generations]); every generation is coded and decoded on its own.
//
// The package does no IO and keeps no global state; a [Code] may be used by several
// goroutines at once.
package erasure

import (
	"errors"
	"fmt"
	"slices"

	"github.com/klauspost/reedsolomon"
)

// MaxBlocks is the largest number of coded blocks per code (GF(2^16)).
const MaxBlocks = 65536

// MaxClassicBlocks is the largest nn coded over GF(2^8); above it Leopard GF(2^16) is used.
const MaxClassicBlocks = 256

// LeopardBlockMultiple is the multiple of which block sizes must be under Leopard GF(2^16).
const LeopardBlockMultiple = 64

var (
	// ErrParams reports code parameters the library cannot serve (kk, nn or block size).
	ErrParams = errors.New("erasure: invalid code parameters")
	// ErrTooFewBlocks reports a decode attempt with fewer than kk distinct coded blocks.
	ErrTooFewBlocks = errors.New("erasure: too few distinct coded blocks")
	// ErrBlock reports a block of the wrong size or an index outside [0, nn).
	ErrBlock = errors.New("erasure: bad block")
)

// Block is one coded block and its index in [0, nn).
type Block struct {
	Index int
	Data  []byte
}

// Code is a systematic Reed–Solomon code of kk source blocks into nn coded blocks of
// BlockSize bytes each. Build one with [New]; it is safe for concurrent use.
type Code struct {
	kk, nn, size int
	leopard      bool
	enc          reedsolomon.Encoder // nil when nn == kk (no parity)
}

// Option configures a [Code].
type Option func(*options)

type options struct {
	forceGF16  bool
	goroutines int
}

// WithGF16 makes the code use Leopard GF(2^16) even when nn <= 256. Default: false
// (GF(2^8) while nn <= 256). Block sizes must then be multiples of 64.
func WithGF16(on bool) Option { return func(o *options) { o.forceGF16 = on } }

// WithMaxGoroutines bounds the goroutines one encode or decode may use. Default: 1,
// because callers (the simulator, the table3 experiment) run many codes side by side
// and the blocks are small; raise it for large blocks.
func WithMaxGoroutines(n int) Option { return func(o *options) { o.goroutines = n } }

// New returns a code of kk source blocks into nn coded blocks of blockSize bytes.
// It needs 1 <= kk <= nn <= MaxBlocks and blockSize >= 1 (a multiple of 64 when
// nn > 256 or WithGF16 is set); Leopard also rejects a few (kk, nn) combinations in
// which the rounded-up parity count does not fit the field. Errors wrap [ErrParams].
func New(kk, nn, blockSize int, opts ...Option) (*Code, error) {
	o := options{goroutines: 1}
	for _, opt := range opts {
		opt(&o)
	}
	if kk < 1 || nn < kk || nn > MaxBlocks {
		return nil, fmt.Errorf("%w: need 1 <= kk (%d) <= nn (%d) <= %d", ErrParams, kk, nn, MaxBlocks)
	}
	if blockSize < 1 {
		return nil, fmt.Errorf("%w: block size %d < 1", ErrParams, blockSize)
	}
	c := &Code{kk: kk, nn: nn, size: blockSize, leopard: nn > MaxClassicBlocks || o.forceGF16}
	if c.leopard && blockSize%LeopardBlockMultiple != 0 {
		return nil, fmt.Errorf("%w: block size %d must be a multiple of %d for GF(2^16) codes",
			ErrParams, blockSize, LeopardBlockMultiple)
	}
	if nn == kk {
		return c, nil // no parity: the coded blocks are the source blocks
	}
	ropts := []reedsolomon.Option{reedsolomon.WithMaxGoroutines(max(o.goroutines, 1))}
	if o.forceGF16 {
		ropts = append(ropts, reedsolomon.WithLeopardGF16(true))
	}
	enc, err := reedsolomon.New(kk, nn-kk, ropts...)
	if err != nil {
		return nil, fmt.Errorf("%w: RS(%d, %d): %w", ErrParams, nn, kk, err)
	}
	c.enc = enc
	return c, nil
}

// K is the number of source blocks (kk).
func (c *Code) K() int { return c.kk }

// N is the number of coded blocks (nn).
func (c *Code) N() int { return c.nn }

// BlockSize is the size of every block in bytes.
func (c *Code) BlockSize() int { return c.size }

// GF16 reports whether the code works over GF(2^16) (Leopard) rather than GF(2^8).
func (c *Code) GF16() bool { return c.leopard }

// String describes the code, e.g. "RS(8191, 5000) GF(2^16) 64 B".
func (c *Code) String() string {
	f := "GF(2^8)"
	if c.leopard {
		f = "GF(2^16)"
	}
	return fmt.Sprintf("RS(%d, %d) %s %d B", c.nn, c.kk, f, c.size)
}

// Encode codes kk source blocks (each BlockSize bytes) into nn coded blocks. The first
// kk coded blocks share memory with src; the parity blocks are freshly allocated.
func (c *Code) Encode(src [][]byte) ([][]byte, error) {
	if len(src) != c.kk {
		return nil, fmt.Errorf("%w: %d source blocks, want %d", ErrBlock, len(src), c.kk)
	}
	shards := make([][]byte, c.nn)
	copy(shards, src)
	parity := make([]byte, (c.nn-c.kk)*c.size)
	for i := c.kk; i < c.nn; i++ {
		shards[i] = parity[(i-c.kk)*c.size : (i-c.kk+1)*c.size : (i-c.kk+1)*c.size]
	}
	if err := c.EncodeInto(shards); err != nil {
		return nil, err
	}
	return shards, nil
}

// EncodeInto fills the parity blocks shards[kk:nn] from the source blocks shards[:kk].
// Every one of the nn blocks must be BlockSize bytes long.
func (c *Code) EncodeInto(shards [][]byte) error {
	if len(shards) != c.nn {
		return fmt.Errorf("%w: %d blocks, want %d", ErrBlock, len(shards), c.nn)
	}
	for i, s := range shards {
		if len(s) != c.size {
			return fmt.Errorf("%w: block %d has %d bytes, want %d", ErrBlock, i, len(s), c.size)
		}
	}
	if c.enc == nil {
		return nil
	}
	if err := c.enc.Encode(shards); err != nil {
		return fmt.Errorf("erasure: encode %v: %w", c, err)
	}
	return nil
}

// Reconstruct fills in the missing source blocks of shards in place. shards has nn
// entries indexed by coded block index, nil (or empty) where the block is missing; it
// needs at least kk present blocks, else [ErrTooFewBlocks]. Missing parity blocks are
// not rebuilt. Present blocks must be BlockSize bytes long.
func (c *Code) Reconstruct(shards [][]byte) error {
	if len(shards) != c.nn {
		return fmt.Errorf("%w: %d blocks, want %d", ErrBlock, len(shards), c.nn)
	}
	have := 0
	for i, s := range shards {
		switch len(s) {
		case 0:
		case c.size:
			have++
		default:
			return fmt.Errorf("%w: block %d has %d bytes, want %d", ErrBlock, i, len(s), c.size)
		}
	}
	if have < c.kk {
		return fmt.Errorf("%w: have %d, need %d", ErrTooFewBlocks, have, c.kk)
	}
	if c.enc == nil {
		return nil // have == kk == nn: everything is present
	}
	if err := c.enc.ReconstructData(shards); err != nil {
		return fmt.Errorf("erasure: decode %v: %w", c, err)
	}
	return nil
}

// Decode returns the kk source blocks from any kk or more distinct coded blocks.
// Duplicate indices are allowed (the first copy wins); indices outside [0, nn) and
// blocks of the wrong size yield [ErrBlock]. The returned blocks may share memory with
// the input.
func (c *Code) Decode(blocks []Block) ([][]byte, error) {
	shards := make([][]byte, c.nn)
	for _, b := range blocks {
		if b.Index < 0 || b.Index >= c.nn {
			return nil, fmt.Errorf("%w: index %d outside [0, %d)", ErrBlock, b.Index, c.nn)
		}
		if len(b.Data) != c.size {
			return nil, fmt.Errorf("%w: block %d has %d bytes, want %d", ErrBlock, b.Index, len(b.Data), c.size)
		}
		if shards[b.Index] == nil {
			shards[b.Index] = b.Data
		}
	}
	if err := c.Reconstruct(shards); err != nil {
		return nil, err
	}
	return slices.Clip(shards[:c.kk]), nil
}
