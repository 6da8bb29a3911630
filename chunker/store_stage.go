package chunker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/reconcile-p2p/reconcile/chunker/internal/durable"
)

// Staged stores. A store created WithStaging writes its files under its state
// folder, in STATE/data/<the paths on disk>, so that an unfinished download is
// never at its final name and whatever is there already (an older version, which
// Store.Reuse may take blocks from) stays untouched. Publish moves the complete
// files to their final names, one rename each, replacing what was there.
//
// Publishing is made restartable by a marker file, STATE/publishing, written
// before the first rename and removed after the last step: a store reopened with
// the marker present finishes the moves first. A store is staged for as long as
// its STATE/data folder exists; stores made without WithStaging (and those of
// earlier versions) write in place.

const (
	stageDir       = "data"       // the staged files, under the state folder
	publishingFile = "publishing" // the marker of a publish under way
)

// WithStaging makes CreateStore, CreateFileStore and the Open-or-create
// constructors, when they create a store, write its files under its state folder
// until Publish moves them to their final names. It needs a state folder under
// the output folder (not WithStateDir). A store reopened keeps the layout it was
// created with. Default: files are written at their final names.
func WithStaging() StoreOption {
	return func(c *storeConfig) error { c.staging = true; return nil }
}

// WithoutRepair makes the constructors that open a store fail with
// ErrDamaged, touching nothing, when the store is not staged and one of its
// output files is missing or has the wrong size (a finished download whose
// files were removed or changed), instead of making the file again, empty,
// at its final name and forgetting its blocks. The caller can then drop the
// state (DropState) and fetch again, staged, taking from the files left what
// they still hold (Store.Reuse). Default: the files are made again.
func WithoutRepair() StoreOption {
	return func(c *storeConfig) error { c.noRepair = true; return nil }
}

// StateStaged reports whether the state folder dir holds a staged store's
// files (WithStaging, not yet published): an unfinished download.
func StateStaged(dir string) bool {
	info, err := os.Lstat(filepath.Join(dir, stageDir))
	return err == nil && info.IsDir()
}

// DropState removes the store in the state folder dir (such as FILE.reconcile
// or DIR/.reconcile/<id>): its manifest first, then its held log, its staged
// files and its publish marker. Output files at their final names stay, and
// so do the folder and its lock (LockOutput). A crash midway leaves no
// manifest, so no store.
func DropState(dir string) error {
	for _, name := range stateFiles {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("chunker: drop state: %w", err)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, stageDir)); err != nil {
		return fmt.Errorf("chunker: drop state: %w", err)
	}
	return nil
}

// PublishOptions configure Store.Publish.
type PublishOptions struct {
	// Delete removes, from the content's top folder in the output folder, the
	// files, symbolic links and folders that the manifest does not name (as
	// rsync --delete). State folders are never removed. Single-file stores
	// have nothing to delete.
	Delete bool
}

// PublishReport is what Store.Publish did.
type PublishReport struct {
	Files    int      // files and symbolic links moved to their final names
	Replaced int      // of which replaced a file that was there
	Deleted  []string // paths removed (PublishOptions.Delete), relative to the output folder, slash-separated
	Stale    []ID     // other versions' stores of the same top name whose state was removed
}

// Staged reports whether the store's files are still under its state folder
// (WithStaging, not yet published).
func (s *Store) Staged() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.stage != ""
}

// FinalPath returns the path a file of the manifest, or its top folder
// (Manifest.Top), has or will have once published, in the output folder. A
// single file's store names its file for both: a content that is a folder
// of one file is that file there.
func (s *Store) FinalPath(name string) string {
	return filepath.Join(s.dir, filepath.FromSlash(s.finalPath(name)))
}

