package cut

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"lukechampine.com/blake3"
)

const blockSize = 1 << 10

// TestStreamWorkers checks that the pipeline gives the same hashes with any number of
// workers, block sizes and stream lengths.
func TestStreamWorkers(t *testing.T) {
	data := make([]byte, 37*blockSize+123)
	rand.NewChaCha8([32]byte{9}).Read(data)
	var want [][HashSize]byte
	for off := 0; off < len(data); off += blockSize {
		want = append(want, blake3.Sum256(data[off:min(off+blockSize, len(data))]))
	}
	for _, w := range []int{1, 2, 3, 8} {
		for _, n := range []int{0, 1, blockSize, 5*blockSize - 1, len(data)} {
			flat, total, err := Stream(context.Background(), bytes.NewReader(data[:n]), blockSize, w, -1, nil)
			if err != nil || total != int64(n) {
				t.Fatalf("workers %d, %d bytes: %v, total %d", w, n, err, total)
			}
			nb := (n + blockSize - 1) / blockSize
			if len(flat) != nb*HashSize {
				t.Fatalf("workers %d, %d bytes: %d hashes", w, n, len(flat)/HashSize)
			}
			if n == len(data) {
				for i := range nb {
					if !bytes.Equal(flat[i*HashSize:(i+1)*HashSize], want[i][:]) {
						t.Fatalf("workers %d: block %d hash differs", w, i)
					}
				}
			}
		}
	}
}

// TestBatches checks that the blocks of a segment go to the hashers in one
// batch (a wake-up per segment, not per block), that every block is hashed
// where it lies, and that an error of each while batches are queued stops
// the pipeline without a hang.
func TestBatches(t *testing.T) {
	const segLen, blockLen, segs = 64 << 10, 1000, 5
	data := make([]byte, segs*segLen)
	rand.NewChaCha8([32]byte{4}).Read(data)
	var want []byte
	for s := 0; s < segs; s++ {
		for lo := 0; lo+blockLen <= segLen; lo += blockLen {
			h := blake3.Sum256(data[s*segLen+lo : s*segLen+lo+blockLen])
			want = append(want, h[:]...)
		}
	}
	produce := func(sends *int) func(p *pipe) error {
		return func(p *pipe) error {
			defer func() { *sends = p.sends }()
			for s := 0; s < segs; s++ {
				seg, err := p.get()
				if err != nil {
					return err
				}
				copy(seg.buf, data[s*segLen:])
				for lo := 0; lo+blockLen <= segLen; lo += blockLen {
					if err := p.emit(seg, lo, lo+blockLen); err != nil {
						return err
					}
				}
				p.put(seg)
			}
			return nil
		}
	}
	for _, w := range []int{1, 2, 3} {
		var sends int
		flat, err := hashBlocks(context.Background(), w, segLen, 0, nil, produce(&sends))
		if err != nil || !bytes.Equal(flat, want) {
			t.Fatalf("workers %d: %v, hashes equal %v", w, err, bytes.Equal(flat, want))
		}
		// The last segment's batch is sent after produce returns.
		if sends != segs-1 {
			t.Fatalf("workers %d: %d batches sent by get for %d segments, want %d", w, sends, segs, segs-1)
		}
		stop := errors.New("stop")
		var n atomic.Int32
		_, err = hashBlocks(context.Background(), w, segLen, 0, func(int, []byte, *[HashSize]byte) error {
			if n.Add(1) == 70 {
				return stop
			}
			return nil
		}, produce(&sends))
		if !errors.Is(err, stop) {
			t.Fatalf("workers %d: error %v, want %v", w, err, stop)
		}
	}
}
