package chunker

import (
	"fmt"
	"slices"

	"github.com/reconcile-p2p/reconcile/chunker/internal/heldlog"
)

// PutBlock stores block i: it checks data against the manifest (ErrBadIndex,
// ErrBadBlock), writes it in place, fsyncs it and then records it (see WithSyncEvery).
// Putting a held block again is a no-op.
func (s *Store) PutBlock(i int, data []byte) error {
	if err := VerifyBlock(s.m, i, data); err != nil {
		return err
	}
	return s.putChecked(i, data)
}

// putChecked is PutBlock for data already checked against block i's hash
// and length (Reuse hashes every piece it cuts, and puts those whose hash is
// the block's).
func (s *Store) putChecked(i int, data []byte) error {
	s.mu.RLock()
	closed, held := s.closed, s.held.Has(i)
	s.mu.RUnlock()
	switch {
	case closed:
		return ErrClosed
	case s.readOnly:
		return ErrReadOnly
	case held:
		return nil
	}
	var files [4]int // the files block i spans; usually one
	written := files[:0]
	err := s.m.segments(i, func(g segment) error {
		f, err := s.writableFile(g.file)
		if err != nil {
			return err
		}
		written = append(written, g.file)
		s.writeMu[g.file].Lock()
		_, err = f.WriteAt(data[g.pos:g.pos+g.n], g.off)
		s.writeMu[g.file].Unlock()
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
	if s.held.Has(i) {
		s.mu.Unlock()
		return nil
	}
	s.held.Set(i)
	s.nheld++
	s.pending = append(s.pending, i)
	for _, k := range written {
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
// records of the pending blocks. If the data fsync or the record write fails, those
// blocks are no longer held.
func (s *Store) flush() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
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
			if s.held.Has(i) {
				s.held.Clear(i)
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
	if written, err := s.log.Append(pend, heldlog.Held); err != nil {
		if !written {
			return unhold(err)
		}
		return err
	}
	if s.Complete() {
		return s.finish()
	}
	return nil
}

// ReadBlock appends block i to dst[:0] and returns it, without re-hashing it (the
// block was verified when it was put). It fails with ErrBadIndex if i is out of
// range and ErrNotHeld if the block is not held. A seed store re-hashes a block
// whose source file changed since seeding, and drops it (ErrNotHeld) if it no
// longer matches (see CheckSources).
func (s *Store) ReadBlock(i int, dst []byte) ([]byte, error) {
	if i < 0 || i >= s.m.blockCount {
		return dst[:0], fmt.Errorf("%w: block %d of %d", ErrBadIndex, i, s.m.blockCount)
	}
	if err := s.readable(i); err != nil {
		return dst[:0], err
	}
	if s.view != nil {
		return s.readView(i, dst)
	}
	data, err := s.readAt(i, dst)
	if err == nil && s.src != nil {
		data, err = s.checkRead(i, data)
	}
	if err != nil {
		return dst[:0], err
	}
	return data, nil
}

// readable returns nil when block i (in range) may be read: the store is
// open and holds it.
func (s *Store) readable(i int) error {
	s.mu.RLock()
	closed, held := s.closed, s.held.Has(i)
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if !held {
		return fmt.Errorf("%w: block %d", ErrNotHeld, i)
	}
	return nil
}

// readAt reads block i from the files into dst[:0].
func (s *Store) readAt(i int, dst []byte) ([]byte, error) {
	n := s.m.BlockLen(i)
	dst = slices.Grow(dst[:0], n)[:n]
	if err := s.readRange(i, 0, dst); err != nil {
		return dst[:0], err
	}
	return dst, nil
}

// readRange reads the bytes of block i from offset off into dst (within
// the block) from the files.
func (s *Store) readRange(i, off int, dst []byte) error {
	end := off + len(dst)
	return s.m.segments(i, func(g segment) error {
		a, b := max(g.pos, off), min(g.pos+g.n, end)
		if a >= b {
			return nil
		}
		f, err := s.file(g.file)
		if err != nil {
			return err
		}
		_, err = f.ReadAt(dst[a-off:b-off], g.off+int64(a-g.pos))
		s.release(g.file)
		if err != nil {
			return fmt.Errorf("chunker: read block %d: %w", i, err)
		}
		return nil
	})
}

// Sync makes every block put so far durable (records included).
func (s *Store) Sync() error {
	if s.isClosed() {
		return ErrClosed
	}
	if s.readOnly {
		return nil
	}
	return s.flush()
}

// Pieces reports whether ReadPiece reads this store's blocks: it does for a
// store whose reads need no check against its source files (not a seed's
// store of files in place, nor a view).
func (s *Store) Pieces() bool { return s.src == nil && s.view == nil }

// ReadPiece reads the bytes of held block i from offset off into dst
// (len(dst) bytes, within the block), for a store that Pieces: a push
// writer sends a block so, a piece at a time, without holding it whole.
// A seed's store, or a view, is read whole (ReadBlock): ErrNoPieces.
func (s *Store) ReadPiece(i, off int, dst []byte) error {
	if i < 0 || i >= s.m.blockCount {
		return fmt.Errorf("%w: block %d of %d", ErrBadIndex, i, s.m.blockCount)
	}
	if off < 0 || off+len(dst) > s.m.BlockLen(i) {
		return fmt.Errorf("%w: bytes %d to %d of block %d (%d bytes)", ErrBadIndex, off, off+len(dst), i, s.m.BlockLen(i))
	}
	if !s.Pieces() {
		return ErrNoPieces
	}
	if err := s.readable(i); err != nil {
		return err
	}
	return s.readRange(i, off, dst)
}
