package chunker

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// ChunkPath chunks a regular file or a directory tree and returns its manifest
// (blockSize 0 means DefaultBlockSize). The manifest's paths start with the base name
// of path (see the package comment); only regular files are taken. Reading and hashing
// run in a pipeline over a few block buffers, so memory does not grow with the size
// of the input (only the manifest grows, by HashSize bytes per block).
func ChunkPath(ctx context.Context, path string, blockSize int, opts ...ChunkOption) (*Manifest, error) {
	cfg := chunkConfig{workers: defaultWorkers()}
	for _, o := range opts {
		o(&cfg)
	}
	if blockSize == 0 {
		blockSize = DefaultBlockSize
	}
	if blockSize < MinBlockSize || blockSize > MaxBlockSize {
		return nil, fmt.Errorf("%w: %d not in [%d, %d]", ErrBadBlockSize, blockSize, MinBlockSize, MaxBlockSize)
	}
	files, srcs, err := listTree(path)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	r := &treeReader{files: files, srcs: srcs}
	defer r.Close()
	var src io.Reader = r
	if cfg.progress != nil {
		src = &progressReader{r: r, total: total, fn: cfg.progress}
	}
	flat, n, err := chunkStream(ctx, src, blockSize, cfg.workers, total)
	if err != nil {
		return nil, fmt.Errorf("chunker: chunk %s: %w", path, err)
	}
	if n != total {
		return nil, fmt.Errorf("chunker: chunk %s: read %d bytes, expected %d: files changed while chunking", path, n, total)
	}
	return newManifest(files, blockSize, flat)
}

// ChunkReader chunks the bytes of r up to EOF as one file named name (a manifest path,
// such as "movie.mkv") with permission bits mode. blockSize 0 means DefaultBlockSize.
func ChunkReader(ctx context.Context, name string, mode uint32, r io.Reader, blockSize int, opts ...ChunkOption) (*Manifest, error) {
	cfg := chunkConfig{workers: defaultWorkers()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.progress != nil {
		r = &progressReader{r: r, total: -1, fn: cfg.progress}
	}
	if blockSize == 0 {
		blockSize = DefaultBlockSize
	}
	if blockSize < MinBlockSize || blockSize > MaxBlockSize {
		return nil, fmt.Errorf("%w: %d not in [%d, %d]", ErrBadBlockSize, blockSize, MinBlockSize, MaxBlockSize)
	}
	if err := checkPath(name); err != nil {
		return nil, err
	}
	flat, n, err := chunkStream(ctx, r, blockSize, cfg.workers, -1)
	if err != nil {
		return nil, fmt.Errorf("chunker: chunk %s: %w", name, err)
	}
	return newManifest([]File{{Path: name, Size: n, Mode: mode & 0o777}}, blockSize, flat)
}

// ChunkOption configures ChunkPath and ChunkReader.
type ChunkOption func(*chunkConfig)

type chunkConfig struct {
	workers  int
	progress func(done, total int64)
}

// WithWorkers sets the number of hashing goroutines (default GOMAXPROCS, at most 8).
func WithWorkers(n int) ChunkOption { return func(c *chunkConfig) { c.workers = max(n, 1) } }

// WithProgress calls fn as bytes are read, with the bytes read so far and the total
// (-1 when unknown, as for ChunkReader). fn runs on the reading goroutine and must be
// quick.
func WithProgress(fn func(done, total int64)) ChunkOption {
	return func(c *chunkConfig) { c.progress = fn }
}

// progressReader reports the bytes read through it.
type progressReader struct {
	r     io.Reader
	done  int64
	total int64
	fn    func(done, total int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	p.fn(p.done, p.total)
	return n, err
}

// defaultWorkers is the number of hashing goroutines.
func defaultWorkers() int { return min(runtime.GOMAXPROCS(0), 8) }

// rootName returns the manifest name of the chunked path: its base name.
func rootName(abs string) (string, error) {
	name := filepath.Base(abs)
	if name == string(filepath.Separator) || name == "." || name == ".." {
		return "", fmt.Errorf("%w: cannot chunk %s: it has no base name", ErrBadPath, abs)
	}
	name = filepath.ToSlash(name)
	if err := checkPath(name); err != nil || strings.Contains(name, "/") {
		return "", fmt.Errorf("%w: base name %q", ErrBadPath, name)
	}
	return name, nil
}

// listTree lists the regular files of a file or tree as manifest files (sorted) and
// their paths on disk.
func listTree(path string) ([]File, []string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("chunker: chunk %s: %w", path, err)
	}
	name, err := rootName(abs)
	if err != nil {
		return nil, nil, err
	}
	// A symbolic link given as the path itself is followed; the manifest keeps the
	// link's name.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("chunker: %w", err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, nil, fmt.Errorf("chunker: %w", err)
	}
	if info.Mode().IsRegular() {
		return []File{{Path: name, Size: info.Size(), Mode: uint32(info.Mode().Perm())}}, []string{real}, nil
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("chunker: chunk %s: not a regular file or directory", path)
	}
	type entry struct {
		f   File
		src string
	}
	var list []entry
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == MetaDir && p != real {
			return filepath.SkipDir // a block store's metadata
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(real, p)
		if err != nil {
			return err
		}
		mp := name + "/" + filepath.ToSlash(rel)
		if err := checkPath(mp); err != nil {
			return fmt.Errorf("file %s: %w", p, err)
		}
		list = append(list, entry{File{Path: mp, Size: info.Size(), Mode: uint32(info.Mode().Perm())}, p})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("chunker: chunk %s: %w", path, err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].f.Path < list[j].f.Path })
	files := make([]File, len(list))
	srcs := make([]string, len(list))
	for i, e := range list {
		files[i], srcs[i] = e.f, e.src
	}
	return files, srcs, nil
}

