package swarm

import (
	"errors"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// catchUp asks this peer's parent in every stripe (only: in those whose
// parent it is, if not "") to push the blocks of the stripe it lacks and
// the parent holds (wire.ProtoAdopt, as an orphan asks to be adopted, but of
// its own parent), as its fetch starts (or as Push is called on a running
// fetch), and of a parent whose pushes come again after it left: a
// parent pushes what it gains, so a peer that takes its place in trees
// already under way (it joined late, or came back), or whose parent came
// back, would otherwise never be pushed what its parent held before, and
// would wait for those blocks until another peer had offered them for
// four repair times (seeFromLocked): a stripe stays held while its parent
// pushes its other gains. Peers that start with the trees are asked for
// nothing they have not queued. One request names at most the default
// MaxWant blocks of a stripe (the first it lacks); the others come by the
// repair. Answers are not waited for; a parent
// that refuses (it does not get the stripe, or has no place for this peer
// yet) leaves the stripe to its pushes and the repair.
func (t *Trees) catchUp(only lpeer.ID) {
	if t.tree.Seed() {
		return
	}
	t.mu.Lock()
	parents := t.tree.Parents()
	t.mu.Unlock()
	for s, parent := range parents {
		if parent == "" || only != "" && parent != only {
			continue
		}
		lacks := t.lacks(s)
		if len(lacks) == 0 {
			continue
		}
		if !t.p.goroutine(func() {
			_, elsewhere, grand, err := t.askAdopt(parent, lacks)
			if err != nil {
				t.p.log.Debug("catch-up refused", "stripe", s, "parent", parent, "err", err)
				t.catchUpFailed(parent, err)
				return
			}
			t.fetchElsewhere(elsewhere)
			t.mu.Lock()
			t.tree.SetGrand(s, parent, grand)
			t.mu.Unlock()
		}) {
			return
		}
	}
}

// catchUpFailed notes that parent did not take a catch-up request (err).
// One that answered it with a refusal is asked again when its pushes come
// (behind). One that could not be reached (it left before this peer joined
// or came back, or has not come back yet) is taken as gone, as a parent
// whose stream failed (parentFailed): its stripes are not held for its
// pushes, this peer asks to be adopted where it has children, and it is
// asked again once it pushes. Without this, a late joiner whose parent had
// left waited for the blocks that parent held before for lateAfter repair
// times, though every peer around offered them (the 200-peer testnet's
// slowest peers that never left, at 2.1x T*).
func (t *Trees) catchUpFailed(parent lpeer.ID, err error) {
	if t.p.ctx.Err() != nil {
		return
	}
	answered := errors.Is(err, wire.ErrRemote) || errors.Is(err, wire.ErrBusy) || errors.Is(err, wire.ErrUnknownRoot)
	if answered && !t.p.guard.IsBanned(parent) {
		t.mu.Lock()
		t.tree.CatchUpRefused(parent)
		t.mu.Unlock()
		return
	}
	t.ParentFailed(parent, false)
}

// orphanLocked notes that this peer found no parent for stripe s, whose
// parent failed (t.mu held): unless it holds the whole stripe, it lets its
// children in s go (stripes.Tree.Orphan): their blocks of s queued are
// dropped, and their push streams reset, so that they repair the stripe at
// once.
func (t *Trees) orphanLocked(s int) {
	if t.tree.Orphaned(s) || len(t.lacks(s)) == 0 {
		return
	}
	for _, child := range t.tree.Orphan(s) {
		o := t.outs[child]
		if o == nil {
			o = &pushOut{wake: make(chan struct{}, 1)}
			t.outs[child] = o
		}
		kept := o.q[:0]
		for _, i := range o.q {
			if t.stripe(i) == s {
				t.tree.Dequeue(i)
			} else {
				kept = append(kept, i)
			}
		}
		o.q = kept
		// A stream it takes and that is then reset tells it, whether
		// blocks were flowing or not.
		if !t.kickLocked(child, o) {
			return
		}
	}
}
