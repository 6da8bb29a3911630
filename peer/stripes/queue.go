package stripes

import "time"

// Backlog is how many blocks may wait for one child, for a repair time on
// end, before a parent sheds the oldest that other peers hold (see Batch;
// a burst that drains sooner, as on loopback, is pushed whole). A parent
// passes each block of its stripe on to all its children (16 or 17 in the
// 200-peer testnet, which takes all its uplink at the seed's pace); one
// adopted late, and pushed the rest of its stripe at once, passed it on up
// to 0.7x T* after it got it, while its children's neighbours, their
// uplinks two thirds idle, had offered the same blocks long before.
const Backlog = 16

// Gained notes that this peer gained block i and passes it on (known from
// then on), and returns the children to queue it for: none while the
// stripe is orphaned (its children repair it, see Orphan).
func (t *Tree[K]) Gained(i int) []K {
	t.known.set(i)
	s := t.Stripe(i)
	if t.orphan[s] {
		return nil
	}
	return t.children[s]
}

// Know notes block i as known without passing it on: held when the Tree
// began, so that an asking child is pushed it (Catch).
func (t *Tree[K]) Know(i int) { t.known.set(i) }

// Queue notes that blocks idx were queued for a child, each once.
func (t *Tree[K]) Queue(idx ...int) {
	for _, i := range idx {
		t.pending[i]++
	}
}

// Dequeue notes that blocks idx were written, or dropped, from a child's
// queue.
func (t *Tree[K]) Dequeue(idx ...int) {
	for _, i := range idx {
		if t.pending[i]--; t.pending[i] <= 0 {
			delete(t.pending, i)
		}
	}
}

// Pending returns how many children block i is queued for and not yet
// written to.
func (t *Tree[K]) Pending(i int) int { return t.pending[i] }

// FirstCopies reports whether this peer is a seed and a block is still
// queued for a child whose stream is up: the seed's uplink goes to the
// first copies of the blocks, down the trees, and every request is
// answered busy meanwhile (the roots and their subtrees hold the blocks
// pushed already, and other peers repair the trees). Answering busy only
// the requests for blocks still queued let the first copies share the
// uplink with pulls of blocks pushed already: in the testnet's 60 peers
// of 4 MiB the seed then served 1.11 to 1.27 copies of the file, and the
// last first copy left it at 1.09 to 1.40 T* (1.02 copies, 1.06 to 1.14
// T* since). A block queued for a child that is not there (it left, or
// has not joined yet) holds nothing, but for a root the seed placed as it
// joined (AddChild), which is there: its stream may take a round trip to
// be up, and the requests the seed answered meanwhile (a super-seed's
// offers) held its uplink for seconds.
func (t *Tree[K]) FirstCopies() bool {
	if !t.seed {
		return false
	}
	for i, n := range t.pending {
		if n == 0 {
			continue
		}
		for _, c := range t.children[t.Stripe(i)] {
			if t.up[c] || t.placed[c] {
				return true
			}
		}
	}
	return false
}

// Batch splits q, the blocks taken from child's queue at now to write on
// its stream (taken: the child took it), into those to push and those
// the child is to fetch from its own sources (shed, dequeued, see Shed):
// once more than Backlog blocks have waited for it for a repair time.
// Batch may reorder q's backing array.
func (t *Tree[K]) Batch(child K, q []int, taken bool, now time.Time) (push, shed []int) {
	since, ok := t.backlog[child]
	switch {
	case !taken || len(q) <= Backlog:
		delete(t.backlog, child)
	case !ok:
		t.backlog[child] = now
	case now.Sub(since) >= t.repair:
		return t.Shed(q)
	}
	return q, nil
}

// Shed splits q, the blocks queued for a child in order, into those to
// push (kept, in q's backing array) and those the child is to fetch from
// its own sources (shed, dequeued): of all but the last Backlog, those
// that other peers hold (Place.Spare).
func (t *Tree[K]) Shed(q []int) (kept, shed []int) {
	old := len(q) - Backlog
	kept = q[:0]
	for k, i := range q {
		if k < old && t.spared(i) {
			shed = append(shed, i)
			t.Dequeue(i)
			continue
		}
		kept = append(kept, i)
	}
	return kept, shed
}
