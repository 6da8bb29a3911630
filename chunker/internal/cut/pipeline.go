package cut

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/reconcile-p2p/reconcile/chunker/internal/blake3sum"
)

// Cutting a stream into blocks and hashing them: hashBlocks is the pipeline (one
// goroutine reading and cutting, several hashing, a few segment buffers between
// them); Stream feeds it fixed-size blocks, Content content-defined ones. A
// block is hashed where it was read: a segment holds several blocks and goes
// back to the free list once every block in it is hashed.

// segment is a buffer of read bytes shared by the blocks cut from it: refs
// counts the producer's hold and each block not yet hashed.
type segment struct {
	buf  []byte
	refs atomic.Int32
}

type chunkJob struct {
	index  int
	seg    *segment
	lo, hi int
}

type chunkResult struct {
	index int
	hash  [HashSize]byte
}

// BlockFunc is called by the hashing workers with each block's index, bytes
// and hash, before its buffer is reused (concurrently, in no order); an error
// stops the pipeline and is returned by it.
type BlockFunc func(index int, data []byte, hash *[HashSize]byte) error

// Stream reads r to EOF in blocks and hashes them with workers goroutines. It
// returns the flat block hashes and the number of bytes read. expect >= 0 is the
// expected size, used to size the hash slice; reading stops with an error past it.
// each, if not nil, sees every block.
func Stream(ctx context.Context, r io.Reader, blockSize, workers int, expect int64, each BlockFunc) ([]byte, int64, error) {
	blocks := 0
	if expect >= 0 {
		n := (expect + int64(blockSize) - 1) / int64(blockSize)
		if n > MaxBlocks {
			return nil, 0, fmt.Errorf("%w: %d", ErrTooMany, n)
		}
		blocks = int(n)
	}
	var total int64
	flat, err := hashBlocks(ctx, workers, blockSize, blocks, each, func(p *pipe) error {
		for {
			seg, err := p.get()
			if err != nil {
				return err
			}
			n, err := io.ReadFull(r, seg.buf)
			total += int64(n)
			if n > 0 {
				if err := p.emit(seg, 0, n); err != nil {
					return err
				}
			}
			p.put(seg)
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil
			}
			if err != nil {
				return err
			}
			if expect >= 0 && total > expect {
				return fmt.Errorf("read more than the expected %d bytes", expect)
			}
		}
	})
	if err != nil {
		return nil, total, err
	}
	return flat, total, nil
}

