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

	"github.com/reconcile-p2p/reconcile/chunker/internal/durable"
	"github.com/reconcile-p2p/reconcile/chunker/internal/heldlog"
	"github.com/reconcile-p2p/reconcile/chunker/internal/pathrules"
	"github.com/reconcile-p2p/reconcile/chunker/internal/prealloc"
)

// CreateStore creates a new, empty store for m in dir (created if needed), with its
// state in dir/.reconcile/<m's id>/ (or WithStateDir). It fails with ErrExists,
// touching nothing, if dir already holds a store of m or any of m's files; the
// stores of other manifests in dir stay as they are. Cancelling ctx stops it
// between output files (the store is then left half made, and OpenOrCreateStore
// completes it). Each output file's disk space is reserved as it is created (on
// Linux, fallocate(2)), so that a disk too small fails here, with ErrNoSpace (the
// store left half made as by a cancel), rather than partway through a fetch.
func CreateStore(ctx context.Context, dir string, m *Manifest, opts ...StoreOption) (*Store, error) {
	return openTree(ctx, dir, m, opts, modeCreate)
}

// OpenStore reopens the store in dir after a restart or a crash: the held blocks are
// those recorded in the held log (or, WithVerify, those whose bytes match). An output
// file found missing or resized is recreated at its size and its blocks are dropped.
//
// The store is the one of WithID, or else the only one in dir; stores in the layout
// of earlier versions (one per folder, state in dir/.reconcile/) are opened too. It
// fails with ErrNotFound if dir holds no store (of that id) and with ErrManyStores
// if it holds several and WithID does not choose.
//
// Cancelling ctx stops the opening promptly, also amid the re-hashing of WithVerify
// (see WithCheckProgress), with an error wrapping ctx.Err(); the held log is left
// as it was.
func OpenStore(ctx context.Context, dir string, opts ...StoreOption) (*Store, error) {
	return openTree(ctx, dir, nil, opts, modeOpen)
}

// OpenOrCreateStore resumes the store for m in dir, or creates it if dir holds none
// (see CreateStore). Several manifests' stores can share dir, as long as their
// files differ: if a file of m is already there and dir holds the store of another
// manifest, it fails with an error wrapping both ErrExists and ErrManifestMismatch,
// and touches nothing. ctx is as for OpenStore.
func OpenOrCreateStore(ctx context.Context, dir string, m *Manifest, opts ...StoreOption) (*Store, error) {
	return openTree(ctx, dir, m, opts, modeOpenOrCreate)
}

// openMode says what a constructor does with an existing store and a missing one.
type openMode int

const (
	modeOpen         openMode = iota // open an existing store, ErrNotFound if none
	modeCreate                       // create a new store, ErrExists if there is one
	modeOpenOrCreate                 // open the store, or create it if there is none
)

// openTree opens or creates (as mode says) the store of a tree layout in dir.
func openTree(ctx context.Context, dir string, m *Manifest, opts []StoreOption, mode openMode) (*Store, error) {
	cfg, err := newConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	var root *os.Root
	if mode == modeOpen {
		root, err = openRoot(dir)
	} else {
		root, err = makeRoot(dir)
	}
	if err != nil {
		return nil, err
	}
	p := &place{dir: dir, root: root}
	var (
		have   *Manifest
		others bool
	)
	switch {
	case cfg.stateDir != "":
		p.setExternalState(cfg.stateDir)
		have, err = p.readManifest(cfg.maxManifestBytes)
	case mode == modeOpen:
		have, err = p.pickTree(cfg)
	default:
		have, others, err = p.findTree(m, cfg.maxManifestBytes)
	}
	s, err := p.open(ctx, have, err, others, m, cfg, mode)
	if err != nil {
		p.close()
		return nil, err
	}
	return s, nil
}

// open finishes every constructor but SeedStore: have is the manifest in p's state
// folder (err wrapping ErrNotFound if there is none), m the one asked for (nil for
// an open) and others whether the output folder holds other manifests' stores.
func (p *place) open(ctx context.Context, have *Manifest, err error, others bool, m *Manifest, cfg storeConfig, mode openMode) (*Store, error) {
	switch {
	case errors.Is(err, ErrNotFound) && mode != modeOpen:
		return createStore(ctx, p, m, cfg, others)
	case err != nil:
		return nil, err
	case m != nil && have.id != m.id:
		return nil, fmt.Errorf("%w: %s holds manifest %s, not %s", ErrManifestMismatch, p.stateDir, have.id, m.id)
	case cfg.id != nil && have.id != *cfg.id:
		return nil, fmt.Errorf("%w: %s holds manifest %s, not %s", ErrManifestMismatch, p.stateDir, have.id, *cfg.id)
	case mode == modeCreate:
		return nil, fmt.Errorf("%w: %s already holds the store of %s", ErrExists, p.stateDir, have.id)
	}
	if err := p.fit(have); err != nil {
		return nil, err
	}
	return openStore(ctx, p, have, cfg)
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

// openRoot opens the existing folder dir as the root of a store.
func openRoot(dir string) (*os.Root, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotFound, dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("chunker: open store: %w", err)
	}
	return root, nil
}

