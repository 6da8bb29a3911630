package chunker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reconcile-p2p/reconcile/chunker/internal/durable"
)

// Where a store lives. Its output files are under an output folder, confined to it
// by an os.Root; its state (manifest and held log) is in a state folder:
//
//   - tree layout (CreateStore, OpenStore, OpenOrCreateStore): the files at
//     DIR/<manifest paths>, the state in DIR/.reconcile/<manifest id>/, so that
//     one folder holds many downloads. Earlier versions kept the state of a
//     folder's only store in DIR/.reconcile/ itself; OpenStore and
//     OpenOrCreateStore still open such stores.
//   - single-file layout (CreateFileStore, OpenFileStore, OpenOrCreateFileStore):
//     the one file of the manifest at FILE, whatever its name in the manifest, the
//     state in FILE.reconcile/.
//
// WithStateDir puts the state of either layout in a folder of the caller's choice.

// WithStateDir keeps the store's manifest and held log in dir (created if needed)
// instead of the default state folder of its layout. Such a folder holds the state
// of one store. Default: DIR/.reconcile/<manifest id>/ for a tree,
// FILE.reconcile/ for a single file.
func WithStateDir(dir string) StoreOption {
	return func(c *storeConfig) error {
		if dir == "" {
			return errors.New("chunker: WithStateDir: empty folder name")
		}
		c.stateDir = dir
		return nil
	}
}

// WithID makes OpenStore and OpenFileStore open the store of the manifest with
// this id (a ticket's root), for a folder may hold the stores of several. With it,
// OpenStore fails with ErrNotFound if the folder holds no store of id, and the
// other constructors with ErrManifestMismatch if the state folder holds another
// manifest. Default: the folder's only store.
func WithID(id ID) StoreOption {
	return func(c *storeConfig) error { c.id = &id; return nil }
}

// place says where a store keeps its output files and its state.
type place struct {
	dir      string    // the output folder
	root     *os.Root  // the output folder; every output file is opened through it
	top      [2]string // the manifest's top name and its name on disk, if they differ
	file     string    // single-file layout: the output file's name in dir
	state    string    // the state folder under root, or "" if it is elsewhere
	stateDir string    // the state folder's path ("" for a seed store)
	stage    string    // the staging folder under root (WithStaging), "" once published or if none
	meta     *os.Root  // the state folder, once opened
}

// setState puts the state folder at name under the output folder.
func (p *place) setState(name string) {
	p.state, p.stateDir = name, filepath.Join(p.dir, filepath.FromSlash(name))
}

// setExternalState puts the state folder at dir (WithStateDir).
func (p *place) setExternalState(dir string) { p.state, p.stateDir = "", dir }

// stateFor returns the default state folder of m's store in a tree layout.
func stateFor(id ID) string { return MetaDir + "/" + id.String() }

// openMeta opens the state folder, creating it first if create (ErrNotFound if it
// does not exist otherwise). The state folder of a tree is opened through the
// output folder's root, so that a planted symbolic link cannot move it elsewhere.
func (p *place) openMeta(create bool) error {
	if p.meta != nil {
		return nil
	}
	var err error
	if p.state == "" {
		if create {
			if err := os.MkdirAll(p.stateDir, 0o755); err != nil {
				return fmt.Errorf("chunker: create state folder: %w", err)
			}
		}
		p.meta, err = os.OpenRoot(p.stateDir)
	} else {
		if create {
			if err := p.root.MkdirAll(p.state, 0o755); err != nil {
				return fmt.Errorf("chunker: create state folder: %w", err)
			}
			for d := path.Dir(p.state); ; d = path.Dir(d) { // make the new entries durable
				if err := durable.SyncDir(p.root, d); err != nil {
					return fmt.Errorf("chunker: create state folder: %w", err)
				}
				if d == "." {
					break
				}
			}
		}
		p.meta, err = p.root.OpenRoot(p.state)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: no state folder %s", ErrNotFound, p.stateDir)
	}
	if err != nil {
		return fmt.Errorf("chunker: open state folder: %w", err)
	}
	return nil
}

// readManifest reads the manifest of p's state folder (ErrNotFound if none).
func (p *place) readManifest(limit int) (*Manifest, error) {
	if err := p.openMeta(false); err != nil {
		return nil, err
	}
	return readManifest(p.meta, p.stateDir, limit)
}

// found is a store found in an output folder.
type found struct {
	state string    // its state folder
	id    ID        // its manifest's id
	m     *Manifest // its manifest, if already read
}

