package chunker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/reconcile-p2p/reconcile/chunker/internal/cut"
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
	t, b, err := cut.Path(ctx, path, cfg.cut)
	if err != nil {
		return nil, cutError("chunk "+path, err)
	}
	tree := Tree{Files: make([]File, len(t.Files)), Dirs: t.Dirs}
	for i, f := range t.Files {
		tree.Files[i] = File(f)
	}
	for _, l := range t.Symlinks {
		tree.Symlinks = append(tree.Symlinks, Symlink(l))
	}
	return build(tree, cfg.blockSize, cfg.chunking, b.Offs, b.Hashes)
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
	if err := checkPath(name); err != nil {
		return nil, err
	}
	b, err := cut.Reader(ctx, r, cfg.cut)
	if err != nil {
		return nil, cutError("chunk "+name, err)
	}
	files := []File{{Path: name, Size: b.Len, Mode: mode & 0o777}}
	return build(Tree{Files: files}, cfg.blockSize, cfg.chunking, b.Offs, b.Hashes)
}

// cutError wraps an error of package cut, met while doing what ("chunk
// PATH"), in the sentinel of chunker that stands for its kind, so that
// errors.Is finds what it found before the code moved to package cut.
func cutError(what string, err error) error {
	for _, k := range [...]struct{ kind, sentinel error }{
		{cut.ErrTooMany, ErrTooLarge},
		{cut.ErrRule, ErrBadBlockSize},
		{cut.ErrMiscount, ErrCorrupt},
		{cut.ErrBadPath, ErrBadPath},
	} {
		if errors.Is(err, k.kind) {
			return fmt.Errorf("%w: %s: %w", k.sentinel, what, err)
		}
	}
	// An error of the path itself ("lstat PATH: no such file or directory")
	// names it already.
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.HasSuffix(what, " "+pe.Path) {
		return fmt.Errorf("chunker: %w", err)
	}
	return fmt.Errorf("chunker: %s: %w", what, err)
}

// ChunkOption configures ChunkPath and ChunkReader.
type ChunkOption func(*chunkConfig)

type chunkConfig struct {
	blockSize   int        // fixed-size blocks; 0 with chunking
	chunking    Chunking   // content-defined blocks; zero for fixed-size ones
	badChunking bool       // WithChunking was given the zero Chunking
	cut         cut.Config // the other options, and the two above once checked
}

// newChunkConfig applies opts and checks the block size or chunking.
func newChunkConfig(blockSize int, opts []ChunkOption) (chunkConfig, error) {
	cfg := chunkConfig{cut: cut.Config{Workers: cut.DefaultWorkers()}}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case cfg.badChunking:
		return cfg, fmt.Errorf("%w: WithChunking of the zero Chunking", ErrBadBlockSize)
	case !cfg.chunking.IsZero() && blockSize != 0:
		return cfg, fmt.Errorf("%w: block size %d given with content-defined chunking (use 0)", ErrBadBlockSize, blockSize)
	case !cfg.chunking.IsZero():
		cfg.cut.LinksAndDirs, cfg.cut.CDC = true, cut.CDC(cfg.chunking)
		return cfg, cfg.chunking.Check()
	case blockSize == 0:
		blockSize = DefaultBlockSize
	}
	if blockSize < MinBlockSize || blockSize > MaxBlockSize {
		return cfg, fmt.Errorf("%w: %d not in [%d, %d]", ErrBadBlockSize, blockSize, MinBlockSize, MaxBlockSize)
	}
	cfg.blockSize, cfg.cut.Size = blockSize, blockSize
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
	return func(cfg *chunkConfig) { cfg.chunking, cfg.badChunking = c.canon(), c.IsZero() }
}

// WithLinksAndDirs makes ChunkPath of a folder with fixed-size blocks record its
// symbolic links and empty folders too, as it always does with content-defined
// blocks. A manifest with any is of format Version2. Without it, fixed-size
// manifests take the regular files only, exactly as before format Version2.
func WithLinksAndDirs() ChunkOption { return func(c *chunkConfig) { c.cut.LinksAndDirs = true } }

// WithSkipped makes ChunkPath call fn(path, reason) for each entry of the tree
// that it leaves out of the manifest, with its path on disk: a symbolic link whose
// target is absolute or leaves the tree (or any symbolic link, when links are not
// recorded), a device, socket or named pipe. Store metadata folders (MetaDir) are
// left out without a call. fn runs on the calling goroutine. Default: no calls.
func WithSkipped(fn func(path, reason string)) ChunkOption {
	return func(c *chunkConfig) { c.cut.Skipped = fn }
}

// WithWorkers sets the number of hashing goroutines (default GOMAXPROCS, at most 8).
func WithWorkers(n int) ChunkOption { return func(c *chunkConfig) { c.cut.Workers = max(n, 1) } }

// WithProgress calls fn as bytes are read, with the bytes read so far and the total
// (-1 when unknown, as for ChunkReader). fn runs on the reading goroutine and must be
// quick.
func WithProgress(fn func(done, total int64)) ChunkOption {
	return func(c *chunkConfig) { c.cut.Progress = fn }
}
