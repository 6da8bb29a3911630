package peer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/erasure"
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
	return &codedBlocks{gens: gens, recon: r, data: make([][]byte, gens.Blocks())}, nil
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
	d := decoder{b: b}
	k, n, bs, size := d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	if bs != uint64(m.BlockSize()) || size != uint64(m.TotalSize()) || k == 0 || n < k || n > erasure.MaxBlocks {
		return nil, fmt.Errorf("%w: coded header (k %d, n %d, %d-byte blocks, %d bytes) does not fit the manifest", ErrMalformed, k, n, bs, size)
	}
	// Check the hashes present against the coded block count before building
	// anything sized by the header's claims.
	span := k * bs
	gens := max((size+span-1)/span, 1)
	if uint64(len(d.b)) != gens*n*chunker.HashSize {
		return nil, fmt.Errorf("%w: %d bytes of hashes for %d coded blocks", ErrMalformed, len(d.b), gens*n)
	}
	cb, err := newCodedBlocks(m, ByersParams{K: int(k), N: int(n)})
	if err != nil {
		return nil, err
	}
	if len(d.b) != cb.count()*chunker.HashSize {
		return nil, fmt.Errorf("%w: %d bytes of hashes for %d coded blocks", ErrMalformed, len(d.b), cb.count())
	}
	cb.hashes = bytes.Clone(d.b)
	return cb, nil
}

// byersTarget fetches coded blocks and decodes each generation into the store
// as soon as it holds K of them.
type byersTarget struct {
	c  *content
	cb *codedBlocks

	mu         sync.Mutex
	perGen     []int // coded blocks held per generation
	decoded    []bool
	decodeTime time.Duration
}

func (t *byersTarget) responder() *responder    { return t.cb.recon }
func (t *byersTarget) method() reconcile.Method { return reconcile.Byers }
func (t *byersTarget) coded() bool              { return true }
func (t *byersTarget) count() int               { return t.cb.count() }
func (t *byersTarget) unitSize() int            { return t.cb.gens.Code().BlockSize() }
func (t *byersTarget) held() []int              { return t.cb.held() }
func (t *byersTarget) complete() bool           { return t.c.store.Complete() }

// has reports whether coded block i is held or no longer needed (its
// generation is decoded).
func (t *byersTarget) has(i int) bool {
	if t.cb.has(i) {
		return true
	}
	gen, _ := t.cb.gens.Locate(i)
	t.mu.Lock()
	defer t.mu.Unlock()
	return gen >= 0 && gen < len(t.decoded) && t.decoded[gen]
}

func (t *byersTarget) put(i int, data []byte) error {
	if i < 0 || i >= t.cb.count() {
		return fmt.Errorf("%w: coded block %d of %d", ErrMalformed, i, t.cb.count())
	}
	h := chunker.HashBlock(data)
	if len(data) != t.unitSize() || !bytes.Equal(h[:], t.cb.hashes[i*chunker.HashSize:(i+1)*chunker.HashSize]) {
		return fmt.Errorf("%w: coded block %d", ErrBadBlock, i)
	}
	t.cb.mu.Lock()
	if t.cb.data[i] != nil {
		t.cb.mu.Unlock()
		return nil
	}
	t.cb.data[i] = bytes.Clone(data)
	t.cb.n++
	t.cb.mu.Unlock()

	gen, _ := t.cb.gens.Locate(i)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.perGen[gen]++
	if t.decoded[gen] || t.perGen[gen] < t.cb.gens.Code().K() {
		return nil
	}
	return t.decode(gen)
}