// findStores lists the stores of the tree layout in root: an old-layout store first,
// then those in .reconcile/<id>/ in the order of their ids.
func findStores(root *os.Root, dir string, limit int) ([]found, error) {
	var out []found
	if _, err := root.Lstat(MetaDir + "/" + manifestFile); err == nil {
		p := place{dir: dir, root: root}
		p.setState(MetaDir)
		m, err := p.readManifest(limit)
		if p.meta != nil {
			p.meta.Close()
		}
		if err != nil {
			return nil, err
		}
		out = append(out, found{MetaDir, m.id, m})
	}
	d, err := root.Open(MetaDir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("chunker: list stores: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("chunker: list stores: %w", err)
	}
	slices.Sort(names)
	for _, n := range names {
		id, err := ParseID(n)
		if err != nil || id.String() != n {
			continue
		}
		if _, err := root.Lstat(MetaDir + "/" + n + "/" + manifestFile); err != nil {
			continue // not a store, or one that died before its commit point
		}
		out = append(out, found{MetaDir + "/" + n, id, nil})
	}
	return out, nil
}

// use makes f p's state folder and returns its manifest.
func (p *place) use(f found, limit int) (*Manifest, error) {
	p.setState(f.state)
	if f.m != nil {
		return f.m, nil
	}
	m, err := p.readManifest(limit)
	if err != nil {
		return nil, err
	}
	if m.id != f.id {
		return nil, fmt.Errorf("%w: state folder %s holds manifest %s", ErrCorrupt, p.stateDir, m.id)
	}
	return m, nil
}

// pickTree chooses the store OpenStore opens: that of WithID or the only one.
func (p *place) pickTree(cfg storeConfig) (*Manifest, error) {
	all, err := findStores(p.root, p.dir, cfg.maxManifestBytes)
	if err != nil {
		return nil, err
	}
	if cfg.id != nil {
		all = slices.DeleteFunc(all, func(f found) bool { return f.id != *cfg.id })
	}
	switch {
	case len(all) == 0 && cfg.id != nil:
		return nil, fmt.Errorf("%w: %s holds no store of %s", ErrNotFound, p.dir, *cfg.id)
	case len(all) == 0:
		return nil, fmt.Errorf("%w: %s has no %s folder with a manifest", ErrNotFound, p.dir, MetaDir)
	case len(all) > 1:
		ids := make([]string, len(all))
		for i, f := range all {
			ids[i] = f.id.String()
		}
		return nil, fmt.Errorf("%w: %s holds the stores of %s; choose one with WithID", ErrManyStores, p.dir, strings.Join(ids, ", "))
	}
	return p.use(all[0], cfg.maxManifestBytes)
}

// findTree finds the store of m among the stores in the output folder; if there
// is none it returns an error wrapping ErrNotFound, with p's state folder set to
// the default one for m. others reports whether the folder holds other stores.
func (p *place) findTree(m *Manifest, limit int) (have *Manifest, others bool, err error) {
	all, err := findStores(p.root, p.dir, limit)
	if err != nil {
		return nil, false, err
	}
	for _, f := range all {
		if f.id == m.id {
			have, err := p.use(f, limit)
			return have, len(all) > 1, err
		}
	}
	p.setState(stateFor(m.id))
	return nil, len(all) > 0, fmt.Errorf("%w: %s holds no store of %s", ErrNotFound, p.dir, m.id)
}

// fit checks that m can live at p and, for a single file, names it on disk.
func (p *place) fit(m *Manifest) error {
	if p.file == "" {
		return nil
	}
	if len(m.files) != 1 || len(m.links) > 0 || len(m.dirs) > 0 {
		return fmt.Errorf("%w: manifest %s has %d files, %d symbolic links and %d empty folders", ErrNotFile, m.id, len(m.files), len(m.links), len(m.dirs))
	}
	p.top = [2]string{m.files[0].Path, p.file}
	return nil
}

// diskPath returns the path of m's file k under the output folder.
func (p *place) diskPath(m *Manifest, k int) string { return p.mapPath(m.files[k].Path) }

// mapPath returns the path under the output folder's root where manifest path
// name is now: in the staging folder until the store is published.
func (p *place) mapPath(name string) string {
	if p.stage != "" {
		return p.stage + "/" + p.finalPath(name)
	}
	return p.finalPath(name)
}

// finalPath returns the path under the output folder of manifest path name,
// once published. Where the content's top name differs on disk (p.top: a
// seed's folder reached through a link, or a single file's store), paths
// under it move with it; in a single file's store, every folder above the
// file (the content's top, for a folder of one file) is the file on disk.
func (p *place) finalPath(name string) string {
	if p.top[0] == p.top[1] || p.top[0] == "" {
		return name
	}
	switch {
	case strings.HasPrefix(name, p.top[0]+"/"): // a seed's top folder, named otherwise on disk
		return p.top[1] + name[len(p.top[0]):]
	case name == p.top[0] || strings.HasPrefix(p.top[0], name+"/"):
		return p.top[1]
	}
	return name
}

// close closes the roots of p.
func (p *place) close() {
	if p.meta != nil {
		p.meta.Close()
		p.meta = nil
	}
	p.root.Close()
}

// ListStores returns the ids of the manifests whose stores (of the tree layout)
// dir holds, an old-layout store first, then in increasing order. It returns none,
// and no error, if dir holds no store or does not exist.
func ListStores(dir string) ([]ID, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("chunker: list stores: %w", err)
	}
	defer root.Close()
	all, err := findStores(root, dir, DefaultMaxManifestBytes)
	if err != nil {
		return nil, err
	}
	ids := make([]ID, len(all))
	for i, f := range all {
		ids[i] = f.id
	}
	return ids, nil
}

