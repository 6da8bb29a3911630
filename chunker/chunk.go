package chunker

import (
	"context"
	"fmt"
	"io"
	"runtime"
)

// ChunkPath chunks a regular file or a directory tree and returns its manifest. The
// manifest's paths start with the base name of path (see the package comment). By
// default blocks are of a fixed size, blockSize bytes (0 means DefaultBlockSize),
// and only regular files are taken; with WithContentDefined or WithChunking they
// are content-defined (blockSize must then be 0) and the symbolic links that stay
// inside the tree and the empty folders are recorded too (WithLinksAndDirs
// records them with fixed-size blocks). Reading and hashing run in a pipeline
// over a few block buffers, so memory does not grow with the size of the input
// (only the manifest grows, by HashSize bytes per block, and a few more per
// content-defined block).
func ChunkPath(ctx context.Context, path string, blockSize int, opts ...ChunkOption) (*Manifest, error) {
	cfg, err := newChunkConfig(blockSize, opts)
	if err != nil {
		return nil, err
	}
	tree, srcs, err := listTree(path, &cfg)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, f := range tree.Files {
		total += f.Size
	}
	if !cfg.chunking.IsZero() {
		prog := &progressReader{total: total, fn: cfg.progress}
		k := 0
		next := func() (io.Reader, error) {
			for ; k < len(tree.Files) && tree.Files[k].Size == 0; k++ {
			}
			if k == len(tree.Files) {
				return nil, nil
			}
			prog.r = &treeReader{files: tree.Files[k : k+1], srcs: srcs[k : k+1]}
			k++
			if cfg.progress == nil {
				return prog.r, nil
			}
			return prog, nil
		}
		offs, flat, err := chunkContent(ctx, next, cfg.chunking, cfg.workers, int(total/int64(cfg.chunking.Normal)), nil)
		if r, ok := prog.r.(*treeReader); ok {
			r.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("chunker: chunk %s: %w", path, err)
		}
		if n := offs[len(offs)-1]; n != total {
			return nil, fmt.Errorf("chunker: chunk %s: read %d bytes, expected %d: files changed while chunking", path, n, total)
		}
		return build(tree, 0, cfg.chunking, offs, flat)
	}
	r := &treeReader{files: tree.Files, srcs: srcs}
	defer r.Close()
	var src io.Reader = r
	if cfg.progress != nil {
		src = &progressReader{r: r, total: total, fn: cfg.progress}
	}
	flat, n, err := chunkStream(ctx, src, cfg.blockSize, cfg.workers, total, nil)
	if err != nil {
		return nil, fmt.Errorf("chunker: chunk %s: %w", path, err)
	}
	if n != total {
		return nil, fmt.Errorf("chunker: chunk %s: read %d bytes, expected %d: files changed while chunking", path, n, total)
	}
	return build(tree, cfg.blockSize, Chunking{}, nil, flat)
}

// ChunkReader chunks the bytes of r up to EOF as one file named name (a manifest path,
// such as "movie.mkv") with permission bits mode, in blocks of blockSize bytes (0
// means DefaultBlockSize) or, with WithContentDefined or WithChunking (blockSize
// must then be 0), in content-defined blocks.
func ChunkReader(ctx context.Context, name string, mode uint32, r io.Reader, blockSize int, opts ...ChunkOption) (*Manifest, error) {
	cfg, err := newChunkConfig(blockSize, opts)
	if err != nil {
		return nil, err
	}
	if cfg.progress != nil {
		r = &progressReader{r: r, total: -1, fn: cfg.progress}
	}
	if err := checkPath(name); err != nil {
		return nil, err
	}
	if !cfg.chunking.IsZero() {
		done := false
		next := func() (io.Reader, error) {
			if done {
				return nil, nil
			}
			done = true
			return r, nil
		}
		offs, flat, err := chunkContent(ctx, next, cfg.chunking, cfg.workers, 0, nil)
		if err != nil {
			return nil, fmt.Errorf("chunker: chunk %s: %w", name, err)
		}
		files := []File{{Path: name, Size: offs[len(offs)-1], Mode: mode & 0o777}}
		return build(Tree{Files: files}, 0, cfg.chunking, offs, flat)
	}
	flat, n, err := chunkStream(ctx, r, cfg.blockSize, cfg.workers, -1, nil)
	if err != nil {
		return nil, fmt.Errorf("chunker: chunk %s: %w", name, err)
	}
	return build(Tree{Files: []File{{Path: name, Size: n, Mode: mode & 0o777}}}, cfg.blockSize, Chunking{}, nil, flat)
}

