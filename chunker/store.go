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
	"slices"
	"sync"
)

// MetaDir is the name of the metadata folder inside a store folder.
const MetaDir = ".reconcile"

const (
	manifestName = MetaDir + "/manifest"
	heldName     = MetaDir + "/held"
)

// StoreOption configures CreateStore, OpenStore, OpenOrCreateStore and SeedStore.
type StoreOption func(*storeConfig) error

type storeConfig struct {
	verify           bool
	syncEvery        int
	maxManifestBytes int
}

func newConfig(opts []StoreOption) (storeConfig, error) {
	c := storeConfig{syncEvery: 1, maxManifestBytes: DefaultMaxManifestBytes}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// WithVerify makes opening re-hash every block and keep exactly those whose bytes
// match, rewriting the held log (the default trusts the held log, which is cheap).
// For SeedStore it checks that every block of the original matches.
func WithVerify() StoreOption { return func(c *storeConfig) error { c.verify = true; return nil } }

// WithSyncEvery makes PutBlock group n blocks per data fsync and record fsync (default
// 1: every PutBlock is durable when it returns). With n > 1, a block is readable and
// reported by Has as soon as PutBlock returns, and its record is written, after its
// data is fsynced, once n blocks are pending or on Sync or Close; a crash loses at
// most the unsynced records, never records a block whose bytes are not on disk.
func WithSyncEvery(n int) StoreOption {
	return func(c *storeConfig) error {
		if n < 1 {
			return fmt.Errorf("chunker: WithSyncEvery(%d): n must be at least 1", n)
		}
		c.syncEvery = n
		return nil
	}
}

// WithMaxManifestBytes bounds the size of the manifest read when reopening a store
// (default DefaultMaxManifestBytes).
func WithMaxManifestBytes(n int) StoreOption {
	return func(c *storeConfig) error {
		if n < 1 {
			return fmt.Errorf("chunker: WithMaxManifestBytes(%d): n must be positive", n)
		}
		c.maxManifestBytes = n
		return nil
	}
}

// Report is the outcome of Store.Verify.
type Report struct {
	Blocks  int   `json:"blocks"`  // blocks in the manifest
	Held    int   `json:"held"`    // held blocks, all of which matched their hash
	Missing int   `json:"missing"` // blocks not held (including the corrupt ones)
	Corrupt []int `json:"corrupt"` // blocks recorded as held whose bytes did not match; no longer held
}

// Store holds the blocks of one manifest in a folder; see the package comment for
// the layout. It is safe for concurrent use.
type Store struct {
	m        *Manifest
	dir      string
	root     *os.Root
	readOnly bool
	cfg      storeConfig
	seed     uint64 // record check seed

	mu      sync.RWMutex // guards the fields below
	held    bitset
	nheld   int
	closed  bool
	pending []int
	dirty   map[int]struct{} // files written since the last data fsync

	fmu     sync.Mutex // guards files, rdonly, refs, nopen and evictAt
	files   []*os.File // lazily opened output files, at most about maxOpen at once
	rdonly  []bool     // files[k] was opened read-only (a complete store's read-only mode)
	refs    []int32    // users of files[k] between openFile and release
	nopen   int        // non-nil entries of files
	maxOpen int        // handles kept open before unused ones are closed
	evictAt int        // where the next eviction scan starts

	top [2]string // a seed store's manifest root name and its name on disk

	syncMu sync.Mutex // serializes flushes; guards log and logOff
	log    *os.File
	logOff int64
}

// CreateStore creates a new, empty store for m in dir (created if needed). It fails
// with ErrExists, touching nothing, if dir already holds a store or any of m's files.
func CreateStore(dir string, m *Manifest, opts ...StoreOption) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	root, err := makeRoot(dir)
	if err != nil {
		return nil, err
	}
	s, err := createStore(dir, root, m, cfg)
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

func createStore(dir string, root *os.Root, m *Manifest, cfg storeConfig) (*Store, error) {
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
	return openStore(dir, root, m, cfg)
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
func OpenStore(dir string, opts ...StoreOption) (*Store, error) {
	cfg, err := newConfig(opts)
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
	s, err := openStore(dir, root, m, cfg)
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
// and touches nothing.
func OpenOrCreateStore(dir string, m *Manifest, opts ...StoreOption) (*Store, error) {
	cfg, err := newConfig(opts)
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
		s, err = createStore(dir, root, m, cfg)
	case err != nil:
	case have.id != m.id:
		err = fmt.Errorf("%w: %s holds manifest %s, not %s", ErrManifestMismatch, dir, have.id, m.id)
	default:
		s, err = openStore(dir, root, have, cfg)
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return s, nil
}

// openStore loads (or starts) the held log and checks the output files.
func openStore(dir string, root *os.Root, m *Manifest, cfg storeConfig) (*Store, error) {
	s := &Store{
		m: m, dir: dir, root: root, cfg: cfg, seed: logSeed(m.id),
		held: newBitset(m.blockCount), dirty: map[int]struct{}{},
		files: make([]*os.File, len(m.files)), rdonly: make([]bool, len(m.files)),
		refs: make([]int32, len(m.files)), maxOpen: maxOpenFiles,
	}
	fail := func(err error) (*Store, error) {
		s.closeFiles()
		if s.log != nil {
			s.log.Close()
		}
		return nil, err
	}
	// The held log.
	var valid int64
	records := 0
	lf, err := root.Open(heldName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := writeAtomic(root, heldName, logHeader(m.id)); err != nil {
			return fail(fmt.Errorf("chunker: open store: %w", err))
		}
		valid = logHeaderSize
	case err != nil:
		return fail(fmt.Errorf("chunker: open store: %w", err))
	case cfg.verify:
		lf.Close() // rebuilt from the files below
	default:
		valid, records, _, err = replayLog(lf, m.id, m.blockCount, s.held)
		lf.Close()
		if err != nil {
			return fail(fmt.Errorf("open store %s: %w (reopen with verify to rebuild it)", dir, err))
		}
	}
	// The output files: create the missing ones, fix the sizes of the wrong ones and
	// forget their blocks.
	var drop []int
	dirs := map[string]struct{}{} // folders holding recreated files, to fsync once each
	for k, f := range m.files {
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
	s.log, err = root.OpenFile(heldName, os.O_RDWR, 0)
	if err != nil {
		return fail(fmt.Errorf("chunker: open store: %w", err))
	}
	switch {
	case cfg.verify:
		if err := s.verifyAll(context.Background()); err != nil {
			return fail(err)
		}
	case len(drop) > 0 || records > 2*s.held.count()+1024:
		// Drop the blocks of damaged files, or compact a log grown by drops.
		if err := s.rewriteLog(); err != nil {
			return fail(err)
		}
	default:
		if err := s.log.Truncate(valid); err != nil { // cut a torn record off the end
			return fail(fmt.Errorf("chunker: open store: %w", err))
		}
		s.logOff = valid
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
	s.fmu.Lock()
	if old := s.files[k]; old != nil {
		old.Close()
		s.files[k] = nil
		s.nopen--
	}
	s.fmu.Unlock()
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

// rewriteLog replaces the held log with one holding exactly the held set.
func (s *Store) rewriteLog() error {
	buf := logHeader(s.m.id)
	for i := range s.m.blockCount {
		if s.held.has(i) {
			buf = appendRecord(buf, s.seed, i, opHeld)
		}
	}
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
	if err := writeAtomic(s.root, heldName, buf); err != nil {
		return fmt.Errorf("chunker: rewrite held log: %w", err)
	}
	var err error
	if s.log, err = s.root.OpenFile(heldName, os.O_RDWR, 0); err != nil {
		return fmt.Errorf("chunker: rewrite held log: %w", err)
	}
	s.logOff = int64(len(buf))
	return nil
}

// verifyAll re-hashes every block, fsyncs the files and rewrites the log with
// exactly the matching blocks.
func (s *Store) verifyAll(ctx context.Context) error {
	all := make([]int, s.m.blockCount)
	for i := range all {
		all[i] = i
	}
	bad, err := s.checkBlocks(ctx, all, nil)
	if err != nil {
		return err
	}
	s.held = newBitset(s.m.blockCount)
	s.held.setAll(s.m.blockCount)
	for _, i := range bad {
		s.held.clear(i)
	}
	if !s.readOnly {
		for k := range s.m.files {
			f, err := s.file(k)
			if err != nil {
				return err
			}
			err = f.Sync()
			s.release(k)
			if err != nil {
				return fmt.Errorf("chunker: verify: %w", err)
			}
		}
		return s.rewriteLog()
	}
	return nil
}

// checkBlocks re-hashes the given blocks on GOMAXPROCS goroutines and returns, in
// increasing order, those that cannot be read or do not match. fn, if not nil, is
// called with the number checked so far and the total.
func (s *Store) checkBlocks(ctx context.Context, idx []int, fn func(done, total int)) ([]int, error) {
	var (
		mu   sync.Mutex
		bad  = []int{}
		next int
		done int
		wg   sync.WaitGroup
	)
	if fn != nil {
		fn(0, len(idx))
	}
	for range min(runtime.GOMAXPROCS(0), max(len(idx), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for ctx.Err() == nil {
				mu.Lock()
				k := next
				next++
				mu.Unlock()
				if k >= len(idx) {
					return
				}
				i := idx[k]
				var err error
				if buf, err = s.readAt(i, buf); err == nil {
					err = VerifyBlock(s.m, i, buf)
				}
				mu.Lock()
				if err != nil {
					bad = append(bad, i)
				}
				done++
				if fn != nil {
					fn(done, len(idx))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.Sort(bad)
	return bad, nil
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

// SeedStore serves the original file or tree at path (the path given to ChunkPath)
// in place: read-only, every block held, nothing copied. It checks that every file of
// m exists under path with its size (ErrManifestMismatch otherwise); WithVerify also
// re-hashes every block (ErrBadBlock if one does not match).
func SeedStore(p string, m *Manifest, opts ...StoreOption) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, fmt.Errorf("chunker: seed %s: %w", p, err)
	}
	name, err := rootName(abs)
	if err != nil {
		return nil, err
	}
	for _, f := range m.files {
		if f.Path != name && !(len(f.Path) > len(name) && f.Path[:len(name)+1] == name+"/") {
			return nil, fmt.Errorf("%w: manifest file %s is not under %s", ErrManifestMismatch, f.Path, name)
		}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: seed: %w", ErrManifestMismatch, err)
	}
	dir := filepath.Dir(real)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("chunker: seed %s: %w", p, err)
	}
	s := &Store{
		m: m, dir: dir, root: root, cfg: cfg, readOnly: true, seed: logSeed(m.id),
		held: newBitset(m.blockCount), dirty: map[int]struct{}{},
		files: make([]*os.File, len(m.files)), rdonly: make([]bool, len(m.files)),
		refs: make([]int32, len(m.files)), maxOpen: maxOpenFiles,
		top: [2]string{name, filepath.Base(real)},
	}
	for k, f := range m.files {
		info, err := root.Stat(s.diskPath(k))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%w: seed %s: %w", ErrManifestMismatch, f.Path, err)
		}
		if !info.Mode().IsRegular() || info.Size() != f.Size {
			s.Close()
			return nil, fmt.Errorf("%w: seed %s: size %d, manifest says %d", ErrManifestMismatch, f.Path, info.Size(), f.Size)
		}
	}
	if cfg.verify {
		if err := s.verifyAll(context.Background()); err != nil {
			s.Close()
			return nil, err
		}
		if n := s.held.count(); n != m.blockCount {
			s.Close()
			return nil, fmt.Errorf("%w: seed %s: %d of %d blocks do not match the manifest", ErrBadBlock, p, m.blockCount-n, m.blockCount)
		}
	}
	s.held.setAll(m.blockCount)
	s.nheld = m.blockCount
	return s, nil
}

// Manifest returns the store's manifest.
func (s *Store) Manifest() *Manifest { return s.m }

// Dir returns the folder of the store (for a seed store: the folder holding the
// seeded file or tree). The output files are at Dir()/File.Path.
func (s *Store) Dir() string { return s.dir }

// ReadOnly reports whether the store is a seed store.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Has reports whether block i is held.
func (s *Store) Has(i int) bool {
	if i < 0 || i >= s.m.blockCount {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.held.has(i)
}

// HeldCount returns the number of held blocks.
func (s *Store) HeldCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nheld
}

// Held returns the indices of the held blocks, in increasing order.
func (s *Store) Held() []int { return s.list(true) }

// Missing returns the indices of the blocks not held, in increasing order.
func (s *Store) Missing() []int { return s.list(false) }

func (s *Store) list(held bool) []int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nheld
	if !held {
		n = s.m.blockCount - n
	}
	out := make([]int, 0, n)
	for i := range s.m.blockCount {
		if s.held.has(i) == held {
			out = append(out, i)
		}
	}
	return out
}

// Complete reports whether every block is held.
func (s *Store) Complete() bool { return s.HeldCount() == s.m.blockCount }

// maxOpenFiles bounds the output files a store keeps open (a tree may hold
// more files than the process may open); unused ones beyond it are closed.
const maxOpenFiles = 256

// file returns the open output file k, opening it on first use. The caller
// must call release(k) when done with it.
func (s *Store) file(k int) (*os.File, error) { return s.openFile(k, false) }

// writableFile returns output file k open for writing, like file. A handle
// opened read-only while the store was complete (its files may then have
// read-only modes) is replaced, since Verify may have dropped blocks to write
// again.
func (s *Store) writableFile(k int) (*os.File, error) { return s.openFile(k, true) }

// release ends a use of file k begun by file or writableFile.
func (s *Store) release(k int) {
	s.fmu.Lock()
	s.refs[k]--
	s.fmu.Unlock()
}

// evict closes unused handles, other than file keep, until at most 3/4 of
// maxOpen are open. Data written through a closed handle stays in the page
// cache, and fsync through a new handle makes it durable. Called with fmu held.
func (s *Store) evict(keep int) {
	n := len(s.files)
	for j := 0; j < n && s.nopen > s.maxOpen*3/4; j++ {
		k := (s.evictAt + j) % n
		if f := s.files[k]; f != nil && k != keep && s.refs[k] == 0 {
			f.Close()
			s.files[k], s.rdonly[k] = nil, false
			s.nopen--
		}
	}
	s.evictAt = (s.evictAt + n/4 + 1) % n
}

func (s *Store) openFile(k int, write bool) (*os.File, error) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed { // Close closes the files after setting closed: open no new one
		return nil, ErrClosed
	}
	if f := s.files[k]; f != nil {
		if !write || !s.rdonly[k] {
			s.refs[k]++
			return f, nil
		}
		f.Close()
		s.files[k], s.rdonly[k] = nil, false
		s.nopen--
	}
	flag := os.O_RDWR
	if s.readOnly {
		flag = os.O_RDONLY
	}
	name := s.diskPath(k)
	f, err := s.root.OpenFile(name, flag, 0)
	rdonly := false
	if err != nil && flag == os.O_RDWR && errors.Is(err, fs.ErrPermission) {
		// A complete store's files get the manifest's modes, which may be read-only.
		if !write && s.Complete() {
			f, err = s.root.OpenFile(name, os.O_RDONLY, 0)
			rdonly = true
		} else if s.root.Chmod(name, fs.FileMode(s.m.files[k].Mode|0o600)) == nil {
			f, err = s.root.OpenFile(name, flag, 0)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("chunker: %w", err)
	}
	s.files[k], s.rdonly[k] = f, rdonly
	s.refs[k]++
	s.nopen++
	if s.nopen > s.maxOpen {
		s.evict(k)
	}
	return f, nil
}

// diskPath returns the path of file k under the store's root.
func (s *Store) diskPath(k int) string {
	p := s.m.files[k].Path
	if s.top[0] != s.top[1] && s.top[0] != "" {
		p = s.top[1] + p[len(s.top[0]):]
	}
	return p
}

// PutBlock stores block i: it checks data against the manifest (ErrBadIndex,
// ErrBadBlock), writes it in place, fsyncs it and then records it (see WithSyncEvery).
// Putting a held block again is a no-op.
func (s *Store) PutBlock(i int, data []byte) error {
	if err := VerifyBlock(s.m, i, data); err != nil {
		return err
	}
	s.mu.RLock()
	closed, held := s.closed, s.held.has(i)
	s.mu.RUnlock()
	switch {
	case closed:
		return ErrClosed
	case s.readOnly:
		return ErrReadOnly
	case held:
		return nil
	}
	var files []int
	err := s.m.segments(i, func(g segment) error {
		f, err := s.writableFile(g.file)
		if err != nil {
			return err
		}
		files = append(files, g.file)
		_, err = f.WriteAt(data[g.pos:g.pos+g.n], g.off)
		s.release(g.file)
		if err != nil {
			return fmt.Errorf("chunker: write block %d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.held.has(i) {
		s.mu.Unlock()
		return nil
	}
	s.held.set(i)
	s.nheld++
	s.pending = append(s.pending, i)
	for _, k := range files {
		s.dirty[k] = struct{}{}
	}
	flush := len(s.pending) >= s.cfg.syncEvery || s.nheld == s.m.blockCount
	s.mu.Unlock()
	if flush {
		return s.flush()
	}
	return nil
}

// flush fsyncs the files written since the last flush, then appends and fsyncs the
// records of the pending blocks. If the data fsync fails, those blocks are no
// longer held.
func (s *Store) flush() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	pend, dirty := s.pending, s.dirty
	s.pending, s.dirty = nil, map[int]struct{}{}
	s.mu.Unlock()
	if len(pend) == 0 {
		return nil
	}
	unhold := func(err error) error {
		s.mu.Lock()
		for _, i := range pend {
			if s.held.has(i) {
				s.held.clear(i)
				s.nheld--
			}
		}
		s.mu.Unlock()
		return err
	}
	for k := range dirty {
		f, err := s.file(k)
		if err == nil {
			err = f.Sync()
			s.release(k)
		}
		if err != nil {
			return unhold(fmt.Errorf("chunker: sync %s: %w", s.m.files[k].Path, err))
		}
	}
	buf := make([]byte, 0, len(pend)*logRecordSize)
	for _, i := range pend {
		buf = appendRecord(buf, s.seed, i, opHeld)
	}
	if _, err := s.log.WriteAt(buf, s.logOff); err != nil {
		return unhold(fmt.Errorf("chunker: write held log: %w", err))
	}
	s.logOff += int64(len(buf))
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("chunker: sync held log: %w", err)
	}
	if s.HeldCount() == s.m.blockCount {
		return s.finish()
	}
	return nil
}

// ReadBlock appends block i to dst[:0] and returns it, without re-hashing it (the
// block was verified when it was put). It fails with ErrBadIndex if i is out of
// range and ErrNotHeld if the block is not held.
func (s *Store) ReadBlock(i int, dst []byte) ([]byte, error) {
	if i < 0 || i >= s.m.blockCount {
		return dst[:0], fmt.Errorf("%w: block %d of %d", ErrBadIndex, i, s.m.blockCount)
	}
	s.mu.RLock()
	closed, held := s.closed, s.held.has(i)
	s.mu.RUnlock()
	if closed {
		return dst[:0], ErrClosed
	}
	if !held {
		return dst[:0], fmt.Errorf("%w: block %d", ErrNotHeld, i)
	}
	return s.readAt(i, dst)
}

// readAt reads block i from the files into dst[:0].
func (s *Store) readAt(i int, dst []byte) ([]byte, error) {
	n := s.m.BlockLen(i)
	dst = slices.Grow(dst[:0], n)[:n]
	err := s.m.segments(i, func(g segment) error {
		f, err := s.file(g.file)
		if err != nil {
			return err
		}
		_, err = f.ReadAt(dst[g.pos:g.pos+g.n], g.off)
		s.release(g.file)
		if err != nil {
			return fmt.Errorf("chunker: read block %d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		return dst[:0], err
	}
	return dst, nil
}

// Sync makes every block put so far durable (records included).
func (s *Store) Sync() error {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return s.flush()
}

// Verify re-hashes every held block. Blocks whose bytes no longer match are reported
// as corrupt and dropped from the held set (durably, unless the store is read-only).
func (s *Store) Verify(ctx context.Context) (Report, error) { return s.VerifyProgress(ctx, nil) }

// VerifyProgress is Verify calling fn (if not nil) after each block with the number
// of held blocks checked so far and their total.
func (s *Store) VerifyProgress(ctx context.Context, fn func(done, total int)) (Report, error) {
	if err := s.Sync(); err != nil {
		return Report{}, err
	}
	rep := Report{Blocks: s.m.blockCount}
	held := s.Held()
	var err error
	if rep.Corrupt, err = s.checkBlocks(ctx, held, fn); err != nil {
		return rep, err
	}
	if len(rep.Corrupt) > 0 {
		// Under syncMu, so that a block put again after being dropped gets its held
		// record after the dropped one.
		s.syncMu.Lock()
		s.mu.Lock()
		for _, i := range rep.Corrupt {
			if s.held.has(i) {
				s.held.clear(i)
				s.nheld--
			}
		}
		s.mu.Unlock()
		var err error
		if !s.readOnly {
			buf := make([]byte, 0, len(rep.Corrupt)*logRecordSize)
			for _, i := range rep.Corrupt {
				buf = appendRecord(buf, s.seed, i, opDropped)
			}
			if _, err = s.log.WriteAt(buf, s.logOff); err == nil {
				s.logOff += int64(len(buf))
				err = s.log.Sync()
			}
		}
		s.syncMu.Unlock()
		if err != nil {
			return rep, fmt.Errorf("chunker: write held log: %w", err)
		}
	}
	rep.Held = s.HeldCount()
	rep.Missing = rep.Blocks - rep.Held
	return rep, nil
}

// Close syncs and closes the store. Closing twice returns ErrClosed.
func (s *Store) Close() error {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	var err error
	if !s.readOnly && s.log != nil {
		err = s.flush()
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.syncMu.Lock()
	if s.log != nil {
		if e := s.log.Close(); err == nil {
			err = e
		}
	}
	s.syncMu.Unlock()
	s.closeFiles()
	s.root.Close()
	return err
}

func (s *Store) closeFiles() {
	s.fmu.Lock()
	for k, f := range s.files {
		if f != nil {
			f.Close()
			s.files[k] = nil
		}
	}
	s.nopen = 0
	s.fmu.Unlock()
}
