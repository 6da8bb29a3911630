package peer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/erasure"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// ByersParams sets the Reed–Solomon code of the Byers baseline: the file is cut
// into generations of K source blocks, each coded into N coded blocks (the
// first K are the source blocks themselves).
type ByersParams struct {
	// K is the number of source blocks per generation. Default 64 (or the
	// block count of a smaller file).
	K int
	// N is the number of coded blocks per generation. Default 2K.
	N int
}

// MaxByersBytes bounds the content served or fetched with the Byers method:
// its coded blocks are kept in memory (N/K times the content).
const MaxByersBytes = 256 << 20

func (bp ByersParams) withDefaults(blocks int) ByersParams {
	if bp.K <= 0 {
		bp.K = min(64, max(blocks, 1))
	}
	if bp.N <= 0 {
		bp.N = 2 * bp.K
	}
	return bp
}

// codedBlocks are the coded blocks of one content a peer holds and serves,
// with the hash of every coded block (a seed computes them; a fetcher gets
// them from the ticket's peer over the authenticated connection and checks
// every coded block against them, and every decoded block against the
// manifest).
type codedBlocks struct {
	gens   *erasure.Generations
	recon  *responder
	hashes []byte
	// origin, when set, is the full coded set this one was shared from (see
	// CodedSet.Share): a received coded block equal to origin's is kept as
	// origin's slice, not a copy, and decodes take one of origin's slots.
	origin *codedBlocks
	// decodes bounds the concurrent decodes of the sets shared from this one.
	decodes chan struct{}

	mu   sync.RWMutex
	data [][]byte
	n    int
}

func newCodedBlocks(m *chunker.Manifest, bp ByersParams) (*codedBlocks, error) {
	if m.TotalSize() > MaxByersBytes {
		return nil, fmt.Errorf("peer: byers: content of %d bytes is over the %d-byte limit of the baseline", m.TotalSize(), MaxByersBytes)
	}
	code, err := erasure.New(bp.K, bp.N, m.BlockSize())
	if err != nil {
		return nil, fmt.Errorf("peer: byers: %w", err)
	}
	gens, err := erasure.NewGenerations(code, m.TotalSize())
	if err != nil {
		return nil, fmt.Errorf("peer: byers: %w", err)
	}
	r, err := newResponder(gens.Blocks(), reconcile.Byers)
	if err != nil {
		return nil, err
	}
	return &codedBlocks{gens: gens, recon: r, data: make([][]byte, gens.Blocks()), decodes: make(chan struct{}, runtime.GOMAXPROCS(0))}, nil
}

// encodeByers codes the held content of a seed store.
func encodeByers(ctx context.Context, m *chunker.Manifest, s *chunker.Store, bp ByersParams) (*codedBlocks, error) {
	bp = bp.withDefaults(m.BlockCount())
	cb, err := newCodedBlocks(m, bp)
	if err != nil {
		return nil, err
	}
	cb.hashes = make([]byte, 0, cb.gens.Blocks()*chunker.HashSize)
	var buf []byte
	for g := 0; g < cb.gens.Count(); g++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var gen []byte
		first := g * bp.K
		for i := first; i < min(first+bp.K, m.BlockCount()); i++ {
			buf, err = s.ReadBlock(i, buf)
			if err != nil {
				return nil, fmt.Errorf("peer: byers: %w", err)
			}
			gen = append(gen, buf...)
		}
		coded, err := cb.gens.EncodeGeneration(g, gen)
		if err != nil {
			return nil, fmt.Errorf("peer: byers: %w", err)
		}
		for j, b := range coded {
			h := chunker.HashBlock(b)
			cb.hashes = append(cb.hashes, h[:]...)
			cb.data[cb.gens.ID(g, j)] = b
			cb.n++
		}
	}
	return cb, nil
}

func (cb *codedBlocks) count() int { return cb.gens.Blocks() }

func (cb *codedBlocks) get(i int) ([]byte, bool) {
	cb.mu.RLock()
	defer cb.mu.RUnlock()
	if i < 0 || i >= len(cb.data) || cb.data[i] == nil {
		return nil, false
	}
	return cb.data[i], true
}

func (cb *codedBlocks) has(i int) bool {
	_, ok := cb.get(i)
	return ok
}

func (cb *codedBlocks) held() []int {
	cb.mu.RLock()
	defer cb.mu.RUnlock()
	out := make([]int, 0, cb.n)
	for i, b := range cb.data {
		if b != nil {
			out = append(out, i)
		}
	}
	return out
}

