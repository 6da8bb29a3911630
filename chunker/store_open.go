package chunker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
)

// CreateStore creates a new, empty store for m in dir (created if needed). It fails
// with ErrExists, touching nothing, if dir already holds a store or any of m's files.
// Cancelling ctx stops it between output files (the store is then left half made,
// and OpenOrCreateStore completes it).
func CreateStore(ctx context.Context, dir string, m *Manifest, opts ...StoreOption) (*Store, error) {
	cfg, err := newConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	root, err := makeRoot(dir)
	if err != nil {
		return nil, err
	}
	s, err := createStore(ctx, dir, root, m, cfg)
	if err != nil {
		root.Close()
		return nil, err
	}
	return s, nil
}

// makeRoot creates dir if needed and opens it as the root of a store.
func makeRoot(dir string) (*os.Root, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chunker: create store: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("chunker: create store: %w", err)
	}
	return root, nil
}

func createStore(ctx context.Context, dir string, root *os.Root, m *Manifest, cfg storeConfig) (*Store, error) {
	if _, err := root.Lstat(manifestName); err == nil {
		return nil, fmt.Errorf("%w: %s already holds a store", ErrExists, dir)
	}
	for _, f := range m.files {
		if _, err := root.Lstat(f.Path); err == nil {
			return nil, fmt.Errorf("%w: %s", ErrExists, filepath.Join(dir, filepath.FromSlash(f.Path)))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("chunker: create store: %w", err)
		}
	}
	if err := root.Mkdir(MetaDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("chunker: create store: %w", err)
	}
	// The manifest is the commit point: once it is in place the folder belongs to m,
	// and OpenStore completes whatever else is missing.
	if err := writeAtomic(root, manifestName, m.enc); err != nil {
		return nil, fmt.Errorf("chunker: create store: %w", err)
	}
	return openStore(ctx, dir, root, m, cfg)
}

// writeAtomic writes a file through a temporary file, fsync and rename, then fsyncs
// the folder.
func writeAtomic(root *os.Root, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		return err
	}
	return syncDir(root, path.Dir(name))
}

// syncDir fsyncs a folder so that the entries created in it are durable (a no-op on
// Windows, which cannot fsync a folder).
func syncDir(root *os.Root, name string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := root.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// OpenStore reopens the store in dir after a restart or a crash: the held blocks are
// those recorded in the held log (or, WithVerify, those whose bytes match). An output
// file found missing or resized is recreated at its size and its blocks are dropped.
// It fails with ErrNotFound if dir holds no store.
//
// Cancelling ctx stops the opening promptly, also amid the re-hashing of WithVerify
// (see WithCheckProgress), with an error wrapping ctx.Err(); the store on disk is
// left as it was.
func OpenStore(ctx context.Context, dir string, opts ...StoreOption) (*Store, error) {
	cfg, err := newConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: %w", ErrNotFound, dir, err)
		}
		return nil, fmt.Errorf("chunker: open store: %w", err)
	}
	m, err := readManifest(dir, root, cfg.maxManifestBytes)
	if err != nil {
		root.Close()
		return nil, err
	}
	s, err := openStore(ctx, dir, root, m, cfg)
	if err != nil {
		root.Close()
		return nil, err
	}
	return s, nil
}

func readManifest(dir string, root *os.Root, limit int) (*Manifest, error) {
	f, err := root.Open(manifestName)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no %s", ErrNotFound, dir, manifestName)
		}
		return nil, fmt.Errorf("chunker: open store: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("chunker: open store: %w", err)
	}
	m, err := DecodeManifest(b, limit)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return m, nil
}

