package chunker

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/reconcile-p2p/reconcile/chunker/internal/cut"
	"github.com/reconcile-p2p/reconcile/chunker/internal/heldlog"
)

// verifyAll re-hashes every block, fsyncs the files and rewrites the log with
// exactly the matching blocks. It runs while the store is being opened, before any
// other goroutine can use it.
func (s *Store) verifyAll(ctx context.Context) error {
	all := make([]int, s.m.blockCount)
	for i := range all {
		all[i] = i
	}
	bad, err := s.checkBlocks(ctx, all, s.cfg.checkProgress)
	if err != nil {
		return fmt.Errorf("chunker: check %d blocks in %s: %w", len(all), s.dir, err)
	}
	s.held = heldlog.NewBitset(s.m.blockCount)
	s.held.SetAll(s.m.blockCount)
	for _, i := range bad {
		s.held.Clear(i)
	}
	if s.readOnly {
		return nil
	}
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
	return s.log.Rewrite(s.held, s.m.blockCount-len(bad))
}

// checkBlocks re-hashes the given blocks on GOMAXPROCS goroutines and returns, in
// increasing order, those that cannot be read or do not match. fn, if not nil, is
// called with the number checked so far and the total. It stops once ctx is done
// and returns ctx.Err().
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
		// Under flushMu, so that a block put again after being dropped gets its held
		// record after the dropped one.
		s.flushMu.Lock()
		s.mu.Lock()
		for _, i := range rep.Corrupt {
			if s.held.Has(i) {
				s.held.Clear(i)
				s.nheld--
			}
		}
		s.mu.Unlock()
		var err error
		if !s.readOnly {
			_, err = s.log.Append(rep.Corrupt, heldlog.Dropped)
		}
		s.flushMu.Unlock()
		if err != nil {
			return rep, err
		}
	}
	rep.Held = s.HeldCount()
	rep.Missing = rep.Blocks - rep.Held
	return rep, nil
}

// SeedStore serves the original file or tree at path (the path given to ChunkPath)
// in place: read-only, every block held, nothing copied. It checks that every file of
// m exists under path with its size, and that its symbolic links and empty folders
// are there (links with their targets; ErrManifestMismatch otherwise); WithVerify also
// re-hashes every block (ErrBadBlock if one does not match), which cancelling ctx
// stops promptly (see WithCheckProgress).
func SeedStore(ctx context.Context, p string, m *Manifest, opts ...StoreOption) (*Store, error) {
	cfg, err := newConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, fmt.Errorf("chunker: seed %s: %w", p, err)
	}
	name, err := cut.RootName(abs)
	if err != nil {
		return nil, cutError("seed "+p, err)
	}
	under := func(p string) bool { return p == name || len(p) > len(name) && p[:len(name)+1] == name+"/" }
	for _, f := range m.files {
		if !under(f.Path) {
			return nil, fmt.Errorf("%w: manifest file %s is not under %s", ErrManifestMismatch, f.Path, name)
		}
	}
	for _, l := range m.links {
		if !under(l.Path) {
			return nil, fmt.Errorf("%w: manifest symbolic link %s is not under %s", ErrManifestMismatch, l.Path, name)
		}
	}
	for _, d := range m.dirs {
		if !under(d) {
			return nil, fmt.Errorf("%w: manifest folder %s is not under %s", ErrManifestMismatch, d, name)
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
	s := newStore(&place{dir: dir, root: root, top: [2]string{name, filepath.Base(real)}}, m, cfg)
	s.readOnly = true
	infos := make([]fs.FileInfo, len(m.files))
	for k, f := range m.files {
		info, err := root.Stat(s.diskPath(k))
		infos[k] = info
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%w: seed %s: %w", ErrManifestMismatch, f.Path, err)
		}
		if !info.Mode().IsRegular() || info.Size() != f.Size {
			s.Close()
			return nil, fmt.Errorf("%w: seed %s: size %d, manifest says %d", ErrManifestMismatch, f.Path, info.Size(), f.Size)
		}
	}
	if err := s.checkSeedTree(); err != nil {
		s.Close()
		return nil, err
	}
	if cfg.verify {
		if err := s.verifyAll(ctx); err != nil {
			s.Close()
			return nil, err
		}
		if n := s.held.Count(); n != m.blockCount {
			s.Close()
			return nil, fmt.Errorf("%w: seed %s: %d of %d blocks do not match the manifest", ErrBadBlock, p, m.blockCount-n, m.blockCount)
		}
	}
	s.held.SetAll(m.blockCount)
	s.nheld = m.blockCount
	s.initSources(infos)
	return s, nil
}

// checkSeedTree checks that a seed store's symbolic links and empty folders are
// on disk as the manifest says (ErrManifestMismatch otherwise).
func (s *Store) checkSeedTree() error {
	for _, l := range s.m.links {
		have, err := s.root.Readlink(s.mapPath(l.Path))
		if err != nil {
			return fmt.Errorf("%w: seed symbolic link %s: %w", ErrManifestMismatch, l.Path, err)
		}
		if filepath.ToSlash(have) != l.Target && path.Clean(filepath.ToSlash(have)) != l.Target {
			return fmt.Errorf("%w: seed symbolic link %s points to %s, manifest says %s", ErrManifestMismatch, l.Path, have, l.Target)
		}
	}
	for _, d := range s.m.dirs {
		info, err := s.root.Lstat(s.mapPath(d))
		if err != nil {
			return fmt.Errorf("%w: seed folder %s: %w", ErrManifestMismatch, d, err)
		}
		if !info.IsDir() {
			return fmt.Errorf("%w: seed folder %s is not a folder", ErrManifestMismatch, d)
		}
	}
	return nil
}