// encodeHashes is the coded header: K, N, block size and content size as
// uvarints, then the hash of every coded block.
func (cb *codedBlocks) encodeHashes() []byte {
	c := cb.gens.Code()
	b := binary.AppendUvarint(nil, uint64(c.K()))
	b = binary.AppendUvarint(b, uint64(c.N()))
	b = binary.AppendUvarint(b, uint64(c.BlockSize()))
	b = binary.AppendUvarint(b, uint64(cb.gens.Size()))
	return append(b, cb.hashes...)
}

// decodeCodedHeader checks a coded header against the manifest and returns an
// empty set of coded blocks with its hashes.
func decodeCodedHeader(b []byte, m *chunker.Manifest) (*codedBlocks, error) {
	var v [4]uint64
	for j := range v {
		x, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("%w: coded header: truncated varint", ErrMalformed)
		}
		v[j], b = x, b[k:]
	}
	k, n, bs, size := v[0], v[1], v[2], v[3]
	if bs != uint64(m.BlockSize()) || size != uint64(m.TotalSize()) || k == 0 || n < k || n > erasure.MaxBlocks {
		return nil, fmt.Errorf("%w: coded header (k %d, n %d, %d-byte blocks, %d bytes) does not fit the manifest", ErrMalformed, k, n, bs, size)
	}
	// Check the hashes present against the coded block count before building
	// anything sized by the header's claims.
	span := k * bs
	gens := max((size+span-1)/span, 1)
	if uint64(len(b)) != gens*n*chunker.HashSize {
		return nil, fmt.Errorf("%w: %d bytes of hashes for %d coded blocks", ErrMalformed, len(b), gens*n)
	}
	cb, err := newCodedBlocks(m, ByersParams{K: int(k), N: int(n)})
	if err != nil {
		return nil, err
	}
	if len(b) != cb.count()*chunker.HashSize {
		return nil, fmt.Errorf("%w: %d bytes of hashes for %d coded blocks", ErrMalformed, len(b), cb.count())
	}
	cb.hashes = bytes.Clone(b)
	return cb, nil
}

// share returns a coded set of the same content holding the coded blocks
// held of cb (as cb's slices, not copies), whose received blocks are kept
// as cb's slices where the bytes are equal.
func (cb *codedBlocks) share(held []int) (*codedBlocks, error) {
	origin := cb
	if cb.origin != nil {
		origin = cb.origin
	}
	r, err := newResponder(cb.gens.Blocks(), reconcile.Byers)
	if err != nil {
		return nil, err
	}
	out := &codedBlocks{gens: cb.gens, recon: r, hashes: cb.hashes, origin: origin, decodes: origin.decodes, data: make([][]byte, cb.gens.Blocks())}
	for _, i := range held {
		b, ok := origin.get(i)
		if i < 0 || i >= out.count() || !ok {
			return nil, fmt.Errorf("peer: share coded blocks: block %d of %d is not held", i, out.count())
		}
		if out.data[i] == nil {
			out.data[i] = b
			out.n++
		}
	}
	return out, nil
}

// A CodedSet is the Reed–Solomon coded blocks of one content that a peer
// serves for the Byers baseline (a seed made with WithByers), with the hash
// of every coded block. Share hands parts of it to other services of the
// same process, which then keep one copy of every coded block between them
// (as a testnet of hundreds of peers needs) and bound their concurrent
// decodes together to GOMAXPROCS.
type CodedSet struct {
	cb *codedBlocks
}

// CodedSet returns the coded blocks the service serves for root, or ok
// false if it serves none.
func (p *Service) CodedSet(root chunker.ID) (cs *CodedSet, ok bool) {
	c := p.lookup(root[:])
	if c == nil {
		return nil, false
	}
	cb := c.codedSet()
	if cb == nil {
		return nil, false
	}
	return &CodedSet{cb: cb}, true
}

// Count is the number of coded blocks of the content.
func (s *CodedSet) Count() int { return s.cb.count() }

// Held lists the coded blocks the set holds.
func (s *CodedSet) Held() []int { return s.cb.held() }

// Has reports whether coded block i is held.
func (s *CodedSet) Has(i int) bool { return s.cb.has(i) }

// byersTarget fetches coded blocks and decodes each generation into the store
// as soon as it holds K of them. Its erasure.Collector gathers the blocks and
// decodes outside every lock the fetch's workers need, in one of the coded
// set's decode slots.
type byersTarget struct {
	ctx  context.Context // ends decodes waiting for a slot (the service's)
	c    *content
	cb   *codedBlocks
	coll *erasure.Collector

	mu         sync.Mutex
	ready      []int // generations claimed for decoding before the fetch started
	decodeTime time.Duration
	failed     error // the first decode that failed
}

