package peer

import (
	"errors"
	"slices"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
)

// catchUp asks this peer's parent in every stripe (only: in those whose
// parent it is, if not "") to push the blocks of the stripe it lacks and
// the parent holds (ProtoAdopt, as an orphan asks to be adopted, but of
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
func (t *pushTrees) catchUp(only lpeer.ID) {
	if t.seed {
		return
	}
	t.mu.Lock()
	parents := slices.Clone(t.parents)
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
			if t.parents[s] == parent {
				t.setGrandLocked(s, grand)
			}
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
func (t *pushTrees) catchUpFailed(parent lpeer.ID, err error) {
	if t.p.ctx.Err() != nil {
		return
	}
	answered := errors.Is(err, ErrRemote) || errors.Is(err, ErrBusy) || errors.Is(err, ErrUnknownRoot)
	if answered && !t.p.guard.isBanned(parent) {
		t.mu.Lock()
		if t.parent[parent] == parentUp {
			t.behind[parent] = true
		}
		t.mu.Unlock()
		return
	}
	t.parentFailed(parent, false)
}

// orphanLocked notes that this peer found no parent for stripe s, whose
// parent failed (t.mu held): unless it holds the whole stripe, it lets its
// children in s go (their push streams are reset, so that they repair the
// stripe at once, by pulls or adoption, rather than wait for what this
// peer pulls and passes on: in the 200-peer testnet a whole subtree waited
// so, up to 2.1x T*), and pushes them nothing of s until a parent pushes
// to it again; it remembers what it gains (known), for their catch-up.
func (t *pushTrees) orphanLocked(s int) {
	if t.orphan[s] || len(t.lacks(s)) == 0 {
		return
	}
	t.orphan[s] = true
	for _, child := range t.children[s] {
		o := t.outs[child]
		if o == nil {
			o = &pushOut{wake: make(chan struct{}, 1)}
			t.outs[child] = o
		}
		kept := o.q[:0]
		for _, i := range o.q {
			if t.stripe(i) == s {
				t.unqueue(i)
			} else {
				kept = append(kept, i)
			}
		}
		o.q = kept
		// A stream it takes and that is then reset tells it, whether
		// blocks were flowing or not.
		o.cut = true
		if !t.kickLocked(child, o) {
			return
		}
	}
}

// unorphanLocked notes that stripe s has a parent again (t.mu held): what
// this peer gains of it goes to its children again, and a reset still due
// to a child's stream (orphanLocked) is not made.
func (t *pushTrees) unorphanLocked(s int) {
	if !t.orphan[s] {
		return
	}
	t.orphan[s] = false
	for _, child := range t.children[s] {
		if o := t.outs[child]; o != nil {
			o.cut = false
		}
	}
}

// A seed doubts the orphans of a stripe that ask while a root of the
// stripe still takes its pushes (early): most often a liar the root banned
// (for corrupt blocks, which ended its push stream), as honest orphans of
// a root ask once it left (its stream to the seed failed) or when it
// passes nothing on (a phantom: then they all ask at about the same time).
// A doubted orphan is adopted apart: neither counted among the seed's
// adoptees nor sent orphans. One early orphan is doubted; a second one
// corroborates the first (the root passes the stripe on to neither: it is
// cut), and both are taken as any orphan, unless the root's stream to the
// seed fails later (it left: so it was there for them, and banned them).
// In the 200-peer testnet with churn and liars (--seed 2), the seed
// adopted first, in every run, a liar its root had banned, and sent on to
// it the honest orphans that asked when that root left; in some runs two
// such liars of one root asked, and cut it, before it left.

// maxEarly bounds the early orphans a seed keeps per stripe.
const maxEarly = 4

// noteEarlyLocked notes orphan id of stripe s, which asks for the first
// time unless again, as early if a root of s still takes this seed's
// pushes, and cuts the root when it is the second such orphan (t.mu held).
func (t *pushTrees) noteEarlyLocked(s int, id lpeer.ID, again bool) {
	if !t.seed || again || t.rootGone[s] || !t.rootUpLocked(s) || slices.Contains(t.early[s], id) || len(t.early[s]) >= maxEarly {
		return
	}
	t.early[s] = append(t.early[s], id)
	if len(t.early[s]) == 2 {
		t.cutRootLocked(s)
	}
}

// doubtedLocked reports whether this seed doubts orphan id of stripe s
// (t.mu held).
func (t *pushTrees) doubtedLocked(s int, id lpeer.ID) bool {
	return slices.Contains(t.early[s], id) && (len(t.early[s]) < 2 || t.rootGone[s])
}

// rootFailedLocked notes that this seed's push stream to child failed
// after child took it (t.mu held): in the stripes child is a root of, the
// early orphans are doubted from then on.
func (t *pushTrees) rootFailedLocked(child lpeer.ID) {
	for s, roots := range t.roots {
		if slices.Contains(roots, child) && len(t.early[s]) > 0 {
			t.rootGone[s] = true
		}
	}
}

// rootUpLocked reports whether a seed's push stream to a root of stripe s
// it has not cut is up (t.mu held).
func (t *pushTrees) rootUpLocked(s int) bool {
	for _, c := range t.roots[s] {
		if o := t.outs[c]; o != nil && o.up && slices.Contains(t.children[s], c) {
			return true
		}
	}
	return false
}

// cutRootLocked stops a seed's pushes of stripe s to its planned root (t.mu
// held): two of the root's children asked to be adopted, so it left or
// lies (one liar alone cannot cut an honest root). Its blocks of the
// stripe still queued are dropped as its writer comes to them.
func (t *pushTrees) cutRootLocked(s int) {
	t.children[s] = slices.DeleteFunc(t.children[s], func(id lpeer.ID) bool {
		return !slices.Contains(t.adoptees[s], id)
	})
}

// cutComplaints is how many orphans must complain of a peer (see
// complainLocked) before the peer that sent them on to it stops pushing the
// stripe to it, if it adopted it, and adopts it no more: one liar cannot
// cut an honest adoptee, two can (it then repairs the stripe as an orphan
// whose parent is silent does, by fetching).
const cutComplaints = 2

// complainLocked notes that orphan id asked again (t.mu held): the peer it
// was sent on to (which adopted it, or was to) failed it: it left, or
// pushed corrupt blocks. No further orphan is sent on to that peer; one
// complained of by cutComplaints orphans is cut as an adoptee. In the
// 200-peer testnet with churn and liars, the seed adopted a liar first
// in a stripe whose root left, and sent the next orphans on to it and to
// a second liar in line: each of them had to ask again.
func (t *pushTrees) complainLocked(s int, id lpeer.ID) {
	fwd, ok := t.sentOn[s][id]
	if !ok {
		return
	}
	delete(t.sentOn[s], id)
	if t.complaints[s] == nil {
		t.complaints[s] = map[lpeer.ID][]lpeer.ID{}
	}
	if slices.Contains(t.complaints[s][fwd], id) {
		return
	}
	t.complaints[s][fwd] = append(t.complaints[s][fwd], id)
	if len(t.complaints[s][fwd]) == cutComplaints && slices.Contains(t.adoptees[s], fwd) {
		t.dropAdopteeStripeLocked(s, fwd)
	}
}

// forwarderLocked returns the peer a new orphan id of stripe s is sent on
// to (t.mu held): the first in line that no orphan complained of, that
// this peer does not doubt and that was sent fewer than two (the orphans
// of a stripe form a binary tree), or "" when there is none.
func (t *pushTrees) forwarderLocked(s int, id lpeer.ID) lpeer.ID {
	for _, f := range t.line[s] {
		if f != id && len(t.complaints[s][f]) == 0 && t.forwarded[s][f] < 2 && !t.doubtedLocked(s, f) {
			return f
		}
	}
	return ""
}

// sendOnLocked notes that orphan id of stripe s is sent on to fwd, and
// returns fwd (t.mu held). Whom it was sent to is kept only for an orphan
// in line (so that what is kept stays bounded): the others' complaints
// are not heard.
func (t *pushTrees) sendOnLocked(s int, id, fwd lpeer.ID, inLine bool) lpeer.ID {
	if t.sentOn[s] == nil {
		t.sentOn[s], t.forwarded[s] = map[lpeer.ID]lpeer.ID{}, map[lpeer.ID]int{}
	}
	if inLine {
		t.sentOn[s][id] = fwd
	}
	t.forwarded[s][fwd]++
	return fwd
}

// dropAdopteeLocked forgets child as an adoptee (its push stream failed
// for good; t.mu held): it is no longer pushed to, and its place goes to
// the next orphan.
func (t *pushTrees) dropAdopteeLocked(child lpeer.ID) {
	for s := range t.adoptees {
		t.dropAdopteeStripeLocked(s, child)
	}
}

// dropAdopteeStripeLocked forgets child as an adoptee in stripe s (t.mu
// held); its blocks of s still queued are dropped as its writer comes to
// them.
func (t *pushTrees) dropAdopteeStripeLocked(s int, child lpeer.ID) {
	if k := slices.Index(t.adoptees[s], child); k >= 0 {
		t.adoptees[s] = slices.Delete(t.adoptees[s], k, k+1)
		t.children[s] = slices.DeleteFunc(t.children[s], func(id lpeer.ID) bool { return id == child })
	}
}
