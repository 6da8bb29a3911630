package byers

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/erasure"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrMalformed means a coded header, or the index of a coded block, does
	// not decode or does not fit the content.
	ErrMalformed = errors.New("byers: malformed")
	// ErrBadBlock means a coded block does not match its hash.
	ErrBadBlock = errors.New("byers: coded block failed verification")
	// ErrMismatch means a decoded block does not match the manifest: every
	// coded block matched its hash, so the hashes were wrong (the peer that
	// sent them lied).
	ErrMismatch = errors.New("byers: decoded block does not match the manifest")
	// ErrContentDefined means the content is cut into content-defined
	// blocks of varying lengths: the Byers baseline codes fixed-size
	// blocks only (padding varying ones to the largest could double the
	// coded bytes).
	ErrContentDefined = errors.New("byers: the Byers baseline needs fixed-size blocks; this content has content-defined blocks")
	// ErrTooLarge means the content is over MaxBytes.
	ErrTooLarge = errors.New("byers: content over the baseline's limit")
)

// MaxBytes bounds the content coded: its coded blocks are kept in memory (N/K
// times the content).
const MaxBytes = 256 << 20

// Params sets the Reed–Solomon code: the content is cut into generations of
// K source blocks, each coded into N coded blocks (the first K are the source
// blocks themselves).
type Params struct {
	// K is the number of source blocks per generation. Default 64 (or the
	// block count of a smaller content).
	K int
	// N is the number of coded blocks per generation. Default 2K.
	N int
}

// WithDefaults returns p with the defaults filled in for content of blocks
// blocks.
func (p Params) WithDefaults(blocks int) Params {
	if p.K <= 0 {
		p.K = min(64, max(blocks, 1))
	}
	if p.N <= 0 {
		p.N = 2 * p.K
	}
	return p
}

// A Set is the coded blocks of one content that a peer holds (some or all of
// them), with the hash of every coded block. Its methods are safe for
// concurrent use.
type Set struct {
	gens   *erasure.Generations
	hashes []byte
	// origin, when set, is the full set this one was shared from (see
	// Share): a received coded block equal to origin's is kept as origin's
	// slice, not a copy, and decodes take one of origin's slots.
	origin *Set
	// decodes bounds the concurrent decodes of the sets shared from this one.
	decodes chan struct{}

	mu   sync.RWMutex
	data [][]byte
	n    int
}

// newSet returns an empty set of the coded blocks of content m with code p.
func newSet(m *chunker.Manifest, p Params) (*Set, error) {
	if m.TotalSize() > MaxBytes {
		return nil, fmt.Errorf("%w: content of %d bytes is over the %d-byte limit", ErrTooLarge, m.TotalSize(), MaxBytes)
	}
	code, err := erasure.New(p.K, p.N, m.BlockSize())
	if err != nil {
		return nil, fmt.Errorf("byers: %w", err)
	}
	gens, err := erasure.NewGenerations(code, m.TotalSize())
	if err != nil {
		return nil, fmt.Errorf("byers: %w", err)
	}
	return &Set{gens: gens, data: make([][]byte, gens.Blocks()), decodes: make(chan struct{}, runtime.GOMAXPROCS(0))}, nil
}

// A BlockReader reads the blocks of a content (a *chunker.Store does).
type BlockReader interface {
	// ReadBlock reads block i into buf (reusing its capacity) and returns it.
	ReadBlock(i int, buf []byte) ([]byte, error)
}

// Encode codes the content m whose blocks r reads, with the code p (its
// defaults filled in), and returns the full set of its coded blocks.
func Encode(ctx context.Context, m *chunker.Manifest, r BlockReader, p Params) (*Set, error) {
	if m.ContentDefined() {
		return nil, ErrContentDefined
	}
	p = p.WithDefaults(m.BlockCount())
	s, err := newSet(m, p)
	if err != nil {
		return nil, err
	}
	s.hashes = make([]byte, 0, s.gens.Blocks()*chunker.HashSize)
	var buf []byte
	for g := 0; g < s.gens.Count(); g++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var gen []byte
		first := g * p.K
		for i := first; i < min(first+p.K, m.BlockCount()); i++ {
			buf, err = r.ReadBlock(i, buf)
			if err != nil {
				return nil, fmt.Errorf("byers: %w", err)
			}
			gen = append(gen, buf...)
		}
		coded, err := s.gens.EncodeGeneration(g, gen)
		if err != nil {
			return nil, fmt.Errorf("byers: %w", err)
		}
		for j, b := range coded {
			h := chunker.HashBlock(b)
			s.hashes = append(s.hashes, h[:]...)
			s.data[s.gens.ID(g, j)] = b
			s.n++
		}
	}
	return s, nil
}

