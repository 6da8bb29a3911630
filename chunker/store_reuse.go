package chunker

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/reconcile-p2p/reconcile/chunker/internal/cut"
)

// ReuseStats is what Store.Reuse took from local files.
type ReuseStats struct {
	Blocks  int   // blocks stored from local files
	Bytes   int64 // their bytes
	Files   int   // files read
	Scanned int64 // bytes read
	// Bases are the local bytes that stood where the runs of blocks still
	// missing stand, for a fetch to ask for those runs as deltas (Basis).
	Bases []Basis
}

// Reuse stores the blocks the store lacks that local files already hold: it cuts
// every regular file under paths (files, or folders walked; state folders, such
// as .reconcile and FILE.reconcile, and symbolic links are left out) by the
// manifest's rule, content-defined or fixed-size from each file's start, hashes
// the pieces and stores each one whose hash and length are those of a missing
// block. The files are only read. Paths that do not
// exist are skipped. This is how a fetch into an older version takes what that
// version shares with the new one: with content-defined blocks, everything but
// the blocks around each edit, wherever the bytes moved to.
//
// fn, if not nil, is called from one goroutine as the files are read, with the
// bytes read so far and the total. Cancelling ctx stops the scan; the blocks
// stored so far stay.
func (s *Store) Reuse(ctx context.Context, paths []string, fn func(done, total int64)) (ReuseStats, error) {
	var st ReuseStats
	if s.readOnly {
		return st, ErrReadOnly
	}
	missing := s.Missing()
	if len(missing) == 0 {
		return st, nil
	}
	want := make(map[[HashSize]byte][]int, len(missing))
	for _, i := range missing {
		h := s.m.BlockHash(i)
		want[h] = append(want[h], i)
	}
	files, total, err := cut.Walk(paths)
	if err != nil {
		return st, fmt.Errorf("chunker: reuse local files: %w", err)
	}
	if len(files) == 0 {
		return st, nil
	}
	var (
		claimed = make([]atomic.Bool, s.m.blockCount)
		from    = make([]int32, s.m.blockCount) // 1 + the local block a block was taken from
		blocks  atomic.Int64
		bytes   atomic.Int64
	)
	each := func(k int, data []byte, h *[HashSize]byte) error {
		for _, i := range want[*h] {
			if s.m.BlockLen(i) != len(data) || claimed[i].Swap(true) {
				continue
			}
			if k < math.MaxInt32 {
				from[i] = int32(k + 1)
			}
			if err := s.putChecked(i, data); err != nil {
				return err
			}
			blocks.Add(1)
			bytes.Add(int64(len(data)))
		}
		return nil
	}
	cfg := cut.Config{Size: s.m.blockSize, Workers: cut.DefaultWorkers(), Progress: fn}
	if s.m.ContentDefined() {
		cfg.CDC = cut.CDC(s.m.chunking)
	}
	l, scanned, err := cut.Files(ctx, files, total, cfg, each)
	st.Files, st.Scanned = l.Opened(), scanned
	st.Blocks, st.Bytes = int(blocks.Load()), bytes.Load()
	if err != nil {
		return st, cutError("reuse local files", err)
	}
	st.Bases = s.bases(files, l, from)
	return st, nil
}