// hostRules are the naming rules (see package pathrules) that a store being
// created checks its paths against: the running system's. Tests set them to
// another system's to check its rules on any machine.
//
// createStore refuses content the system cannot hold, with ErrBadPath naming
// the file and the reason, before it writes anything. Names are refused,
// never mapped: a mapped name would make the fetched folder a different
// content from the one seeded (its manifest and root id differ), and two
// mapped names could meet. The seed's owner can rename.
var hostRules = pathrules.For(runtime.GOOS)

// createStore creates the store of m at p, whose state folder holds no manifest.
func createStore(ctx context.Context, p *place, m *Manifest, cfg storeConfig, others bool) (*Store, error) {
	if err := p.fit(m); err != nil {
		return nil, err
	}
	if cfg.staging {
		// What is at the final names (an older version) stays until Publish.
		if err := p.useStage(); err != nil {
			return nil, err
		}
		others = false
	}
	names := make([]string, 0, len(m.files)+len(m.links)+len(m.dirs))
	for k := range m.files {
		names = append(names, p.diskPath(m, k))
	}
	for _, l := range m.links {
		names = append(names, p.mapPath(l.Path))
	}
	for _, d := range m.dirs {
		names = append(names, p.mapPath(d))
	}
	if err := hostRules.Check(names); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPath, err)
	}
	for _, l := range m.links {
		if err := hostRules.CheckTarget(l.Path, l.Target); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadPath, err)
		}
	}
	nondirs := len(m.files) + len(m.links) // names[:nondirs] must not exist; the folders may
	for j, name := range names {
		info, err := p.root.Lstat(name)
		switch {
		case err == nil && j >= nondirs && info.IsDir():
		case err == nil && others:
			return nil, fmt.Errorf("%w: %s, and %s holds the store of other content (%w)", ErrExists, filepath.Join(p.dir, filepath.FromSlash(name)), p.dir, ErrManifestMismatch)
		case err == nil:
			return nil, fmt.Errorf("%w: %s", ErrExists, filepath.Join(p.dir, filepath.FromSlash(name)))
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("chunker: create store: %w", err)
		}
	}
	if err := p.openMeta(true); err != nil {
		return nil, err
	}
	// A held log left without its manifest (a crash amid RemoveState) is stale.
	if err := p.meta.Remove(heldFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("chunker: create store: %w", err)
	}
	// The manifest is the commit point: once it is in place the state folder belongs
	// to m, and OpenStore completes whatever else is missing.
	if err := durable.WriteFile(p.meta, manifestFile, m.enc); err != nil {
		return nil, fmt.Errorf("chunker: create store: %w", err)
	}
	return openStore(ctx, p, m, cfg)
}

