// Package cut cuts files, folders and streams into blocks and hashes them: the
// reading and hashing behind chunker.ChunkPath, chunker.ChunkReader and
// Store.Reuse. Path lists a file or folder on disk and cuts its files' bytes,
// Reader cuts a stream, Files cuts each of a list of files on its own (Walk
// lists them), either into fixed-size blocks (Stream) or into content-defined
// ones (Content: FastCDC as github.com/PlakarKorp/go-cdc-chunkers cuts it,
// see Algorithm, by a scanner of its own that finds the same cuts about twice
// as fast). Every block is hashed with BLAKE3 in a pipeline: one goroutine
// reads and cuts, several hash the blocks where they were read, and a few
// segment buffers go between them, so memory stays bounded whatever the size.
//
// It knows nothing of manifests: it returns plain values (a Tree of manifest
// paths, flat hashes, block offsets) from which package chunker builds one and
// checks it. Its errors of the kinds chunker names are its own sentinels
// (ErrTooMany, ErrRule, ErrMiscount, ErrBadPath), which chunker maps onto its.
package cut

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/reconcile-p2p/reconcile/chunker/internal/pathrules"
)

// The limits and names that package chunker exports, with the same values.
const (
	// HashSize is the size in bytes of a block hash (chunker.HashSize).
	HashSize = 32
	// MaxBlocks bounds the blocks of one cut (chunker.MaxBlocks).
	MaxBlocks = math.MaxInt32
	// Algorithm names the content-defined chunking rule of FastCDC with
	// normalized chunking (level 2), as go-cdc-chunkers registers it
	// (chunker.CDCAlgorithm); a CDC of Algorithm "" cuts by it.
	Algorithm = "fastcdc-v1.0.0"
	// AlgorithmNC0 names the rule of the same Gear table and masks without
	// normalized chunking (level 0: one mask from Min to Max), whose cuts
	// after an edit meet the old ones again within a block or two
	// (chunker.CDCAlgorithmNC0).
	AlgorithmNC0 = "reconcile-fastcdc-nc0-v1"
)

var (
	// ErrTooMany is returned when a cut would make more than MaxBlocks blocks.
	ErrTooMany = errors.New("too many blocks")
	// ErrRule is returned when the chunking library refuses a CDC rule.
	ErrRule = errors.New("chunking rule refused")
	// ErrMiscount is returned when the blocks hashed are not the blocks cut.
	ErrMiscount = errors.New("blocks miscounted")
	// ErrBadPath is returned for a name on disk that is no valid manifest path
	// (see pathrules.CheckPath).
	ErrBadPath = errors.New("bad manifest path")
)

// CDC is a rule of content-defined blocks (chunker.Chunking, checked there):
// blocks of Min to Max bytes, cuts becoming likely past Normal bytes.
type CDC struct {
	Algorithm        string // Algorithm ("" too) or AlgorithmNC0
	Min, Normal, Max int
}

// IsZero reports whether c is the zero CDC, which stands for fixed-size blocks.
func (c CDC) IsZero() bool { return c == CDC{} }

// Config says how to cut and whom to tell.
type Config struct {
	// Size is the length of fixed-size blocks, used when CDC is zero.
	Size int
	// CDC is the rule of content-defined blocks; zero for fixed-size ones.
	CDC CDC
	// Workers is the number of hashing goroutines (at least one runs).
	Workers int
	// LinksAndDirs makes Path of a folder list its symbolic links that stay
	// inside it, and its empty folders.
	LinksAndDirs bool
	// Progress, if not nil, is called on the reading goroutine as bytes are
	// read, with the bytes read so far and the total (-1 when unknown).
	Progress func(done, total int64)
	// Skipped, if not nil, is called by Path with the path on disk of each
	// entry it leaves out, and why.
	Skipped func(path, reason string)
}

// Blocks are the blocks of a cut.
type Blocks struct {
	// Hashes holds every block's hash, HashSize bytes each, in stream order.
	Hashes []byte
	// Offs holds, for content-defined blocks, their stream offsets: one more
	// than the blocks, the last being Len. It is nil for fixed-size blocks.
	Offs []int64
	// Len is the number of bytes read.
	Len int64
}

// DefaultWorkers is the number of hashing goroutines of chunker's defaults:
// GOMAXPROCS, at most 8.
func DefaultWorkers() int { return min(runtime.GOMAXPROCS(0), 8) }