// newByersTarget is the Byers fetch of c's coded blocks cb: generations whole
// in the store need no coded block; generations with K coded blocks held are
// decoded by decodeReady.
func newByersTarget(ctx context.Context, c *content, cb *codedBlocks) (*byersTarget, error) {
	t := &byersTarget{ctx: ctx, c: c, cb: cb, coll: erasure.NewCollector(cb.gens, erasure.WithDecodeSlots(cb.decodes))}
	k := cb.gens.Code().K()
	for gen := range cb.gens.Count() {
		whole := true
		for i := gen * k; i < min((gen+1)*k, c.man.BlockCount()); i++ {
			whole = whole && c.store.Has(i)
		}
		if whole {
			t.coll.SetDecoded(gen)
		}
	}
	for _, i := range cb.held() {
		b, _ := cb.get(i)
		gen, ready, err := t.coll.Add(i, b)
		if err != nil {
			return nil, fmt.Errorf("peer: byers: %w", err)
		}
		if ready {
			t.ready = append(t.ready, gen)
		}
	}
	return t, nil
}

func (t *byersTarget) responder() *responder    { return t.cb.recon }
func (t *byersTarget) method() reconcile.Method { return reconcile.Byers }
func (t *byersTarget) coded() bool              { return true }
func (t *byersTarget) count() int               { return t.cb.count() }
func (t *byersTarget) unitSize() int            { return t.cb.gens.Code().BlockSize() }
func (t *byersTarget) held() []int              { return t.cb.held() }
func (t *byersTarget) complete() bool           { return t.c.store.Complete() }

// has reports whether coded block i is held or no longer needed: its
// generation is decoded or being decoded.
func (t *byersTarget) has(i int) bool { return t.cb.has(i) || !t.coll.Needed(i) }

func (t *byersTarget) put(i int, data []byte) error {
	if i < 0 || i >= t.cb.count() {
		return fmt.Errorf("%w: coded block %d of %d", ErrMalformed, i, t.cb.count())
	}
	var keep []byte
	if o := t.cb.origin; o != nil {
		if b, ok := o.get(i); ok && bytes.Equal(b, data) {
			// The origin's block passed its hash when it was coded; equal
			// bytes pass it too.
			keep = b
		}
	}
	if keep == nil {
		h := chunker.HashBlock(data)
		if len(data) != t.unitSize() || !bytes.Equal(h[:], t.cb.hashes[i*chunker.HashSize:(i+1)*chunker.HashSize]) {
			return fmt.Errorf("%w: coded block %d", ErrBadBlock, i)
		}
		keep = bytes.Clone(data)
	}
	t.cb.mu.Lock()
	if t.cb.data[i] != nil {
		t.cb.mu.Unlock()
		return nil
	}
	t.cb.data[i] = keep
	t.cb.n++
	t.cb.mu.Unlock()
	gen, ready, err := t.coll.Add(i, keep)
	if err != nil || !ready {
		return err
	}
	return t.decode(gen)
}

// decodeReady decodes the generations that held K coded blocks before the
// fetch started.
func (t *byersTarget) decodeReady() error {
	t.mu.Lock()
	ready := t.ready
	t.ready = nil
	t.mu.Unlock()
	for _, gen := range ready {
		if err := t.decode(gen); err != nil {
			return err
		}
	}
	return nil
}

// decode decodes generation gen, claimed from the collector, and stores its
// source blocks. It holds no lock of the target's while it decodes.
func (t *byersTarget) decode(gen int) error {
	t0 := clock.Wall.Now()
	src, err := t.coll.Decode(t.ctx, gen)
	d := clock.Wall.Since(t0)
	if err == nil {
		err = t.store(gen, src)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.decodeTime += d
	if err != nil && t.failed == nil {
		t.failed = err
	}
	return err
}

// store writes the source blocks src of generation gen into the store.
func (t *byersTarget) store(gen int, src [][]byte) error {
	first := gen * t.cb.gens.Code().K()
	for j, b := range src {
		i := first + j
		if i >= t.c.man.BlockCount() {
			break
		}
		if t.c.store.Has(i) {
			continue
		}
		if err := t.c.store.PutBlock(i, b[:t.c.man.BlockLen(i)]); err != nil {
			if errors.Is(err, chunker.ErrBadBlock) {
				// Every coded block matched its hash, so the hashes were wrong:
				// the peer that sent them lied.
				return fmt.Errorf("%w: decoded block %d: %w", ErrManifestMismatch, i, err)
			}
			return err
		}
	}
	return nil
}

// decodeSeconds is the time spent decoding.
func (t *byersTarget) decodeSeconds() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.decodeTime.Seconds()
}

// err is the first decode error, if any.
func (t *byersTarget) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
