package chunker

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	cdc "github.com/PlakarKorp/go-cdc-chunkers"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc" // registers CDCAlgorithm
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
		offs, flat, err := chunkContent(ctx, next, cfg.chunking, cfg.workers, int(total/int64(cfg.chunking.Normal)))
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
	flat, n, err := chunkStream(ctx, src, cfg.blockSize, cfg.workers, total)
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
		offs, flat, err := chunkContent(ctx, next, cfg.chunking, cfg.workers, 0)
		if err != nil {
			return nil, fmt.Errorf("chunker: chunk %s: %w", name, err)
		}
		files := []File{{Path: name, Size: offs[len(offs)-1], Mode: mode & 0o777}}
		return build(Tree{Files: files}, 0, cfg.chunking, offs, flat)
	}
	flat, n, err := chunkStream(ctx, r, cfg.blockSize, cfg.workers, -1)
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
// their paths on disk, and with cfg.linksAndDirs the tree's symbolic links that
// stay inside it and its empty folders. It reports what it leaves out to
// cfg.skipped.
func listTree(p string, cfg *chunkConfig) (Tree, []string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return Tree{}, nil, fmt.Errorf("chunker: chunk %s: %w", p, err)
	}
	name, err := rootName(abs)
	if err != nil {
		return Tree{}, nil, err
	}
	// A symbolic link given as the path itself is followed; the manifest keeps the
	// link's name.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Tree{}, nil, fmt.Errorf("chunker: %w", err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return Tree{}, nil, fmt.Errorf("chunker: %w", err)
	}
	if info.Mode().IsRegular() {
		return Tree{Files: []File{{Path: name, Size: info.Size(), Mode: uint32(info.Mode().Perm())}}}, []string{real}, nil
	}
	if !info.IsDir() {
		return Tree{}, nil, fmt.Errorf("chunker: chunk %s: not a regular file or directory", p)
	}
	skip := func(p, why string) {
		if cfg.skipped != nil {
			cfg.skipped(p, why)
		}
	}
	type entry struct {
		f   File
		src string
	}
	var (
		list  []entry
		links []Symlink
		dirs  []string
	)
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == MetaDir && p != real {
			return filepath.SkipDir // a block store's metadata
		}
		mp := name
		if p != real {
			rel, err := filepath.Rel(real, p)
			if err != nil {
				return err
			}
			mp = name + "/" + filepath.ToSlash(rel)
		}
		switch t := d.Type(); {
		case t.IsDir():
			if cfg.linksAndDirs {
				if err := checkPath(mp); err != nil {
					return fmt.Errorf("folder %s: %w", p, err)
				}
				dirs = append(dirs, mp)
			}
			return nil
		case t&fs.ModeSymlink != 0:
			if !cfg.linksAndDirs {
				skip(p, "symbolic link: not recorded with fixed-size blocks (see WithLinksAndDirs)")
				return nil
			}
			l, why, err := readLink(p, mp)
			if err != nil {
				return err
			}
			if why != "" {
				skip(p, why)
				return nil
			}
			links = append(links, l)
			return nil
		case !t.IsRegular():
			skip(p, fmt.Sprintf("not a regular file, folder or symbolic link (%v)", t))
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := checkPath(mp); err != nil {
			return fmt.Errorf("file %s: %w", p, err)
		}
		list = append(list, entry{File{Path: mp, Size: info.Size(), Mode: uint32(info.Mode().Perm())}, p})
		return nil
	})
	if err != nil {
		return Tree{}, nil, fmt.Errorf("chunker: chunk %s: %w", p, err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].f.Path < list[j].f.Path })
	t := Tree{Files: make([]File, len(list))}
	srcs := make([]string, len(list))
	for i, e := range list {
		t.Files[i], srcs[i] = e.f, e.src
	}
	if cfg.linksAndDirs {
		sort.Slice(links, func(i, j int) bool { return links[i].Path < links[j].Path })
		t.Symlinks = links
		t.Dirs = emptyDirs(t, dirs)
	}
	if len(t.Symlinks) == 0 {
		t.Symlinks = nil
	}
	return t, srcs, nil
}

