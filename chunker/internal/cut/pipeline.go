package cut

import (
	"context"
	"fmt"
	"io"
	"sync"

	cdc "github.com/PlakarKorp/go-cdc-chunkers"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc" // registers Algorithm

	"github.com/reconcile-p2p/reconcile/chunker/internal/blake3sum"
)

// Cutting a stream into blocks and hashing them: hashBlocks is the pipeline (one
// goroutine reading and cutting, several hashing, a few buffers between them);
// Stream feeds it fixed-size blocks, Content content-defined ones.

type chunkJob struct {
	index int
	buf   []byte
	n     int
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
	flat, err := hashBlocks(ctx, workers, blockSize, blocks, each, func(get func() ([]byte, error), emit func([]byte, int) error) error {
		for {
			buf, err := get()
			if err != nil {
				return err
			}
			n, err := io.ReadFull(r, buf)
			total += int64(n)
			if n > 0 {
				if err := emit(buf, n); err != nil {
					return err
				}
			}
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
// Finding the cuts is sequential; hashing runs beside it. blocks is a guess of
// the block count, to size the hash slice. each, if not nil, sees every block.
func Content(ctx context.Context, next func() (io.Reader, error), c CDC, workers, blocks int, each BlockFunc) ([]int64, []byte, error) {
	offs := make([]int64, 1, blocks+1)
	flat, err := hashBlocks(ctx, workers, c.Max, blocks, each, func(get func() ([]byte, error), emit func([]byte, int) error) error {
		var ch *cdc.Chunker
		for {
			r, err := next()
			if err != nil || r == nil {
				return err
			}
			if ch == nil {
				opts := &cdc.ChunkerOpts{MinSize: c.Min, NormalSize: c.Normal, MaxSize: c.Max}
				if ch, err = cdc.NewChunkerBuffer(Algorithm, r, opts, make([]byte, 2*c.Max)); err != nil {
					return fmt.Errorf("%w: %s %d/%d/%d: %w", ErrRule, Algorithm, c.Min, c.Normal, c.Max, err)
				}
			} else {
				ch.Reset(r)
			}
			for {
				data, err := ch.Next()
				if len(data) > 0 {
					buf, gerr := get()
					if gerr != nil {
						return gerr
					}
					n := copy(buf, data)
					offs = append(offs, offs[len(offs)-1]+int64(n))
					if err := emit(buf, n); err != nil {
						return err
					}
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					return err
				}
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

// hashBlocks runs produce on a goroutine of its own and hashes the blocks it
// emits with workers goroutines, returning their hashes in emission order.
// produce takes free buffers of bufLen bytes from get (which fails once ctx is
// done) and hands each back, holding a block of n bytes, to emit (which fails
// past MaxBlocks blocks); its error is returned. blocks sizes the hash slice.
// each, if not nil, is called with every block as it is hashed; its first
// error stops produce and is returned.
func hashBlocks(ctx context.Context, workers, bufLen, blocks int, each BlockFunc, produce func(get func() ([]byte, error), emit func(buf []byte, n int) error) error) ([]byte, error) {
	workers = max(workers, 1)
	flat := make([]byte, 0, blocks*HashSize)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	free := make(chan []byte, workers+2)
	for range workers + 2 {
		free <- make([]byte, bufLen)
	}
	jobs := make(chan chunkJob, workers)
	results := make(chan chunkResult, workers+2)

	var (
		wg      sync.WaitGroup
		eachErr error
		errOnce sync.Once
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				h := blake3sum.Sum256(j.buf[:j.n])
				if each != nil && ctx.Err() == nil {
					if err := each(j.index, j.buf[:j.n], &h); err != nil {
						errOnce.Do(func() { eachErr = err; cancel() })
					}
				}
				free <- j.buf
				results <- chunkResult{j.index, h}
			}
		}()
	}

	var prodErr error
	go func() {
		defer func() {
			close(jobs)
			wg.Wait()
			close(results)
		}()
		i := 0
		get := func() ([]byte, error) {
			select {
			case buf := <-free:
				return buf, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		emit := func(buf []byte, n int) error {
			if i >= MaxBlocks {
				return fmt.Errorf("%w: more than %d", ErrTooMany, MaxBlocks)
			}
			jobs <- chunkJob{i, buf, n}
			i++
			return nil
		}
		prodErr = produce(get, emit)
	}()

	count := 0
	for res := range results {
		off := res.index * HashSize
		if need := off + HashSize; need > len(flat) {
			flat = append(flat, make([]byte, need-len(flat))...)
		}
		copy(flat[off:], res.hash[:])
		count++
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