// OpenOrCreateStore resumes the store for m in dir, or creates it if dir holds no
// store. If dir holds a store of another manifest it fails with ErrManifestMismatch
// and touches nothing. ctx is as for OpenStore.
func OpenOrCreateStore(ctx context.Context, dir string, m *Manifest, opts ...StoreOption) (*Store, error) {
	cfg, err := newConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	root, err := makeRoot(dir)
	if err != nil {
		return nil, err
	}
	var s *Store
	have, err := readManifest(dir, root, cfg.maxManifestBytes)
	switch {
	case errors.Is(err, ErrNotFound):
		s, err = createStore(ctx, dir, root, m, cfg)
	case err != nil:
	case have.id != m.id:
		err = fmt.Errorf("%w: %s holds manifest %s, not %s", ErrManifestMismatch, dir, have.id, m.id)
	default:
		s, err = openStore(ctx, dir, root, have, cfg)
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return s, nil
}

// openStore loads the held log (or starts it), checks the output files and, with
// WithVerify, re-hashes them. On error it closes whatever it opened but root.
func openStore(ctx context.Context, dir string, root *os.Root, m *Manifest, cfg storeConfig) (*Store, error) {
	s := newStore(dir, root, m, cfg)
	s.log.dir, s.log.name = root, heldName
	fail := func(err error) (*Store, error) {
		s.closeFiles()
		s.log.close()
		return nil, err
	}
	var valid int64
	records := 0
	if !cfg.verify { // with it, the log is rebuilt from the files below
		var err error
		valid, records, err = s.log.load(ctx, s.held, m.blockCount)
		if ctx.Err() != nil {
			return fail(fmt.Errorf("chunker: open store %s: %w", dir, ctx.Err()))
		}
		if err != nil {
			return fail(fmt.Errorf("open store %s: %w (reopen with verify to rebuild it)", dir, err))
		}
	}
	// The output files: create the missing ones, fix the sizes of the wrong ones and
	// forget their blocks.
	var drop []int
	dirs := map[string]struct{}{} // folders holding recreated files, to fsync once each
	for k, f := range m.files {
		if err := ctx.Err(); err != nil {
			return fail(fmt.Errorf("chunker: open store %s: %w", dir, err))
		}
		info, err := root.Stat(f.Path)
		if err == nil && info.Mode().IsRegular() && info.Size() == f.Size {
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("chunker: output file %s: %w", f.Path, err))
		}
		if err == nil && !info.Mode().IsRegular() {
			return fail(fmt.Errorf("%w: output file %s is not a regular file", ErrCorrupt, f.Path))
		}
		if err := s.createFile(k, dirs); err != nil {
			return fail(err)
		}
		s.fileBlocks(k, func(i int) {
			if s.held.has(i) {
				s.held.clear(i)
				drop = append(drop, i)
			}
		})
	}
	for d := range dirs {
		if err := syncDir(root, d); err != nil {
			return fail(fmt.Errorf("chunker: output folder %s: %w", d, err))
		}
	}
	var err error
	switch {
	case cfg.verify:
		err = s.verifyAll(ctx)
	case len(drop) > 0 || records > 2*s.held.count()+1024:
		// Drop the blocks of damaged files, or compact a log grown by drops.
		err = s.log.rewrite(s.held, s.held.count())
	default:
		err = s.log.open(valid)
	}
	if err != nil {
		return fail(err)
	}
	s.nheld = s.held.count()
	if s.nheld == m.blockCount {
		if err := s.finish(); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// createFile creates (or truncates) output file k at its size and fsyncs it; it adds
// its folder and their parents to dirs, which the caller fsyncs.
func (s *Store) createFile(k int, dirs map[string]struct{}) error {
	f := s.m.files[k]
	dir := path.Dir(f.Path)
	if err := s.root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("chunker: output file %s: %w", f.Path, err)
	}
	fh, err := s.root.OpenFile(f.Path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("chunker: output file %s: %w", f.Path, err)
	}
	if err := fh.Truncate(f.Size); err != nil {
		fh.Close()
		return fmt.Errorf("chunker: output file %s: %w", f.Path, err)
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return fmt.Errorf("chunker: output file %s: %w", f.Path, err)
	}
	// Not kept open: a tree may have more files than the process may open.
	if err := fh.Close(); err != nil {
		return fmt.Errorf("chunker: output file %s: %w", f.Path, err)
	}
	s.forgetFile(k)
	for d := dir; ; d = path.Dir(d) {
		dirs[d] = struct{}{}
		if d == "." {
			return nil
		}
	}
}

// fileBlocks calls fn for every block that overlaps file k.
func (s *Store) fileBlocks(k int, fn func(i int)) {
	f := s.m.files[k]
	if f.Size == 0 {
		return
	}
	bs := int64(s.m.blockSize)
	start := s.m.starts[k]
	for i := start / bs; i <= (start+f.Size-1)/bs; i++ {
		fn(int(i))
	}
}

// finish sets the final modes of a complete store's files.
func (s *Store) finish() error {
	if s.readOnly {
		return nil
	}
	for _, f := range s.m.files {
		if err := s.root.Chmod(f.Path, fs.FileMode(f.Mode|0o400)); err != nil {
			return fmt.Errorf("chunker: %w", err)
		}
	}
	return nil
}