// readManifest reads and decodes the manifest of a state folder.
func readManifest(meta *os.Root, where string, limit int) (*Manifest, error) {
	f, err := meta.Open(manifestFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no %s", ErrNotFound, where, manifestFile)
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
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	return m, nil
}

// openStore loads the held log (or starts it), checks the output files and, with
// WithVerify, re-hashes them. On error it closes whatever it opened but root.
func openStore(ctx context.Context, p *place, m *Manifest, cfg storeConfig) (*Store, error) {
	if err := p.openMeta(false); err != nil {
		return nil, err
	}
	p.findStage()
	if _, err := p.meta.Stat(publishingFile); err == nil {
		// A publish under way: the store was complete and its log synced
		// when it began, so the log is trusted and the moves are finished.
		cfg.verify = false
	}
	s := newStore(p, m, cfg)
	dir, root := p.stateDir, p.root
	fail := func(err error) (*Store, error) {
		s.closeFiles()
		s.log.Close()
		return nil, err
	}
	var valid int64
	records := 0
	if !cfg.verify { // with it, the log is rebuilt from the files below
		var err error
		valid, records, err = s.log.Load(ctx, s.held, m.blockCount)
		if ctx.Err() != nil {
			return fail(fmt.Errorf("chunker: open store %s: %w", dir, ctx.Err()))
		}
		switch {
		case errors.Is(err, heldlog.ErrBadHeader):
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		case errors.Is(err, heldlog.ErrOtherManifest):
			err = fmt.Errorf("%w: %w", ErrManifestMismatch, err)
		}
		if err != nil {
			return fail(fmt.Errorf("open store %s: %w (reopen with verify to rebuild it)", dir, err))
		}
	}
	if !cfg.verify {
		s.nheld = s.held.Count()
		if err := s.resumePublish(); err != nil {
			return fail(err)
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
		info, err := root.Stat(s.diskPath(k))
		if err == nil && info.Mode().IsRegular() && info.Size() == f.Size {
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("chunker: output file %s: %w", f.Path, err))
		}
		if err == nil && !info.Mode().IsRegular() {
			return fail(fmt.Errorf("%w: output file %s is not a regular file", ErrCorrupt, f.Path))
		}
		if cfg.noRepair && p.stage == "" {
			return fail(fmt.Errorf("%w: %s is missing or not %d bytes long", ErrDamaged, f.Path, f.Size))
		}
		if err := s.createFile(k, dirs); err != nil {
			return fail(err)
		}
		s.fileBlocks(k, func(i int) {
			if s.held.Has(i) {
				s.held.Clear(i)
				drop = append(drop, i)
			}
		})
	}
	// The empty folders: made with the files, and again if found missing.
	for _, d := range m.dirs {
		if err := s.makeDir(s.mapPath(d), dirs); err != nil {
			return fail(err)
		}
	}
	for d := range dirs {
		if err := durable.SyncDir(root, d); err != nil {
			return fail(fmt.Errorf("chunker: output folder %s: %w", d, err))
		}
	}
	var err error
	switch {
	case cfg.verify:
		err = s.verifyAll(ctx)
	case len(drop) > 0 || records > 2*s.held.Count()+1024:
		// Drop the blocks of damaged files, or compact a log grown by drops.
		err = s.log.Rewrite(s.held, s.held.Count())
	default:
		err = s.log.Open(valid)
	}
	if err != nil {
		return fail(err)
	}
	s.nheld = s.held.Count()
	if s.nheld == m.blockCount {
		if err := s.finish(); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// createFile creates (or truncates) output file k at its size, reserves its space
// (prealloc.Reserve) and fsyncs it; it adds its folder and their parents to dirs, which
// the caller fsyncs.
func (s *Store) createFile(k int, dirs map[string]struct{}) error {
	f := s.m.files[k]
	name := s.diskPath(k)
	dir := path.Dir(name)
	if err := s.root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("chunker: output file %s: %w", f.Path, err)
	}
	fh, err := s.root.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("chunker: output file %s: %w", f.Path, err)
	}
	if err := fh.Truncate(f.Size); err != nil {
		fh.Close()
		return fmt.Errorf("chunker: output file %s: %w", f.Path, err)
	}
	if err := prealloc.Reserve(fh, f.Size); err != nil {
		fh.Close()
		var ns *prealloc.NoSpaceError
		if errors.As(err, &ns) {
			return fmt.Errorf("output file %s: %w: %w", f.Path, ErrNoSpace, err)
		}
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
	first, end := s.m.FileBlocks(k)
	for i := first; i < end; i++ {
		fn(i)
	}
}

// makeDir makes folder name (and its parents) under the root unless it is a
// folder already, adding it and its parents to dirs, which the caller fsyncs.
func (s *Store) makeDir(name string, dirs map[string]struct{}) error {
	if info, err := s.root.Stat(name); err == nil && info.IsDir() {
		return nil
	}
	if err := s.root.MkdirAll(name, 0o755); err != nil {
		return fmt.Errorf("chunker: output folder %s: %w", name, err)
	}
	for d := path.Dir(name); ; d = path.Dir(d) {
		dirs[d] = struct{}{}
		if d == "." {
			return nil
		}
	}
}

// finish sets the final modes of a complete store's files and makes its
// symbolic links (see makeLinks).
func (s *Store) finish() error {
	if s.readOnly {
		return nil
	}
	for k, f := range s.m.files {
		if err := s.root.Chmod(s.diskPath(k), fs.FileMode(f.Mode|0o400)); err != nil {
			return fmt.Errorf("chunker: %w", err)
		}
	}
	return s.makeLinks()
}

// makeLinks makes the manifest's symbolic links that are not there yet, through
// the root, and fsyncs their folders. A link already there with the manifest's
// target is kept; anything else at a link's path is left alone and reported
// (ErrExists). The targets stay inside the tree (checkTarget), and the root
// keeps the links' own paths inside the output folder.
func (s *Store) makeLinks() error {
	if len(s.m.links) == 0 {
		return nil
	}
	dirs := map[string]struct{}{}
	for _, l := range s.m.links {
		name, target := s.mapPath(l.Path), filepath.FromSlash(l.Target)
		info, err := s.root.Lstat(name)
		switch {
		case err == nil && info.Mode()&fs.ModeSymlink != 0:
			if have, err := s.root.Readlink(name); err == nil && have == target {
				continue
			}
			fallthrough
		case err == nil:
			return fmt.Errorf("%w: %s is not the symbolic link to %s of the manifest", ErrExists, filepath.Join(s.dir, filepath.FromSlash(name)), l.Target)
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("chunker: symbolic link %s: %w", l.Path, err)
		}
		if err := s.makeDir(path.Dir(name), dirs); err != nil {
			return err
		}
		if err := s.root.Symlink(target, name); err != nil {
			hint := ""
			if runtime.GOOS == "windows" {
				hint = " (on Windows, making symbolic links takes Developer Mode or an administrator)"
			}
			return fmt.Errorf("%w %s -> %s: %w%s; every block is held, the store's files are complete", ErrSymlink, l.Path, l.Target, err, hint)
		}
		dirs[path.Dir(name)] = struct{}{}
	}
	for d := range dirs {
		if err := durable.SyncDir(s.root, d); err != nil {
			return fmt.Errorf("chunker: output folder %s: %w", d, err)
		}
	}
	return nil
}