// Publish moves the files, symbolic links and empty folders of a complete staged
// store to their final names in the output folder, each file in one rename that
// replaces whatever was there (an older version's file), makes their folders
// durable and removes the staging folder. The store stays open and serves its
// blocks from the final names. In a tree layout it also removes the state of the
// other stores of the same top name that are not staged (older versions, whose
// files were just replaced).
//
// It fails with ErrIncomplete, touching nothing, unless every block is held. A
// store that is not staged has nothing to move (Publish returns an empty report).
// A failure midway (a full disk, a file open in another program on Windows:
// ErrInUse) leaves the rest staged; calling Publish again, or reopening the
// store, finishes the moves.
func (s *Store) Publish(opts PublishOptions) (PublishReport, error) {
	var rep PublishReport
	if s.readOnly {
		return rep, ErrReadOnly
	}
	if !s.Staged() {
		return rep, nil
	}
	if err := s.Sync(); err != nil {
		return rep, err
	}
	s.mu.RLock()
	closed, n := s.closed, s.nheld
	s.mu.RUnlock()
	if closed {
		return rep, ErrClosed
	}
	if n != s.m.blockCount {
		return rep, fmt.Errorf("%w: %d of %d blocks held", ErrIncomplete, n, s.m.blockCount)
	}
	marker := []byte("move\n")
	if opts.Delete {
		marker = []byte("move delete\n")
	}
	if err := durable.WriteFile(s.meta, publishingFile, marker); err != nil {
		return rep, fmt.Errorf("chunker: publish: %w", err)
	}
	return s.finishPublish(opts.Delete)
}

// finishPublish does the moves of a publish whose marker is written, then the
// deletions, and removes the staging folder and the marker.
func (s *Store) finishPublish(del bool) (PublishReport, error) {
	var rep PublishReport
	// No handle may stay open on a staged file (Windows cannot rename an open
	// file), and no reader may reopen one at its staged name meanwhile.
	s.mu.Lock()
	for {
		busy := false
		for k, f := range s.files {
			switch {
			case f == nil:
			case s.refs[k].Load() == 0:
				f.Close()
				s.files[k], s.rdonly[k] = nil, false
				s.nopen--
			default:
				busy = true
			}
		}
		if !busy {
			break
		}
		s.mu.Unlock() // a read in flight: let it end
		runtime.Gosched()
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	dirs := map[string]struct{}{}
	move := func(name string) error {
		from, to := s.stage+"/"+s.finalPath(name), s.finalPath(name)
		if _, err := s.root.Lstat(from); errors.Is(err, fs.ErrNotExist) {
			return nil // moved by an earlier, interrupted publish
		}
		if err := s.makeDir(path.Dir(to), dirs); err != nil {
			return err
		}
		info, err := s.root.Lstat(to)
		switch {
		case err == nil && info.IsDir():
			return fmt.Errorf("%w: %s is a folder, where the content has a file", ErrExists, filepath.Join(s.dir, filepath.FromSlash(to)))
		case err == nil:
			rep.Replaced++
		}
		if err := s.root.Rename(from, to); err != nil {
			return renameError(from, to, s.dir, s.stateDir, err)
		}
		rep.Files++
		dirs[path.Dir(to)] = struct{}{}
		return nil
	}
	for _, f := range s.m.files {
		if err := move(f.Path); err != nil {
			return rep, err
		}
	}
	for _, l := range s.m.links {
		if err := move(l.Path); err != nil {
			return rep, err
		}
	}
	for _, d := range s.m.dirs {
		if err := s.makeDir(s.finalPath(d), dirs); err != nil {
			return rep, err
		}
	}
	for d := range dirs {
		if err := durable.SyncDir(s.root, d); err != nil {
			return rep, fmt.Errorf("chunker: publish: folder %s: %w", d, err)
		}
	}
	if del && s.place.file == "" {
		deleted, err := s.deleteOthers()
		rep.Deleted = deleted
		if err != nil {
			return rep, err
		}
	}
	if err := s.root.RemoveAll(s.stage); err != nil {
		return rep, fmt.Errorf("chunker: publish: remove %s: %w", s.stage, err)
	}
	s.stage = ""
	if err := s.meta.Remove(publishingFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, fmt.Errorf("chunker: publish: %w", err)
	}
	if err := durable.SyncDir(s.meta, "."); err != nil {
		return rep, fmt.Errorf("chunker: publish: %w", err)
	}
	if s.place.file == "" && s.state != MetaDir {
		rep.Stale = s.removeStale()
	}
	return rep, nil
}

// renameError words a failed move of a staged file; on Windows a file open in
// another program cannot be replaced (ErrInUse).
func renameError(from, to, dir, state string, err error) error {
	if runtime.GOOS == "windows" && (errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "used by another process")) {
		return fmt.Errorf("%w: %s: %w (close the program that has it open and run again: the new version waits, complete, in %s)", ErrInUse, filepath.Join(dir, filepath.FromSlash(to)), err, state)
	}
	return fmt.Errorf("chunker: publish %s: %w", from, err)
}