// Content cuts the bytes of each reader that next returns (nil once there
// are no more) into content-defined blocks of rule c, each reader on its own, and
// hashes them with workers goroutines. It returns the blocks' stream offsets (one
// more than the blocks, the last being the bytes read) and their flat hashes.
// Finding the cuts is sequential (gear, the cuts of c.Algorithm); hashing runs
// beside it, on the bytes where they were read. blocks is a guess of the block
// count, to size the hash slice. each, if not nil, sees every block.
func Content(ctx context.Context, next func() (io.Reader, error), c CDC, workers, blocks int, each BlockFunc) ([]int64, []byte, error) {
	level, err := c.level()
	if err != nil {
		return nil, nil, err
	}
	g := newGear(c, level)
	// A cut is looked for once ahead bytes are read (most blocks end
	// before), and again with c.Max bytes when none was found, so that
	// the hashers read bytes that were read and scanned just before.
	ahead := min(c.Max, 2*c.Normal)
	offs := make([]int64, 1, blocks+1)
	flat, err := hashBlocks(ctx, workers, segmentLen(c), blocks, each, func(p *pipe) error {
		seg, err := p.get()
		if err != nil {
			return err
		}
		defer func() { p.put(seg) }()
		// seg.buf[lo:hi] holds the bytes read and not yet cut; a reader
		// starts where the one before ended, beside blocks being hashed.
		lo, hi := 0, 0
		for {
			r, err := next()
			if err != nil || r == nil {
				return err
			}
			eof, empty, want := false, 0, ahead
			for {
				for !eof && hi-lo < want {
					if hi == len(seg.buf) {
						// The segment is full: the bytes not yet cut
						// move to a new one.
						fresh, err := p.get()
						if err != nil {
							return err
						}
						hi = copy(fresh.buf, seg.buf[lo:hi])
						lo = 0
						p.put(seg)
						seg = fresh
					}
					n, err := r.Read(seg.buf[hi:min(len(seg.buf), hi+readLen)])
					hi += n
					switch {
					case err == io.EOF:
						eof = true
					case err != nil:
						return err
					case n > 0:
						empty = 0
					case empty == 100:
						return io.ErrNoProgress
					default:
						empty++
					}
				}
				if lo == hi {
					break
				}
				n := g.next(seg.buf[lo:hi])
				if n == hi-lo && !eof && n < c.Max {
					// No cut in the bytes at hand: it may lie in
					// the bytes after them.
					want = c.Max
					continue
				}
				offs = append(offs, offs[len(offs)-1]+int64(n))
				if err := p.emit(seg, lo, lo+n); err != nil {
					return err
				}
				lo += n
				want = ahead
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if len(flat) != (len(offs)-1)*HashSize {
		return nil, nil, fmt.Errorf("%w: %d blocks hashed, %d cut", ErrMiscount, len(flat)/HashSize, len(offs)-1)
	}
	return offs, flat, nil
}

// readLen bounds one read of Content, so that the bytes read are still in
// the cache when they are scanned and hashed.
const readLen = 256 << 10

// segmentLen is the length of Content's segments: several blocks of rule c,
// so that the bytes moved when a block straddles two segments are few.
func segmentLen(c CDC) int { return max(2*c.Max, 8<<20) }

// level returns the normalization level of c's algorithm, or an error
// wrapping ErrRule if gear cannot cut by c.
func (c CDC) level() (int, error) {
	level := -1
	switch c.Algorithm {
	case "", Algorithm:
		level = 2
	case AlgorithmNC0:
		level = 0
	}
	if level < 0 || c.Min < 64 || c.Min >= c.Normal || c.Normal >= c.Max || c.Normal&(c.Normal-1) != 0 {
		return 0, fmt.Errorf("%w: %q %d/%d/%d", ErrRule, c.Algorithm, c.Min, c.Normal, c.Max)
	}
	return level, nil
}

// pipe is what hashBlocks gives its producer: get takes a free segment (held
// once by the caller; it fails once ctx is done), emit hands the bytes
// seg.buf[lo:hi] to the hashers as the next block (it fails past MaxBlocks
// blocks), and put lets go of the caller's hold on a segment.
//
// Blocks go to the hashers in batches: those emitted since the last send, sent
// once they hold batchLen bytes, by the next get, or once produce returns; their
// hashes come back in one batch. A batch wakes a hasher (and the collector)
// once, not once a block: waking them once a block of about 121 KiB (some 40 µs of
// hashing) kept a 1 GiB seed on 2 cores at about 1.1 goroutines running, the
// reader waiting 0.76 s runnable in all (go tool trace -pprof=sched).
type pipe struct {
	ctx      context.Context
	free     chan *segment // segments let go of, of those made
	made     int           // segments made, at most cap(free)
	bufLen   int
	jobs     chan []chunkJob
	batch    []chunkJob // emitted, not yet sent
	batchLen int        // their bytes
	sends    int        // batches sent
	i        int
}

func (p *pipe) get() (*segment, error) {
	// The blocks emitted hold segments: they go to the hashers before this
	// waits for one of those segments to be let go of.
	if err := p.flush(); err != nil {
		return nil, err
	}
	var seg *segment
	select {
	case seg = <-p.free:
	default:
		if p.made < cap(p.free) {
			p.made++
			seg = &segment{buf: make([]byte, p.bufLen)}
			break
		}
		select {
		case seg = <-p.free:
		case <-p.ctx.Done():
			return nil, p.ctx.Err()
		}
	}
	if err := p.ctx.Err(); err != nil {
		p.free <- seg
		return nil, err
	}
	seg.refs.Store(1)
	return seg, nil
}

func (p *pipe) emit(seg *segment, lo, hi int) error {
	if p.i >= MaxBlocks {
		return fmt.Errorf("%w: more than %d", ErrTooMany, MaxBlocks)
	}
	seg.refs.Add(1)
	p.batch = append(p.batch, chunkJob{p.i, seg, lo, hi})
	p.i++
	p.batchLen += hi - lo
	if p.batchLen >= batchLen {
		return p.flush()
	}
	return nil
}

// batchLen is the most bytes of blocks emit holds before sending them to
// the hashers: enough for a wake-up to be a small part of hashing them, few
// enough for them to be hashed while still in the cache.
const batchLen = 1 << 20

// flush sends the blocks emitted since the last flush to the hashers.
func (p *pipe) flush() error {
	if len(p.batch) == 0 {
		return nil
	}
	select {
	case p.jobs <- p.batch:
		p.sends++
	case <-p.ctx.Done():
		// The hashers may be gone: let go of the blocks' holds here.
		for _, j := range p.batch {
			p.put(j.seg)
		}
		p.batch, p.batchLen = nil, 0
		return p.ctx.Err()
	}
	p.batch, p.batchLen = nil, 0
	return nil
}

func (p *pipe) put(seg *segment) {
	if seg.refs.Add(-1) == 0 {
		p.free <- seg
	}
}

// hashBlocks runs produce on a goroutine of its own and hashes the blocks it
// emits with workers goroutines, returning their hashes in emission order.
// produce takes segments of bufLen bytes and emits blocks through p; its error
// is returned. blocks sizes the hash slice. each, if not nil, is called with
// every block as it is hashed; its first error stops produce and is returned.
func hashBlocks(ctx context.Context, workers, bufLen, blocks int, each BlockFunc, produce func(p *pipe) error) ([]byte, error) {
	workers = max(workers, 1)
	flat := make([]byte, 0, blocks*HashSize)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	p := &pipe{ctx: ctx, free: make(chan *segment, max(workers+2, 4)), bufLen: bufLen, jobs: make(chan []chunkJob, workers)}
	results := make(chan []chunkResult, workers+2)

	var (
		wg      sync.WaitGroup
		eachErr error
		errOnce sync.Once
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range p.jobs {
				res := make([]chunkResult, 0, len(batch))
				for _, j := range batch {
					data := j.seg.buf[j.lo:j.hi]
					h := blake3sum.Sum256(data)
					if each != nil && ctx.Err() == nil {
						if err := each(j.index, data, &h); err != nil {
							errOnce.Do(func() { eachErr = err; cancel() })
						}
					}
					p.put(j.seg)
					res = append(res, chunkResult{j.index, h})
				}
				results <- res
			}
		}()
	}

	var prodErr error
	go func() {
		defer func() {
			close(p.jobs)
			wg.Wait()
			close(results)
		}()
		prodErr = produce(p)
		if err := p.flush(); prodErr == nil {
			prodErr = err
		}
	}()

	count := 0
	for batch := range results {
		for _, res := range batch {
			off := res.index * HashSize
			if need := off + HashSize; need > len(flat) {
				flat = append(flat, make([]byte, need-len(flat))...)
			}
			copy(flat[off:], res.hash[:])
			count++
		}
	}
	if eachErr != nil {
		return nil, eachErr
	}
	if prodErr != nil {
		return nil, prodErr
	}
	if count*HashSize != len(flat) {
		return nil, fmt.Errorf("%w: %d blocks hashed, %d expected", ErrMiscount, count, len(flat)/HashSize)
	}
	return flat, nil
}