// treeReader reads the files of a tree as one stream, exactly Size bytes from each.
type treeReader struct {
	files []File
	srcs  []string
	i     int
	cur   *os.File
	left  int64
}

func (t *treeReader) Read(p []byte) (int, error) {
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
func (t *treeReader) Close() error {
	if t.cur != nil {
		err := t.cur.Close()
		t.cur = nil
		return err
	}
	return nil
}

type chunkJob struct {
	index int
	buf   []byte
	n     int
}

type chunkResult struct {
	index int
	hash  [HashSize]byte
}

// chunkStream reads r to EOF in blocks and hashes them with workers goroutines. It
// returns the flat block hashes and the number of bytes read. expect >= 0 is the
// expected size, used to size the hash slice; reading stops with an error past it.
func chunkStream(ctx context.Context, r io.Reader, blockSize, workers int, expect int64) ([]byte, int64, error) {
	workers = max(workers, 1)
	var flat []byte
	if expect >= 0 {
		n := (expect + int64(blockSize) - 1) / int64(blockSize)
		if n > MaxBlocks {
			return nil, 0, fmt.Errorf("%w: %d blocks", ErrTooLarge, n)
		}
		flat = make([]byte, 0, n*HashSize)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	free := make(chan []byte, workers+2)
	for range workers + 2 {
		free <- make([]byte, blockSize)
	}
	jobs := make(chan chunkJob, workers)
	results := make(chan chunkResult, workers+2)

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				h := HashBlock(j.buf[:j.n])
				free <- j.buf
				results <- chunkResult{j.index, h}
			}
		}()
	}

	var (
		total   int64
		readErr error
	)
	go func() {
		defer func() {
			close(jobs)
			wg.Wait()
			close(results)
		}()
		for i := 0; ; i++ {
			var buf []byte
			select {
			case buf = <-free:
			case <-ctx.Done():
				readErr = ctx.Err()
				return
			}
			n, err := io.ReadFull(r, buf)
			total += int64(n)
			if n > 0 {
				if i >= MaxBlocks {
					readErr = fmt.Errorf("%w: more than %d blocks", ErrTooLarge, MaxBlocks)
					return
				}
				jobs <- chunkJob{i, buf, n}
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return
			}
			if err != nil {
				readErr = err
				return
			}
			if expect >= 0 && total > expect {
				readErr = fmt.Errorf("read more than the expected %d bytes", expect)
				return
			}
		}
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
	if readErr != nil {
		return nil, total, readErr
	}
	if count*HashSize != len(flat) {
		return nil, total, fmt.Errorf("%w: %d blocks hashed, %d expected", ErrCorrupt, count, len(flat)/HashSize)
	}
	return flat, total, nil
}