// deleteOthers removes what the content's top folder holds beyond the
// manifest's files, links and folders (and their parents), state folders
// aside. Called with mu held, after the moves.
func (s *Store) deleteOthers() ([]string, error) {
	top := s.m.Top()
	if top == "" {
		return nil, nil
	}
	keep := map[string]bool{}
	add := func(name string) {
		for p := s.finalPath(name); p != "." && !keep[p]; p = path.Dir(p) {
			keep[p] = true
		}
	}
	for _, f := range s.m.files {
		add(f.Path)
	}
	for _, l := range s.m.links {
		add(l.Path)
	}
	for _, d := range s.m.dirs {
		add(d)
	}
	var gone []string
	var walk func(dir string) error
	walk = func(dir string) error {
		d, err := s.root.Open(dir)
		if err != nil {
			return err
		}
		ents, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return err
		}
		for _, e := range ents {
			name := dir + "/" + e.Name()
			switch {
			case strings.HasSuffix(e.Name(), MetaDir): // .reconcile, FILE.reconcile
				continue // a state folder: never ours to delete
			case keep[name] && e.IsDir():
				if err := walk(name); err != nil {
					return err
				}
			case keep[name]:
			default:
				if err := s.root.RemoveAll(name); err != nil {
					return err
				}
				gone = append(gone, name)
			}
		}
		return nil
	}
	if info, err := s.root.Lstat(top); err != nil || !info.IsDir() {
		return nil, nil
	}
	if err := walk(top); err != nil {
		return gone, fmt.Errorf("chunker: publish: delete: %w", err)
	}
	slices.Sort(gone)
	return gone, nil
}

// removeStale removes the state of the other stores in the output folder whose
// manifests have the same top name and that are not staged: their files were
// the ones just replaced. A store whose state cannot be read is left alone.
func (s *Store) removeStale() []ID {
	all, err := findStores(s.root, s.dir, s.cfg.maxManifestBytes)
	if err != nil {
		return nil
	}
	var out []ID
	for _, f := range all {
		if f.id == s.m.id || f.state == MetaDir {
			continue
		}
		if _, err := s.root.Lstat(f.state + "/" + stageDir); err == nil {
			continue // another version's download under way
		}
		p := place{dir: s.dir, root: s.root}
		m, err := p.use(f, s.cfg.maxManifestBytes)
		if p.meta != nil {
			p.meta.Close()
		}
		if err != nil || m.Top() != s.m.Top() {
			continue
		}
		if s.root.RemoveAll(f.state) == nil {
			out = append(out, f.id)
		}
	}
	if len(out) > 0 {
		durable.SyncDir(s.root, MetaDir)
	}
	return out
}

// useStage makes a new store staged (WithStaging) if its state folder is
// under the output folder, clearing what an earlier attempt left there.
func (p *place) useStage() error {
	if p.state == "" {
		return nil
	}
	p.stage = p.state + "/" + stageDir
	if err := p.root.RemoveAll(p.stage); err != nil {
		return fmt.Errorf("chunker: create store: %w", err)
	}
	return nil
}

// findStage sets the staging folder of a store being reopened, if it has one.
func (p *place) findStage() {
	if p.state == "" || p.stage != "" {
		return
	}
	if info, err := p.root.Lstat(p.state + "/" + stageDir); err == nil && info.IsDir() {
		p.stage = p.state + "/" + stageDir
	}
}

// resumePublish finishes a publish that a crash interrupted (its marker is
// still there); the store must be complete, as it was when the marker was
// written.
func (s *Store) resumePublish() error {
	b, err := s.meta.ReadFile(publishingFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("chunker: open store: %w", err)
	}
	if s.stage == "" {
		return s.meta.Remove(publishingFile)
	}
	if s.nheld != s.m.blockCount {
		return fmt.Errorf("%w: %s: a publish was under way with %d of %d blocks held", ErrCorrupt, s.stateDir, s.nheld, s.m.blockCount)
	}
	_, err = s.finishPublish(strings.Contains(string(b), "delete"))
	return err
}