// ChunkOption configures ChunkPath and ChunkReader.
type ChunkOption func(*chunkConfig)

type chunkConfig struct {
	blockSize    int      // fixed-size blocks; 0 with chunking
	chunking     Chunking // content-defined blocks; zero for fixed-size ones
	badChunking  bool     // WithChunking was given the zero Chunking
	linksAndDirs bool
	workers      int
	progress     func(done, total int64)
	skipped      func(path, reason string)
}

// newChunkConfig applies opts and checks the block size or chunking.
func newChunkConfig(blockSize int, opts []ChunkOption) (chunkConfig, error) {
	cfg := chunkConfig{workers: defaultWorkers()}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case cfg.badChunking:
		return cfg, fmt.Errorf("%w: WithChunking of the zero Chunking", ErrBadBlockSize)
	case !cfg.chunking.IsZero() && blockSize != 0:
		return cfg, fmt.Errorf("%w: block size %d given with content-defined chunking (use 0)", ErrBadBlockSize, blockSize)
	case !cfg.chunking.IsZero():
		cfg.linksAndDirs = true
		return cfg, cfg.chunking.Check()
	case blockSize == 0:
		blockSize = DefaultBlockSize
	}
	if blockSize < MinBlockSize || blockSize > MaxBlockSize {
		return cfg, fmt.Errorf("%w: %d not in [%d, %d]", ErrBadBlockSize, blockSize, MinBlockSize, MaxBlockSize)
	}
	cfg.blockSize = blockSize
	return cfg, nil
}

// WithContentDefined makes ChunkPath and ChunkReader cut content-defined blocks
// with DefaultChunking (see Chunking) instead of fixed-size ones; the blockSize
// argument must then be 0. The manifest is of format Version2.
func WithContentDefined() ChunkOption { return WithChunking(DefaultChunking) }

// WithChunking is WithContentDefined with a chunking rule of one's own, checked
// by Chunking.Check (ChunkPath and ChunkReader fail with ErrBadBlockSize if it is
// not valid). Every peer cutting the same bytes with the same rule gets the same
// blocks; another rule gives other blocks.
func WithChunking(c Chunking) ChunkOption {
	return func(cfg *chunkConfig) { cfg.chunking, cfg.badChunking = c, c.IsZero() }
}

// WithLinksAndDirs makes ChunkPath of a folder with fixed-size blocks record its
// symbolic links and empty folders too, as it always does with content-defined
// blocks. A manifest with any is of format Version2. Without it, fixed-size
// manifests take the regular files only, exactly as before format Version2.
func WithLinksAndDirs() ChunkOption { return func(c *chunkConfig) { c.linksAndDirs = true } }

// WithSkipped makes ChunkPath call fn(path, reason) for each entry of the tree
// that it leaves out of the manifest, with its path on disk: a symbolic link whose
// target is absolute or leaves the tree (or any symbolic link, when links are not
// recorded), a device, socket or named pipe. Store metadata folders (MetaDir) are
// left out without a call. fn runs on the calling goroutine. Default: no calls.
func WithSkipped(fn func(path, reason string)) ChunkOption {
	return func(c *chunkConfig) { c.skipped = fn }
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
