package chunker

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"time"
)

// A seed store (SeedStore) reads the original files in place, which their owner
// may change while they are served. It remembers each file's size and
// modification time (a stamp); CheckSources compares them with the files on disk
// and re-hashes the blocks of the files that changed, and ReadBlock re-hashes a
// block whose file changed before it returns it, so that a changed block is never
// served: it is dropped from the held set instead.

// stamp is what a seed store knows of a source file to notice a change.
type stamp struct {
	size  int64
	mtime time.Time
	err   bool // the file could not be stat'ed
}

// sourceState is the change tracking of a seed store, guarded by Store.srcMu
// (taken before Store.mu; Store.checkMu, before both, serializes rechecks).
type sourceState struct {
	stamps  []stamp // of every file, when last checked
	changed []bool  // files seen changed since seeding: their blocks are re-hashed when read
	// What changed since the last CheckSources: files, and blocks dropped or
	// held again (a block dropped and held again is in neither).
	files    []string
	dropped  map[int]struct{}
	restored map[int]struct{}
}

// noteFile records that file k changed, for the next CheckSources.
func (st *sourceState) noteFile(name string) {
	if !slices.Contains(st.files, name) {
		st.files = append(st.files, name)
	}
}

// noteHeld records that block i was dropped (held false) or held again, for
// the next CheckSources.
func (st *sourceState) noteHeld(i int, held bool) {
	from, to := st.dropped, st.restored
	if !held {
		from, to = st.restored, st.dropped
	}
	if _, ok := from[i]; ok {
		delete(from, i)
	} else {
		to[i] = struct{}{}
	}
}

// SourceChange is what Store.CheckSources found since its last call.
type SourceChange struct {
	// Files are the manifest paths of the source files whose size or
	// modification time changed (or that went missing).
	Files []string
	// Dropped are the blocks no longer held because their bytes no longer match
	// the manifest, in increasing order (also those ReadBlock dropped).
	Dropped []int
	// Restored are the blocks held again because their bytes match again.
	Restored []int
}

// Changed reports whether anything changed.
func (c SourceChange) Changed() bool {
	return len(c.Files) > 0 || len(c.Dropped) > 0 || len(c.Restored) > 0
}

// statSource returns the stamp of file k as it is on disk now.
func (s *Store) statSource(k int) stamp {
	info, err := s.root.Stat(s.diskPath(k))
	if err != nil || !info.Mode().IsRegular() {
		return stamp{err: true}
	}
	return stamp{size: info.Size(), mtime: info.ModTime()}
}

// initSources records the stamps of a new seed store's files.
func (s *Store) initSources(infos []fs.FileInfo) {
	st := &sourceState{stamps: make([]stamp, len(infos)), changed: make([]bool, len(infos)),
		dropped: make(map[int]struct{}), restored: make(map[int]struct{})}
	for k, info := range infos {
		st.stamps[k] = stamp{size: info.Size(), mtime: info.ModTime()}
	}
	s.src = st
}

// CheckSources looks for changes of a seed store's source files: a file whose
// size or modification time differs from the last check has the blocks it holds
// part of re-hashed, and those that no longer match the manifest are no longer
// held (Has, Held and ReadBlock treat them as missing) while those that match
// again are held again. It returns what changed since its last call, including
// what ReadBlock found (it re-hashes too, see ReadBlock). For a store that is
// not a seed store it does nothing. Cancelling ctx stops it (returning
// ctx.Err(); what it found so far is kept for the next call).
func (s *Store) CheckSources(ctx context.Context) (SourceChange, error) {
	var ch SourceChange
	if s.src == nil {
		return ch, nil
	}
	if err := s.recheck(ctx); err != nil {
		return ch, err
	}
	s.srcMu.Lock()
	defer s.srcMu.Unlock()
	st := s.src
	ch.Files, st.files = st.files, nil
	for i := range st.dropped {
		ch.Dropped = append(ch.Dropped, i)
	}
	for i := range st.restored {
		ch.Restored = append(ch.Restored, i)
	}
	clear(st.dropped)
	clear(st.restored)
	slices.Sort(ch.Dropped)
	slices.Sort(ch.Restored)
	return ch, nil
}

// recheck re-hashes the blocks of the source files whose stamp changed and
// sets the held set to those that match, recording the changes.
func (s *Store) recheck(ctx context.Context) error {
	if s.isClosed() {
		return ErrClosed
	}
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	var blocks []int
	var stamps []stamp
	var files []int
	for k := range s.m.files {
		now := s.statSource(k)
		s.srcMu.Lock()
		same := now == s.src.stamps[k]
		s.srcMu.Unlock()
		if same {
			continue
		}
		files = append(files, k)
		stamps = append(stamps, now)
		s.fileBlocks(k, func(i int) { blocks = append(blocks, i) })
	}
	if len(files) == 0 {
		return nil
	}
	slices.Sort(blocks)
	blocks = slices.Compact(blocks)
	bad, err := s.checkBlocks(ctx, blocks, nil)
	if err != nil {
		return fmt.Errorf("chunker: check the sources: %w", err)
	}
	if s.isClosed() {
		return ErrClosed // closed meanwhile: the reads failed for that
	}
	s.srcMu.Lock()
	defer s.srcMu.Unlock()
	for j, k := range files {
		s.src.stamps[k] = stamps[j]
		s.src.changed[k] = true
		s.src.noteFile(s.m.files[k].Path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range blocks {
		_, isBad := slices.BinarySearch(bad, i)
		switch held := s.held.Has(i); {
		case isBad && held:
			s.held.Clear(i)
			s.nheld--
			s.src.noteHeld(i, false)
		case !isBad && !held:
			s.held.Set(i)
			s.nheld++
			s.src.noteHeld(i, true)
		}
	}
	return nil
}

// checkRead checks block i of a seed store, just read into data. The stamps of
// its files are taken after the read: if one differs from the last check, the
// changed files are re-hashed first (recheck, so that the blocks that changed
// with this one are dropped at once, before they are asked for); if a file of
// the block changed since seeding, the block is re-hashed, read again if it no
// longer matches (it may have changed back since the read) and, if it still
// does not match, dropped (ErrNotHeld). It returns the block's bytes.
func (s *Store) checkRead(i int, data []byte) ([]byte, error) {
	changed, stale := false, false
	s.m.segments(i, func(g segment) error {
		now := s.statSource(g.file)
		s.srcMu.Lock()
		stale = stale || now != s.src.stamps[g.file]
		changed = changed || stale || s.src.changed[g.file]
		s.srcMu.Unlock()
		return nil
	})
	if !changed {
		return data, nil
	}
	if stale {
		if err := s.recheck(context.Background()); err != nil {
			return data[:0], err
		}
	}
	err := VerifyBlock(s.m, i, data)
	if err != nil && s.Has(i) {
		if data, err = s.readAt(i, data); err == nil {
			err = VerifyBlock(s.m, i, data)
		}
	}
	if err == nil {
		return data, nil
	}
	s.srcMu.Lock()
	s.mu.Lock()
	if s.held.Has(i) {
		s.held.Clear(i)
		s.nheld--
		s.src.noteHeld(i, false)
	}
	s.mu.Unlock()
	s.srcMu.Unlock()
	return data[:0], fmt.Errorf("%w: block %d: its source file changed", ErrNotHeld, i)
}