// Path cuts a regular file or the files of a folder (see chunker.ChunkPath):
// it lists the tree (its manifest paths starting with the base name of p) and
// reads its files' bytes as one stream, cut into fixed-size blocks, or cuts
// each file on its own into content-defined blocks. A file that changes size
// while it is read is an error.
func Path(ctx context.Context, p string, cfg Config) (Tree, Blocks, error) {
	t, srcs, err := list(p, cfg)
	if err != nil {
		return Tree{}, Blocks{}, err
	}
	var total int64
	for _, f := range t.Files {
		total += f.Size
	}
	var b Blocks
	if !cfg.CDC.IsZero() {
		prog := &progress{total: total, fn: cfg.Progress}
		k := 0
		next := func() (io.Reader, error) {
			for ; k < len(t.Files) && t.Files[k].Size == 0; k++ {
			}
			if k == len(t.Files) {
				return nil, nil
			}
			prog.r = &reader{files: t.Files[k : k+1], srcs: srcs[k : k+1]}
			k++
			if cfg.Progress == nil {
				return prog.r, nil
			}
			return prog, nil
		}
		b.Offs, b.Hashes, err = Content(ctx, next, cfg.CDC, cfg.Workers, int(total/int64(cfg.CDC.Normal)), nil)
		if r, ok := prog.r.(*reader); ok {
			r.Close()
		}
		if err == nil {
			b.Len = b.Offs[len(b.Offs)-1]
		}
	} else {
		r := &reader{files: t.Files, srcs: srcs}
		defer r.Close()
		var src io.Reader = r
		if cfg.Progress != nil {
			src = &progress{r: r, total: total, fn: cfg.Progress}
		}
		b.Hashes, b.Len, err = Stream(ctx, src, cfg.Size, cfg.Workers, total, nil)
	}
	if err != nil {
		return Tree{}, Blocks{}, err
	}
	if b.Len != total {
		return Tree{}, Blocks{}, fmt.Errorf("read %d bytes, expected %d: files changed while chunking", b.Len, total)
	}
	return t, b, nil
}

// Reader cuts the bytes of r up to EOF as those of one file (see
// chunker.ChunkReader).
func Reader(ctx context.Context, r io.Reader, cfg Config) (Blocks, error) {
	if cfg.Progress != nil {
		r = &progress{r: r, total: -1, fn: cfg.Progress}
	}
	var (
		b   Blocks
		err error
	)
	if cfg.CDC.IsZero() {
		if b.Hashes, b.Len, err = Stream(ctx, r, cfg.Size, cfg.Workers, -1, nil); err != nil {
			return Blocks{}, err
		}
		return b, nil
	}
	done := false
	next := func() (io.Reader, error) {
		if done {
			return nil, nil
		}
		done = true
		return r, nil
	}
	if b.Offs, b.Hashes, err = Content(ctx, next, cfg.CDC, cfg.Workers, 0, nil); err != nil {
		return Blocks{}, err
	}
	b.Len = b.Offs[len(b.Offs)-1]
	return b, nil
}

