package chunker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// The output-file cache: a store opens its output files lazily and keeps at most
// about maxOpenFiles of them open (a tree may hold more files than the process may
// open). Its fields are in Store, guarded by mu; refs are atomic so that a cache hit
// needs mu only for reading.

// maxOpenFiles bounds the output files a store keeps open; unused ones beyond it are
// closed.
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
func (s *Store) release(k int) { s.refs[k].Add(-1) }

func (s *Store) openFile(k int, write bool) (*os.File, error) {
	s.mu.RLock()
	if s.closed { // Close closes the files after setting closed: open no new one
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	if f := s.files[k]; f != nil && (!write || !s.rdonly[k]) {
		s.refs[k].Add(1) // under mu.RLock: no eviction can run meanwhile
		s.mu.RUnlock()
		return f, nil
	}
	s.mu.RUnlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if f := s.files[k]; f != nil {
		if !write || !s.rdonly[k] {
			s.refs[k].Add(1)
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
		if !write && s.nheld == s.m.blockCount {
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
	s.refs[k].Add(1)
	s.nopen++
	if s.nopen > s.maxOpen {
		s.evict(k)
	}
	return f, nil
}

// evict closes unused handles, other than file keep, until at most 3/4 of
// maxOpen are open. Data written through a closed handle stays in the page
// cache, and fsync through a new handle makes it durable. Called with mu held.
func (s *Store) evict(keep int) {
	n := len(s.files)
	for j := 0; j < n && s.nopen > s.maxOpen*3/4; j++ {
		k := (s.evictAt + j) % n
		if f := s.files[k]; f != nil && k != keep && s.refs[k].Load() == 0 {
			f.Close()
			s.files[k], s.rdonly[k] = nil, false
			s.nopen--
		}
	}
	s.evictAt = (s.evictAt + n/4 + 1) % n
}

// forgetFile closes the cached handle of file k, if any (its file was recreated).
func (s *Store) forgetFile(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.files[k]; f != nil {
		f.Close()
		s.files[k], s.rdonly[k] = nil, false
		s.nopen--
	}
}

// closeFiles closes every cached handle.
func (s *Store) closeFiles() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, f := range s.files {
		if f != nil {
			f.Close()
			s.files[k] = nil
		}
	}
	s.nopen = 0
}

// diskPath returns the path of file k under the store's root.
func (s *Store) diskPath(k int) string { return s.place.diskPath(s.m, k) }

// mapPath returns the path under the store's root of manifest path name.
func (s *Store) mapPath(name string) string { return s.place.mapPath(name) }