// decode rebuilds generation gen and stores its source blocks. t.mu is held.
func (t *byersTarget) decode(gen int) error {
	nn := t.cb.gens.Code().N()
	var blocks []erasure.Block
	for j := 0; j < nn; j++ {
		if b, ok := t.cb.get(t.cb.gens.ID(gen, j)); ok {
			blocks = append(blocks, erasure.Block{Index: j, Data: b})
		}
	}
	t0 := time.Now()
	data, err := t.cb.gens.DecodeGeneration(gen, blocks)
	t.decodeTime += time.Since(t0)
	if err != nil {
		return fmt.Errorf("peer: byers decode: %w", err)
	}
	m := t.c.man
	bs := m.BlockSize()
	first := gen * t.cb.gens.Code().K()
	for off := 0; off < len(data); off += bs {
		i := first + off/bs
		if t.c.store.Has(i) {
			continue
		}
		if err := t.c.store.PutBlock(i, data[off:min(off+bs, len(data))]); err != nil {
			if errors.Is(err, chunker.ErrBadBlock) {
				// Every coded block matched its hash, so the hashes were wrong:
				// the peer that sent them lied.
				return fmt.Errorf("%w: decoded block %d: %w", ErrManifestMismatch, i, err)
			}
			return err
		}
	}
	t.decoded[gen] = true
	return nil
}

// fetchByers is Fetch with the Byers baseline: reconcile Bloom filters of coded
// blocks, fetch coded blocks, decode.
func (p *Peer) fetchByers(ctx context.Context, t Ticket, out string, fc fetchConfig, start time.Time) (*Summary, error) {
	srcs := p.connectAll(ctx, t.Peers, fc.peers)
	if len(srcs) == 0 {
		return nil, fmt.Errorf("%w: could not connect to %s", ErrNoPeers, anyOf(len(t.Peers)+len(fc.peers)))
	}
	m, err := p.fetchManifest(ctx, t.Root, srcs, false)
	if err != nil {
		return nil, err
	}
	var cb *codedBlocks
	var errs []error
	for _, id := range srcs {
		cb, err = p.fetchCodedHeader(ctx, t.Root, id, m)
		if err == nil {
			break
		}
		errs = append(errs, fmt.Errorf("%s: %w", id, err))
	}
	if cb == nil {
		return nil, fmt.Errorf("%w: no peer serves coded blocks (seed with byers on): %w", ErrNoPeers, errors.Join(errs...))
	}
	store, err := chunker.OpenOrCreateStore(ctx, out, m, chunker.WithSyncEvery(p.cfg.syncEvery))
	if err != nil {
		if errors.Is(err, chunker.ErrManifestMismatch) {
			return nil, fmt.Errorf("%w: %s holds other content", ErrManifestMismatch, out)
		}
		return nil, fmt.Errorf("peer: open %s: %w", out, err)
	}
	c, err := newContent(m, store)
	if err != nil {
		store.Close()
		return nil, err
	}
	c.coded = cb
	if err := p.add(c); err != nil {
		store.Close()
		return nil, err
	}
	bt := &byersTarget{c: c, cb: cb, perGen: make([]int, cb.gens.Count()), decoded: make([]bool, cb.gens.Count())}
	// Generations already whole in the store need no coded block.
	k := cb.gens.Code().K()
	for g := range bt.decoded {
		whole := true
		for i := g * k; i < min((g+1)*k, m.BlockCount()); i++ {
			whole = whole && store.Has(i)
		}
		bt.decoded[g] = whole
	}
	f := newFetch(p, c, bt, fc)
	sum, err := f.run(ctx, srcs)
	sum.Out = out
	sum.Seconds = time.Since(start).Seconds()
	bt.mu.Lock()
	sum.DecodeSeconds = bt.decodeTime.Seconds()
	bt.mu.Unlock()
	if serr := store.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("peer: sync %s: %w", out, serr)
	}
	return sum, err
}

func (p *Peer) fetchCodedHeader(ctx context.Context, root chunker.ID, id lpeer.ID, m *chunker.Manifest) (*codedBlocks, error) {
	max := 4*binaryMaxVarint + (MaxByersBytes/m.BlockSize()+1)*64*chunker.HashSize
	body, err := p.askManifest(ctx, root, id, true, max)
	if err != nil {
		return nil, err
	}
	return decodeCodedHeader(body, m)
}
