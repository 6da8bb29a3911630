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
// (taken before Store.mu; Store.checkMu, before both, serializes CheckSources).
type sourceState struct {
	stamps  []stamp // of every file, when last checked
	changed []bool  // files seen changed since seeding: their blocks are re-hashed when read
	dropped []int   // blocks ReadBlock dropped since the last CheckSources
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
	st := &sourceState{stamps: make([]stamp, len(infos)), changed: make([]bool, len(infos))}
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
// the blocks ReadBlock dropped. For a store that is not a seed store it does
// nothing. Cancelling ctx stops it (returning ctx.Err(), nothing changed).
func (s *Store) CheckSources(ctx context.Context) (SourceChange, error) {
	var ch SourceChange
	if s.src == nil {
		return ch, nil
	}
	if s.isClosed() {
		return ch, ErrClosed
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
	slices.Sort(blocks)
	blocks = slices.Compact(blocks)
	bad, err := s.checkBlocks(ctx, blocks, nil)
	if err != nil {
		return ch, fmt.Errorf("chunker: check the sources: %w", err)
	}
	if s.isClosed() {
		return ch, ErrClosed // closed meanwhile: the reads failed for that
	}
	s.srcMu.Lock()
	defer s.srcMu.Unlock()
	for j, k := range files {
		s.src.stamps[k] = stamps[j]
		s.src.changed[k] = true
		ch.Files = append(ch.Files, s.m.files[k].Path)
	}
	isBad := make(map[int]bool, len(bad))
	for _, i := range bad {
		isBad[i] = true
	}
	s.mu.Lock()
	for _, i := range blocks {
		switch held := s.held.has(i); {
		case isBad[i] && held:
			s.held.clear(i)
			s.nheld--
			ch.Dropped = append(ch.Dropped, i)
		case !isBad[i] && !held:
			s.held.set(i)
			s.nheld++
			ch.Restored = append(ch.Restored, i)
		}
	}
	s.mu.Unlock()
	// Blocks ReadBlock dropped and this check did not find matching again.
	for _, i := range s.src.dropped {
		if _, found := slices.BinarySearch(ch.Restored, i); !found {
			ch.Dropped = append(ch.Dropped, i)
		} else {
			ch.Restored = slices.DeleteFunc(ch.Restored, func(j int) bool { return j == i }) // dropped and back: no change
		}
	}
	s.src.dropped = nil
	slices.Sort(ch.Dropped)
	ch.Dropped = slices.Compact(ch.Dropped)
	return ch, nil
}

// checkRead checks block i of a seed store, just read into data: if a file it
// lies in changed since seeding (its stamp now differs, or a check saw it
// change), the block is re-hashed, and dropped if it no longer matches (ErrNotHeld).
// The stamps are taken after the read, so bytes read before a change are seen
// as such.
func (s *Store) checkRead(i int, data []byte) error {
	changed := false
	s.m.segments(i, func(g segment) error {
		now := s.statSource(g.file)
		s.srcMu.Lock()
		if s.src.changed[g.file] || now != s.src.stamps[g.file] {
			changed = true
			s.src.changed[g.file] = true
		}
		s.srcMu.Unlock()
		return nil
	})
	if !changed || VerifyBlock(s.m, i, data) == nil {
		return nil
	}
	s.srcMu.Lock()
	s.src.dropped = append(s.src.dropped, i)
	s.srcMu.Unlock()
	s.mu.Lock()
	if s.held.has(i) {
		s.held.clear(i)
		s.nheld--
	}
	s.mu.Unlock()
	return fmt.Errorf("%w: block %d: its source file changed", ErrNotHeld, i)
}