// Count is the number of coded blocks of the content; indices lie in [0,
// Count).
func (s *Set) Count() int { return s.gens.Blocks() }

// BlockSize is the size of every coded block.
func (s *Set) BlockSize() int { return s.gens.Code().BlockSize() }

// Fits reports whether the set codes content of m's size and block size.
func (s *Set) Fits(m *chunker.Manifest) bool {
	return s.gens.Size() == m.TotalSize() && s.BlockSize() == m.BlockSize()
}

// Get returns coded block i, or ok false if it is not held. The bytes are
// the set's: the caller must not change them.
func (s *Set) Get(i int) (b []byte, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i < 0 || i >= len(s.data) || s.data[i] == nil {
		return nil, false
	}
	return s.data[i], true
}

// Has reports whether coded block i is held.
func (s *Set) Has(i int) bool {
	_, ok := s.Get(i)
	return ok
}

// Held lists the coded blocks held, in increasing order.
func (s *Set) Held() []int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]int, 0, s.n)
	for i, b := range s.data {
		if b != nil {
			out = append(out, i)
		}
	}
	return out
}

// Header is the set's header, which a fetcher needs to check the coded blocks
// it gets: K, N, block size and content size as uvarints, then the hash of
// every coded block.
func (s *Set) Header() []byte {
	c := s.gens.Code()
	b := binary.AppendUvarint(nil, uint64(c.K()))
	b = binary.AppendUvarint(b, uint64(c.N()))
	b = binary.AppendUvarint(b, uint64(c.BlockSize()))
	b = binary.AppendUvarint(b, uint64(s.gens.Size()))
	return append(b, s.hashes...)
}

// MaxHeaderLen bounds the length of a header of content m that a fetcher
// reads.
func MaxHeaderLen(m *chunker.Manifest) int {
	return 4*binary.MaxVarintLen64 + (MaxBytes/m.BlockSize()+1)*64*chunker.HashSize
}

// DecodeHeader checks a header (see Set.Header) against the manifest m of
// its content and returns an empty set with its hashes. A header that does
// not decode or does not fit m is ErrMalformed, content over MaxBytes
// ErrTooLarge. It allocates nothing sized by the header's claims before it has
// checked that the hashes they call for are there.
func DecodeHeader(b []byte, m *chunker.Manifest) (*Set, error) {
	if m.ContentDefined() {
		return nil, ErrContentDefined
	}
	var v [4]uint64
	for j := range v {
		x, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("%w: header: truncated varint", ErrMalformed)
		}
		v[j], b = x, b[k:]
	}
	k, n, bs, size := v[0], v[1], v[2], v[3]
	if bs != uint64(m.BlockSize()) || size != uint64(m.TotalSize()) || k == 0 || n < k || n > erasure.MaxBlocks {
		return nil, fmt.Errorf("%w: header (k %d, n %d, %d-byte blocks, %d bytes) does not fit the manifest", ErrMalformed, k, n, bs, size)
	}
	// Check the hashes present against the coded block count before building
	// anything sized by the header's claims.
	span := k * bs
	gens := max((size+span-1)/span, 1)
	if uint64(len(b)) != gens*n*chunker.HashSize {
		return nil, fmt.Errorf("%w: %d bytes of hashes for %d coded blocks", ErrMalformed, len(b), gens*n)
	}
	s, err := newSet(m, Params{K: int(k), N: int(n)})
	if err != nil {
		return nil, err
	}
	if len(b) != s.Count()*chunker.HashSize {
		return nil, fmt.Errorf("%w: %d bytes of hashes for %d coded blocks", ErrMalformed, len(b), s.Count())
	}
	s.hashes = bytes.Clone(b)
	return s, nil
}

// Share returns a set of the same content that holds the coded blocks held,
// which the set s was shared from (or s itself, when it was shared from none)
// must hold, as that set's slices, not copies; a Target of the new set keeps
// the coded blocks it receives as that set's slices too where the bytes are
// equal. The sets shared from one set bound their concurrent decodes together
// to GOMAXPROCS.
func (s *Set) Share(held []int) (*Set, error) {
	origin := s
	if s.origin != nil {
		origin = s.origin
	}
	out := &Set{gens: s.gens, hashes: s.hashes, origin: origin, decodes: origin.decodes, data: make([][]byte, s.gens.Blocks())}
	for _, i := range held {
		b, ok := origin.Get(i)
		if i < 0 || i >= out.Count() || !ok {
			return nil, fmt.Errorf("byers: share: coded block %d of %d is not held", i, out.Count())
		}
		if out.data[i] == nil {
			out.data[i] = b
			out.n++
		}
	}
	return out, nil
}

// hash returns the hash of coded block i.
func (s *Set) hash(i int) []byte { return s.hashes[i*chunker.HashSize : (i+1)*chunker.HashSize] }