// Files cuts each of files on its own, as Store.Reuse reads local files: into
// content-defined blocks by cfg.CDC, or into fixed-size blocks from each file's
// start, and calls each with every block, numbered across the files in the
// order read. A file that cannot be opened (gone or unreadable since it was
// listed) is passed over. cfg.Progress counts the bytes read against total.
// Files returns where each block was found and the bytes read, also when it
// fails.
func Files(ctx context.Context, files []string, total int64, cfg Config, each BlockFunc) (l Layout, read int64, err error) {
	// The file being read, through a progress counting from the bytes of
	// the files before it.
	var (
		cur  *os.File
		prog = &progress{total: total, fn: cfg.Progress}
	)
	closeCur := func() {
		if cur != nil {
			cur.Close()
			cur = nil
		}
	}
	defer closeCur()
	if prog.fn == nil {
		prog.fn = func(int64, int64) {}
	}
	open := func(k int) (io.Reader, bool) {
		closeCur()
		f, err := os.Open(files[k])
		if err != nil {
			return nil, false // nothing to take from it
		}
		cur = f
		prog.r = f
		l.Files = append(l.Files, k)
		l.Starts = append(l.Starts, prog.done)
		return prog, true
	}
	if !cfg.CDC.IsZero() {
		k := 0
		next := func() (io.Reader, error) {
			for k < len(files) {
				k++
				if r, ok := open(k - 1); ok {
					return r, nil
				}
			}
			closeCur()
			return nil, nil
		}
		l.Offs, _, err = Content(ctx, next, cfg.CDC, cfg.Workers, int(total/int64(cfg.CDC.Normal)), each)
	} else {
		l.Offs = []int64{0}
		for k := range files {
			r, ok := open(k)
			if !ok {
				continue
			}
			base, start := len(l.Offs)-1, prog.done
			numbered := each
			if each != nil {
				numbered = func(i int, data []byte, h *[HashSize]byte) error { return each(base+i, data, h) }
			}
			var n int64
			if _, n, err = Stream(ctx, r, cfg.Size, cfg.Workers, -1, numbered); err != nil {
				break
			}
			for off := int64(cfg.Size); off < n; off += int64(cfg.Size) {
				l.Offs = append(l.Offs, start+off)
			}
			if n > 0 {
				l.Offs = append(l.Offs, start+n)
			}
		}
	}
	if err != nil {
		l.Offs = nil
	}
	return l, prog.done, err
}

// Layout is where Files found the blocks it numbered: block k is the bytes
// [Offs[k], Offs[k+1]) of the files read one after the other, and the j-th
// file opened, files[Files[j]], starts at Starts[j] of that stream.
type Layout struct {
	Offs   []int64
	Files  []int
	Starts []int64
}

// Opened is the number of files read.
func (l Layout) Opened() int { return len(l.Files) }

// Locate returns the file (an index into Files's files) that holds block k,
// and the block's offset and length in it.
func (l Layout) Locate(k int) (file int, off int64, n int) {
	at := l.Offs[k]
	j := sort.Search(len(l.Starts), func(j int) bool { return l.Starts[j] > at }) - 1
	return l.Files[j], at - l.Starts[j], int(l.Offs[k+1] - at)
}

// Walk lists the regular files under paths (files, or folders walked) and
// their total size, for Files: state folders (names ending in
// pathrules.MetaDir, such as .reconcile and FILE.reconcile) and symbolic links
// are left out, paths that do not exist are skipped, and a file reached twice
// is listed once.
func Walk(paths []string) ([]string, int64, error) {
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
			if d.IsDir() && name != p && strings.HasSuffix(d.Name(), pathrules.MetaDir) {
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
			return nil, 0, err
		}
	}
	return files, total, nil
}

// progress reports the bytes read through it.
type progress struct {
	r     io.Reader
	done  int64
	total int64
	fn    func(done, total int64)
}

func (p *progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	p.fn(p.done, p.total)
	return n, err
}

// reader reads the files of a tree as one stream, exactly Size bytes from each.
type reader struct {
	files []File
	srcs  []string
	i     int
	cur   *os.File
	left  int64
}

func (t *reader) Read(p []byte) (int, error) {
	for {
		if t.cur == nil {
			if t.i >= len(t.files) {
				return 0, io.EOF
			}
			if t.files[t.i].Size == 0 {
				t.i++
				continue
			}
			f, err := os.Open(t.srcs[t.i])
			if err != nil {
				return 0, err
			}
			t.cur, t.left = f, t.files[t.i].Size
		}
		if t.left == 0 {
			if info, err := t.cur.Stat(); err == nil && info.Size() != t.files[t.i].Size {
				return 0, fmt.Errorf("%s: size changed from %d to %d while chunking", t.srcs[t.i], t.files[t.i].Size, info.Size())
			}
			t.cur.Close()
			t.cur = nil
			t.i++
			continue
		}
		if int64(len(p)) > t.left {
			p = p[:t.left]
		}
		n, err := t.cur.Read(p)
		t.left -= int64(n)
		if err == io.EOF && t.left > 0 {
			return n, fmt.Errorf("%s: file shrank while chunking", t.srcs[t.i])
		}
		if n > 0 || err != nil && err != io.EOF {
			return n, err
		}
	}
}

// Close closes the open file, if any.
func (t *reader) Close() error {
	if t.cur != nil {
		err := t.cur.Close()
		t.cur = nil
		return err
	}
	return nil
}
