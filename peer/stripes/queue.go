package stripes

import (
	"slices"
	"time"
)

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

// Moved notes that child's push queue moved at now: the child was placed,
// took its push stream, or was written a block (see FirstCopies).
func (t *Tree[K]) Moved(child K, now time.Time) {
	if slices.ContainsFunc(t.children, func(c []K) bool { return slices.Contains(c, child) }) {
		t.moved[child] = now
	}
}

// FirstCopies reports whether this peer is a seed whose uplink goes to
// the first copies of the blocks, down the trees, at now: a request for
// blocks idx is then answered busy (other peers repair the trees). It
// does while one of idx is still queued for a child that is there (its
// stream is up, or it is a root the seed placed as it joined, AddChild:
// its stream may take a round trip to be up, and the requests the seed
// answered meanwhile, a super-seed's offers, held its uplink for
// seconds). And it does for any idx while any block is queued for a
// child whose queue moved (Moved) within the repair time: the blocks
// pushed already are at the roots and below them. Answering busy only the
// requests for blocks still queued let the first copies share the uplink
// with pulls of blocks pushed already: in the testnet's 60 peers of 4 MiB
// the seed then served 1.11 to 1.27 copies of the file, and the last first
// copy left it at 1.09 to 1.40 T* (1.02 copies, 1.06 to 1.14 T* since). A
// child whose stream stalls holds only its own blocks, as before.
func (t *Tree[K]) FirstCopies(idx []int, now time.Time) bool {
	if !t.seed || len(t.pending) == 0 {
		return false // every first copy is out: the common case
	}
	there := func(c K) bool { return t.up[c] || t.placed[c] }
	moving := func(c K) bool {
		at, ok := t.moved[c]
		return ok && there(c) && now.Sub(at) < t.repair
	}
	for _, i := range idx {
		if t.pending[i] > 0 && slices.ContainsFunc(t.children[t.Stripe(i)], there) {
			return true
		}
	}
	for i := range t.pending { // each entry counts at least one child
		if slices.ContainsFunc(t.children[t.Stripe(i)], moving) {
			return true
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