// StateManifest returns the manifest in the state folder dir (such as
// FILE.reconcile or DIR/.reconcile/<id>), reading at most limit bytes of it,
// without opening the store: ErrNotFound if dir holds no manifest. A fetch
// reads so the older version it is about to replace, whose manifest the new
// one may come as a delta against.
func StateManifest(dir string, limit int) (*Manifest, error) {
	meta, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no state folder %s", ErrNotFound, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("chunker: %w", err)
	}
	defer meta.Close()
	return readManifest(meta, dir, limit)
}

// CreateFileStore creates a new, empty store for m, a single file (ErrNotFile
// otherwise), written to the path file whatever its name in the manifest, with its
// state in file+".reconcile" (or WithStateDir). It fails with ErrExists, touching
// nothing, if file or a store of m is already there. ctx is as for CreateStore.
func CreateFileStore(ctx context.Context, file string, m *Manifest, opts ...StoreOption) (*Store, error) {
	return openFile(ctx, file, m, opts, modeCreate)
}

// OpenFileStore reopens the single-file store of file, as OpenStore does a tree's.
// It fails with ErrNotFound if file has no state folder holding a manifest.
func OpenFileStore(ctx context.Context, file string, opts ...StoreOption) (*Store, error) {
	return openFile(ctx, file, nil, opts, modeOpen)
}

// OpenOrCreateFileStore resumes the single-file store of m at file, or creates it
// (see CreateFileStore). It fails with ErrManifestMismatch, touching nothing, if
// the state folder holds another manifest. This is "fetch --out FILE"; when the
// download completes, Store.RemoveState leaves just the file.
func OpenOrCreateFileStore(ctx context.Context, file string, m *Manifest, opts ...StoreOption) (*Store, error) {
	return openFile(ctx, file, m, opts, modeOpenOrCreate)
}

// openFile opens or creates (as mode says) the store of a single-file layout.
func openFile(ctx context.Context, file string, m *Manifest, opts []StoreOption, mode openMode) (*Store, error) {
	cfg, err := newConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	dir, name := filepath.Split(filepath.Clean(file))
	if dir == "" {
		dir = "."
	}
	if name == "" || name == "." || name == ".." || name == MetaDir || strings.ContainsRune(name, filepath.Separator) {
		return nil, fmt.Errorf("%w: %q cannot be a store's output file", ErrBadPath, file)
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
	p := &place{dir: filepath.Clean(dir), root: root, file: name}
	if cfg.stateDir != "" {
		p.setExternalState(cfg.stateDir)
	} else {
		p.setState(name + MetaDir)
	}
	have, err := p.readManifest(cfg.maxManifestBytes)
	s, err := p.open(ctx, have, err, false, m, cfg, mode)
	if err != nil {
		p.close()
		return nil, err
	}
	return s, nil
}

// RemoveState deletes the store's state once the download is over: it makes every
// block durable, closes the store and removes the manifest and the held log, then
// the state folder if nothing else is in it (and, for a tree, .reconcile if it is
// left empty). The output files stay as plain finished files. It fails with
// ErrIncomplete, touching nothing, unless every block is held, and with
// ErrReadOnly for a seed store. This is "fetch --out FILE" without --seed-after.
//
// The manifest goes first: a crash midway leaves at worst a held log that no store
// uses, which CreateStore clears.
func (s *Store) RemoveState() error {
	if s.readOnly {
		return ErrReadOnly
	}
	if err := s.Sync(); err != nil {
		return err
	}
	s.flushMu.Lock()
	s.mu.Lock()
	if s.closed || s.nheld != s.m.blockCount {
		closed, n := s.closed, s.nheld
		s.mu.Unlock()
		s.flushMu.Unlock()
		if closed {
			return ErrClosed
		}
		return fmt.Errorf("%w: %d of %d blocks held", ErrIncomplete, n, s.m.blockCount)
	}
	s.closed = true
	s.mu.Unlock()
	err := s.log.Close()
	s.flushMu.Unlock()
	s.closeFiles()
	defer s.place.close()
	for _, name := range stateFiles {
		if e := s.meta.Remove(name); e != nil && !errors.Is(e, fs.ErrNotExist) {
			return fmt.Errorf("chunker: remove state: %w", e)
		}
	}
	if err := durable.SyncDir(s.meta, "."); err != nil {
		return fmt.Errorf("chunker: remove state: %w", err)
	}
	s.meta.Close()
	s.meta = nil
	// The folders go if they are empty; something else in them stays, and so do they.
	if s.state == "" {
		os.Remove(s.stateDir)
		return err
	}
	for d := s.state; d != "." && s.root.Remove(d) == nil; d = path.Dir(d) {
		durable.SyncDir(s.root, path.Dir(d))
	}
	return err
}
