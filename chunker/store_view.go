package chunker

import (
	"fmt"

	"github.com/reconcile-p2p/reconcile/chunker/internal/heldlog"
)

// A view is a read-only store of one manifest whose blocks are read from other
// stores that hold the same bytes under their own manifests (NewView): a peer
// that holds version 1 of a content serves, under version 2's indices, the
// blocks the two share, without writing a byte.

// viewRef is where a view reads one of its blocks: block j of store src.
type viewRef struct {
	src *Store
	j   int32
}

// NewView returns a read-only store of m holding the blocks of m whose hash
// and length a block held by one of from has (the first such store wins),
// read from there. The held set is taken when the view is made: blocks the
// stores gain later are not in it, and a block a store drops later fails to
// read with ErrNotHeld. Closing the view leaves the stores open; a view must
// be closed before them. The work is one pass over m's blocks and the held
// blocks of from, with memory for m's hashes. Views of views are refused.
func NewView(m *Manifest, from ...*Store) (*Store, error) {
	want := make(map[[HashSize]byte][]int32, m.blockCount)
	for i := range m.blockCount {
		h := m.BlockHash(i)
		want[h] = append(want[h], int32(i))
	}
	s := &Store{m: m, readOnly: true, held: heldlog.NewBitset(m.blockCount), view: make([]viewRef, m.blockCount)}
	for _, src := range from {
		if src.view != nil {
			return nil, fmt.Errorf("chunker: a view of view %s", src.m.id)
		}
		for _, j := range src.Held() {
			for _, i := range want[src.m.BlockHash(j)] {
				if !s.held.Has(int(i)) && src.m.BlockLen(j) == m.BlockLen(int(i)) {
					s.held.Set(int(i))
					s.view[i] = viewRef{src, int32(j)}
					s.nheld++
				}
			}
		}
	}
	return s, nil
}

// IsView reports whether the store is a view (NewView).
func (s *Store) IsView() bool { return s.view != nil }

// readView reads block i of a view from the store that holds it.
func (s *Store) readView(i int, dst []byte) ([]byte, error) {
	r := s.view[i]
	return r.src.ReadBlock(int(r.j), dst)
}
