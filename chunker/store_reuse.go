package chunker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// ReuseStats is what Store.Reuse took from local files.
type ReuseStats struct {
	Blocks  int   // blocks stored from local files
	Bytes   int64 // their bytes
	Files   int   // files read
	Scanned int64 // bytes read
}

// Reuse stores the blocks the store lacks that local files already hold: it cuts
// every regular file under paths (files, or folders walked; state folders, such
// as .reconcile and FILE.reconcile, and symbolic links are left out) by the
// manifest's rule, content-defined or fixed-size from each file's start, hashes
// the pieces and stores each one whose hash is that of a missing block (through
// PutBlock, which checks it again). The files are only read. Paths that do not
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
	files, total, err := reuseFiles(paths)
	if err != nil {
		return st, err
	}
	if len(files) == 0 {
		return st, nil
	}
	var (
		claimed = make([]atomic.Bool, s.m.blockCount)
		blocks  atomic.Int64
		bytes   atomic.Int64
	)
	each := func(_ int, data []byte, h *[HashSize]byte) error {
		for _, i := range want[*h] {
			if s.m.BlockLen(i) != len(data) || claimed[i].Swap(true) {
				continue
			}
			if err := s.PutBlock(i, data); err != nil {
				if errors.Is(err, ErrBadBlock) { // a hash collision of a cut: not this block
					claimed[i].Store(false)
					continue
				}
				return err
			}
			blocks.Add(1)
			bytes.Add(int64(len(data)))
		}
		return nil
	}
	// The file being read, through a progressReader counting from the bytes
	// of the files before it.
	var (
		cur  *os.File
		prog = &progressReader{total: total, fn: fn}
	)
	closeCur := func() {
		if cur != nil {
			cur.Close()
			cur = nil
		}
	}
	defer closeCur()
	if fn == nil {
		prog.fn = func(int64, int64) {}
	}
	open := func(name string) (io.Reader, bool) {
		closeCur()
		f, err := os.Open(name)
		if err != nil {
			return nil, false // gone or unreadable since the walk: nothing to take from it
		}
		st.Files++
		cur = f
		prog.r = f
		return prog, true
	}
	workers := defaultWorkers()
	if s.m.ContentDefined() {
		k := 0
		next := func() (io.Reader, error) {
			for k < len(files) {
				k++
				if r, ok := open(files[k-1]); ok {
					return r, nil
				}
			}
			closeCur()
			return nil, nil
		}
		_, _, err = chunkContent(ctx, next, s.m.chunking, workers, int(total/int64(s.m.chunking.Normal)), each)
	} else {
		for _, name := range files {
			r, ok := open(name)
			if !ok {
				continue
			}
			if _, _, err = chunkStream(ctx, r, s.m.blockSize, workers, -1, each); err != nil {
				break
			}
		}
	}
	st.Blocks, st.Bytes = int(blocks.Load()), bytes.Load()
	st.Scanned = prog.done
	if err != nil {
		return st, fmt.Errorf("chunker: reuse local files: %w", err)
	}
	return st, nil
}

// reuseFiles lists the regular files under paths, state folders and symbolic
// links left out, and their total size.
func reuseFiles(paths []string) ([]string, int64, error) {
	var (
		files []string
		total int64
		seen  = map[string]bool{}
	)
	for _, p := range paths {
		err := filepath.WalkDir(p, func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() && name != p && strings.HasSuffix(d.Name(), MetaDir) {
				return filepath.SkipDir
			}
			if !d.Type().IsRegular() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if abs, err := filepath.Abs(name); err == nil {
				if seen[abs] {
					return nil
				}
				seen[abs] = true
			}
			files = append(files, name)
			total += info.Size()
			return nil
		})
		if err != nil {
			return nil, 0, fmt.Errorf("chunker: reuse local files: %w", err)
		}
	}
	return files, total, nil
}