// readLink reads the symbolic link at p (manifest path mp) as a Symlink, or says
// why it is not recorded.
func readLink(p, mp string) (Symlink, string, error) {
	target, err := os.Readlink(p)
	if err != nil {
		return Symlink{}, "", err
	}
	if filepath.IsAbs(target) || filepath.VolumeName(target) != "" || strings.HasPrefix(filepath.ToSlash(target), "/") {
		return Symlink{}, fmt.Sprintf("symbolic link to %s: its target is absolute", target), nil
	}
	tg := filepath.ToSlash(target)
	// ".." after a folder name means different things lexically and on disk
	// when that folder is a link: such targets are not recorded.
	down := false
	for _, el := range strings.Split(tg, "/") {
		switch el {
		case "", ".":
		case "..":
			if down {
				return Symlink{}, fmt.Sprintf("symbolic link to %s: its target climbs out of a folder it entered", target), nil
			}
		default:
			down = true
		}
	}
	l := Symlink{Path: mp, Target: path.Clean(tg)}
	if err := checkPath(mp); err != nil {
		return Symlink{}, "", fmt.Errorf("symbolic link %s: %w", p, err)
	}
	if err := checkTarget(l); err != nil {
		if !insideTree(l) {
			return Symlink{}, fmt.Sprintf("symbolic link to %s: its target leaves the tree", target), nil
		}
		return Symlink{}, fmt.Sprintf("symbolic link to %s: %v", target, err), nil
	}
	return l, "", nil
}

// emptyDirs returns the folders of dirs that hold no file, link or other folder
// of t, sorted.
func emptyDirs(t Tree, dirs []string) []string {
	full := make(map[string]bool, len(dirs))
	mark := func(p string) {
		for d := path.Dir(p); d != "." && !full[d]; d = path.Dir(d) {
			full[d] = true
		}
	}
	for _, f := range t.Files {
		mark(f.Path)
	}
	for _, l := range t.Symlinks {
		mark(l.Path)
	}
	for _, d := range dirs {
		mark(d)
	}
	var out []string
	for _, d := range dirs {
		if !full[d] {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
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
	blocks := 0
	if expect >= 0 {
		n := (expect + int64(blockSize) - 1) / int64(blockSize)
		if n > MaxBlocks {
			return nil, 0, fmt.Errorf("%w: %d blocks", ErrTooLarge, n)
		}
		blocks = int(n)
	}
	var total int64
	flat, err := hashBlocks(ctx, workers, blockSize, blocks, func(get func() ([]byte, error), emit func([]byte, int) error) error {
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

// chunkContent cuts the bytes of each reader that next returns (nil once there
// are no more) into content-defined blocks of rule c, each reader on its own, and
// hashes them with workers goroutines. It returns the blocks' stream offsets (one
// more than the blocks, the last being the bytes read) and their flat hashes.
// Finding the cuts is sequential; hashing runs beside it. blocks is a guess of
// the block count, to size the hash slice.
func chunkContent(ctx context.Context, next func() (io.Reader, error), c Chunking, workers, blocks int) ([]int64, []byte, error) {
	offs := make([]int64, 1, blocks+1)
	flat, err := hashBlocks(ctx, workers, c.Max, blocks, func(get func() ([]byte, error), emit func([]byte, int) error) error {
		var ch *cdc.Chunker
		for {
			r, err := next()
			if err != nil || r == nil {
				return err
			}
			if ch == nil {
				opts := &cdc.ChunkerOpts{MinSize: c.Min, NormalSize: c.Normal, MaxSize: c.Max}
				if ch, err = cdc.NewChunkerBuffer(CDCAlgorithm, r, opts, make([]byte, 2*c.Max)); err != nil {
					return fmt.Errorf("%w: %s: %w", ErrBadBlockSize, c, err)
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
		return nil, nil, fmt.Errorf("%w: %d blocks hashed, %d cut", ErrCorrupt, len(flat)/HashSize, len(offs)-1)
	}
	return offs, flat, nil
}

// hashBlocks runs produce on a goroutine of its own and hashes the blocks it
// emits with workers goroutines, returning their hashes in emission order.
// produce takes free buffers of bufLen bytes from get (which fails once ctx is
// done) and hands each back, holding a block of n bytes, to emit (which fails
// past MaxBlocks blocks); its error is returned. blocks sizes the hash slice.
func hashBlocks(ctx context.Context, workers, bufLen, blocks int, produce func(get func() ([]byte, error), emit func(buf []byte, n int) error) error) ([]byte, error) {
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
				return fmt.Errorf("%w: more than %d blocks", ErrTooLarge, MaxBlocks)
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
	if prodErr != nil {
		return nil, prodErr
	}
	if count*HashSize != len(flat) {
		return nil, fmt.Errorf("%w: %d blocks hashed, %d expected", ErrCorrupt, count, len(flat)/HashSize)
	}
	return flat, nil
}
