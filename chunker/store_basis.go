package chunker

import (
	"os"

	"github.com/reconcile-p2p/reconcile/chunker/internal/cut"
)

// A Basis is local bytes that likely resemble a run of blocks a store still
// lacks once Store.Reuse has taken what local files hold: the bytes of an
// older version that stood where the run stands, between the blocks the
// versions share on either side of it (where an edit fell). A fetch can ask
// a peer for the run as a delta against them rather than for its blocks: an
// insertion of a few bytes then costs a few bytes, not the block it fell in.
type Basis struct {
	// First and Count are the run: blocks First to First+Count-1, none held.
	First, Count int
	// Bytes is the run's length.
	Bytes int64
	// Path is the local file, and Off and Len the bytes of it.
	Path     string
	Off, Len int64
}

// MaxBasisRun bounds the runs given a basis (Basis.Bytes): longer runs are
// mostly new bytes, which a delta would carry as they are.
const MaxBasisRun = 8 << 20

// basisSlack is what a basis may hold beyond twice its run's bytes.
const basisSlack = 1 << 20

// bases returns the bases of the runs of missing blocks, where a run's
// neighbours were taken from local files: from[i] is 1 + the block of l
// that block i was taken from, 0 if none.
func (s *Store) bases(files []string, l cut.Layout, from []int32) []Basis {
	if len(l.Offs) == 0 {
		return nil
	}
	m := s.m
	// With content-defined blocks a block lies in one file: a run's
	// neighbours count only when they lie in its file.
	var fileOf []int32
	if m.ContentDefined() {
		fileOf = make([]int32, m.blockCount)
		for k := range m.files {
			first, end := m.FileBlocks(k)
			for i := first; i < end; i++ {
				fileOf[i] = int32(k)
			}
		}
	}
	sameFile := func(i, j int) bool { return fileOf == nil || fileOf[i] == fileOf[j] }
	// located returns where block i was found.
	located := func(i int) (f int, off int64, n int, ok bool) {
		if i < 0 || i >= m.blockCount || from[i] == 0 {
			return 0, 0, 0, false
		}
		f, off, n = l.Locate(int(from[i]) - 1)
		return f, off, n, true
	}
	var out []Basis
	missing := s.Missing()
	for r := 0; r < len(missing); {
		a, b := missing[r], missing[r]+1 // the run [a, b)
		for r++; r < len(missing) && missing[r] == b && sameFile(a, b); r++ {
			b++
		}
		start, _ := m.BlockSpan(a)
		endOff, endLen := m.BlockSpan(b - 1)
		run := endOff + int64(endLen) - start
		if run > MaxBasisRun {
			continue
		}
		limit := 2*run + basisSlack
		pf, poff, pn, prev := located(a - 1)
		prev = prev && sameFile(a-1, a)
		nf, noff, _, next := located(b)
		next = next && sameFile(b-1, b)
		bs := Basis{First: a, Count: b - a, Bytes: run}
		switch pend := poff + int64(pn); {
		case prev && next && pf == nf && pend <= noff && noff-pend <= limit:
			bs.Path, bs.Off, bs.Len = files[pf], pend, noff-pend
		case prev:
			fi, err := os.Stat(files[pf])
			if err != nil {
				continue
			}
			bs.Path, bs.Off, bs.Len = files[pf], pend, min(fi.Size()-pend, limit)
		case next:
			bs.Path, bs.Off = files[nf], max(0, noff-limit)
			bs.Len = noff - bs.Off
		}
		if bs.Len > 0 {
			out = append(out, bs)
		}
	}
	return out
}
