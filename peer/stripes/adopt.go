package stripes

import (
	"errors"
	"slices"
)

// Adoption repairs a stripe tree whose inner node left or lies, after
// SplitStream: the node's children that have children of their own in
// that stripe ask their grandparent to adopt them, naming the stripe's
// blocks they lack. A peer that gets the stripe (its parent's pushes
// come, or it holds the whole content: the seed) adopts the first AdoptCap
// orphans of a stripe (a seed SeedAdoptCap): it pushes them the blocks
// they lack that it holds (see Catch), and then every block of the stripe
// it gains, as to its own children. It sends each further orphan on to one
// that asked it before, two to each in the order they asked, which adopt
// them in turn: the orphans of a stripe form a binary tree, each pushing
// to at most two more children than planned, instead of all of them
// loading their grandparent (for a root's children, the seed, whose uplink
// is the swarm's scarcest) or forming a long chain. Leaves repair by
// fetching, as before.
//
// An adopter is taken as the stripe's parent from then on: pushes of the
// stripe from the planned parent, if it comes back, are dropped (NotNow).
// Its answer names its own parent in the stripe, the orphan's grandparent
// from then on (SetGrand), asked to adopt it if the adopter fails too. A
// hostile adopter is refused as a parent is (a corrupt push), and its
// orphan asks its grandparent again, which then adopts it itself (up to
// AdoptMax). That orphan's second ask is a complaint of the peer it was
// sent on to: no further orphan is sent on to that peer, and one that
// CutComplaints orphans complained of is no longer pushed the stripe by
// the peer that adopted it, nor adopted by it again (a liar the seed
// adopted first, as happened in the testnet, would otherwise hold its
// place, and be sent orphans, until its stream failed). A seed asked by a
// second orphan of a stripe stops pushing that stripe to its root, which
// left or lies (a phantom takes every push and passes on none): its
// uplink goes to the adoptees instead. One liar cannot cut an honest
// root; two among its children can (the root then fetches its stripe,
// and its children take it from the root). A seed doubts an orphan that
// asks while its root still takes the seed's pushes (most often a liar
// the root banned): it adopts it apart and sends no orphan on to it,
// unless a second such orphan corroborates it and the root's stream does
// not fail later (see noteEarly).
//
// Measured in the 200-peer testnet with churn 0.1 and liars 0.1 (16 MiB,
// 16 trees of 16 KiB blocks): completion over T* went from 2.58x (median)
// before adoption to 1.74x and 1.84x on two seeds.

// AdoptCap is how many orphans of one stripe a peer adopts as they first
// ask (the others it sends on, so that they form a binary tree under
// those); AdoptMax how many in all, counting those that ask again (the
// peer it adopted them into, or sent them on to, failed them: a tree that
// a liar or a leaver broke is mended at the peer that formed it). A seed,
// whose uplink is the swarm's scarcest, adopts SeedAdoptCap as they first
// ask. (In a version that chained the orphans one after another, a seed
// that adopted at most two in all sent the stripes of two roots that left
// or lied by pulls, 4 copies of each, in the 200-peer testnet with churn
// and liars: 2.45x T* against 2.07x with four.)
const (
	AdoptCap     = 2
	AdoptMax     = 4
	SeedAdoptCap = 1
)

// AdoptHops bounds how many peers one orphan asks in turn (each answer
// that sends it on is a hop).
const AdoptHops = 4

// MaxLine bounds the orphans a Tree keeps in line per stripe, and so
// those it remembers sending on: the orphans beyond are sent on (their
// complaints unheard) or refused.
const MaxLine = 1024

// CutComplaints is how many orphans must complain of a peer (see
// complain) before the peer that sent them on to it stops pushing the
// stripe to it, if it adopted it, and adopts it no more: one liar cannot
// cut an honest adoptee, two can (it then repairs the stripe as an orphan
// whose parent is silent does, by fetching).
const CutComplaints = 2

// maxEarly bounds the early orphans a seed keeps per stripe.
const maxEarly = 4

// Adoptee's refusals.
var (
	// ErrNoStripe refuses an adoption in a stripe the peer does not get.
	ErrNoStripe = errors.New("does not get that stripe")
	// ErrOwnParent refuses to adopt the stripe's own parent.
	ErrOwnParent = errors.New("asked to adopt its own parent")
	// ErrFailedOrphans refuses a peer that CutComplaints orphans sent on to
	// it complained of.
	ErrFailedOrphans = errors.New("failed the orphans it was given")
	// ErrAdoptedMost refuses an orphan that asks again once the peer
	// adopted AdoptMax and has no adoptee to send it on to.
	ErrAdoptedMost = errors.New("adopts no more orphans of the stripe")
	// ErrNoForwarder refuses an orphan the peer has no peer to send on to.
	ErrNoForwarder = errors.New("has no peer to send the orphan on to")
)

// Adoptee answers id's ask to be adopted in stripe s (or, from a child,
// to be caught up): adopted, as a new child, when it is; sent on to next
// (not zero) when it is to ask that peer instead; or refused (err). A
// peer gets the stripe while its parent's pushes come, or once it holds
// the whole content (complete: it pushes every block it is asked). The
// blocks to push to id are then Catch's.
func (t *Tree[K]) Adoptee(id K, s int, complete bool) (next K, adopted bool, err error) {
	var none K
	if !t.seed && t.parent[t.parents[s]] != ParentUp && !complete {
		return none, false, ErrNoStripe
	}
	if id == t.parents[s] {
		return none, false, ErrOwnParent
	}
	// It asks again when it asked before: every first ask is in line.
	again := slices.Contains(t.line[s], id)
	if again {
		t.complain(s, id)
	}
	if len(t.complaints[s][id]) >= CutComplaints {
		return none, false, ErrFailedOrphans
	}
	if slices.Contains(t.children[s], id) {
		return none, false, nil // a child catching up
	}
	direct := AdoptCap
	if t.seed {
		direct = SeedAdoptCap
	}
	t.noteEarly(s, id, again)
	doubted := t.doubted(s, id)
	n := 0 // its adoptees, but for those it doubts (adopted apart)
	for _, a := range t.adoptees[s] {
		if !t.doubted(s, a) {
			n++
		}
	}
	switch {
	case doubted:
	case again && n >= AdoptMax:
		// Asks again, but this peer adopted its most: sent to its first
		// adoptee that no orphan complained of (nor doubted).
		for _, a := range t.adoptees[s] {
			if a != id && len(t.complaints[s][a]) == 0 && !t.doubted(s, a) {
				return t.sendOn(s, id, a, true), false, nil
			}
		}
		return none, false, ErrAdoptedMost
	case !again && n >= direct:
		if t.seed {
			// A second orphan of the stripe (not counting those it
			// doubts): its root failed them both (left, or lies); the
			// seed's uplink no longer goes to it.
			t.cutRoot(s)
		}
		// Sent on: the orphans that asked first adopt two each, in the
		// order they asked (a binary tree under this peer's), but for
		// those another orphan complained of.
		fwd := t.forwarder(s, id)
		if fwd == none {
			return none, false, ErrNoForwarder
		}
		inLine := len(t.line[s]) < MaxLine
		if inLine {
			t.line[s] = append(t.line[s], id)
		}
		return t.sendOn(s, id, fwd, inLine), false, nil
	}
	t.children[s] = append(t.children[s], id)
	t.adoptees[s] = append(t.adoptees[s], id)
	if !again && len(t.line[s]) < MaxLine {
		t.line[s] = append(t.line[s], id)
	}
	return none, true, nil
}

// Catch returns, of the blocks lacks that a child or adoptee asks for
// (adopted: an orphan just adopted), those to push to it (push) and those
// it is to fetch from its own sources (elsewhere). It is pushed those
// known (passed on to the children, see Gained), but for those skip
// reports (queued for it, or sent on its current stream: a child caught
// up at its start is pushed most of them as this peer gains them); a seed
// leaves to other peers those that Spare reports held by enough of them
// (its uplink, the swarm's scarcest, goes to the blocks no peer holds
// yet). One not known comes when this peer gains it, unless it is not
// held (has) and other peers hold it: a child catching up then fetches it
// rather than wait (a parent that came back after leaving had its own
// stripe still to pull: in the 200-peer testnet with churn, its child got
// the stripe's last blocks from it at up to 1.95x T*, long after every
// other peer held them). An orphan just adopted is not told so, and waits
// for its pushes: when adopters did the same, a whole subtree of new
// orphans pulled those blocks at once, and the stripe reached its peers
// 0.2x T* later in one run.
func (t *Tree[K]) Catch(lacks []int, adopted bool, has, skip func(i int) bool) (push, elsewhere []int) {
	for _, i := range lacks {
		if !t.known.has(i) {
			// Not passed on yet: unless it is stored (about to be), it
			// comes when this peer gains it.
			if !adopted && !has(i) && t.spared(i) {
				elsewhere = append(elsewhere, i)
			}
			continue
		}
		if skip(i) {
			continue
		}
		if t.seed && t.spared(i) {
			elsewhere = append(elsewhere, i)
			continue
		}
		push = append(push, i)
	}
	return push, elsewhere
}

// spared reports whether other peers hold block i (Place.Spare).
func (t *Tree[K]) spared(i int) bool { return t.spare != nil && t.spare(i) }

// Kept returns how many orphans of stripe s the Tree keeps in line, how
// many it remembers sending on, and to how many peers it sent them: each
// at most MaxLine, however many orphans ask.
func (t *Tree[K]) Kept(s int) (line, sentOn, forwarders int) {
	return len(t.line[s]), len(t.sentOn[s]), len(t.forwarded[s])
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

// noteEarly notes orphan id of stripe s, which asks for the first time
// unless again, as early if a root of s still takes this seed's pushes,
// and cuts the root when it is the second such orphan.
func (t *Tree[K]) noteEarly(s int, id K, again bool) {
	if !t.seed || again || t.rootGone[s] || !t.rootUp(s) || slices.Contains(t.early[s], id) || len(t.early[s]) >= maxEarly {
		return
	}
	t.early[s] = append(t.early[s], id)
	if len(t.early[s]) == 2 {
		t.cutRoot(s)
	}
}

// doubted reports whether this seed doubts orphan id of stripe s.
func (t *Tree[K]) doubted(s int, id K) bool {
	return slices.Contains(t.early[s], id) && (len(t.early[s]) < 2 || t.rootGone[s])
}

// rootUp reports whether a seed's push stream to a root of stripe s it
// has not cut is up.
func (t *Tree[K]) rootUp(s int) bool {
	for _, c := range t.roots[s] {
		if t.up[c] && slices.Contains(t.children[s], c) {
			return true
		}
	}
	return false
}

// cutRoot stops a seed's pushes of stripe s to its planned root: two of
// the root's children asked to be adopted, so it left or lies (one liar
// alone cannot cut an honest root). Its blocks of the stripe still queued
// are dropped as its writer comes to them (PushesTo).
func (t *Tree[K]) cutRoot(s int) {
	t.children[s] = slices.DeleteFunc(t.children[s], func(id K) bool {
		return !slices.Contains(t.adoptees[s], id)
	})
}

// complain notes that orphan id asked again: the peer it was sent on to
// (which adopted it, or was to) failed it: it left, or pushed corrupt
// blocks. No further orphan is sent on to that peer; one complained of by
// CutComplaints orphans is cut as an adoptee. In the 200-peer testnet
// with churn and liars, the seed adopted a liar first in a stripe whose
// root left, and sent the next orphans on to it and to a second liar in
// line: each of them had to ask again.
func (t *Tree[K]) complain(s int, id K) {
	fwd, ok := t.sentOn[s][id]
	if !ok {
		return
	}
	delete(t.sentOn[s], id)
	if t.complaints[s] == nil {
		t.complaints[s] = map[K][]K{}
	}
	if slices.Contains(t.complaints[s][fwd], id) {
		return
	}
	t.complaints[s][fwd] = append(t.complaints[s][fwd], id)
	if len(t.complaints[s][fwd]) == CutComplaints && slices.Contains(t.adoptees[s], fwd) {
		t.dropAdoptee(s, fwd)
	}
}

// forwarder returns the peer a new orphan id of stripe s is sent on to:
// the first in line that no orphan complained of, that this peer does not
// doubt and that was sent fewer than two (the orphans of a stripe form a
// binary tree), or zero when there is none.
func (t *Tree[K]) forwarder(s int, id K) K {
	for _, f := range t.line[s] {
		if f != id && len(t.complaints[s][f]) == 0 && t.forwarded[s][f] < 2 && !t.doubted(s, f) {
			return f
		}
	}
	var none K
	return none
}

// sendOn notes that orphan id of stripe s is sent on to fwd, and returns
// fwd. Whom it was sent to is kept only for an orphan in line (so that
// what is kept stays bounded): the others' complaints are not heard.
func (t *Tree[K]) sendOn(s int, id, fwd K, inLine bool) K {
	if t.sentOn[s] == nil {
		t.sentOn[s], t.forwarded[s] = map[K]K{}, map[K]int{}
	}
	if inLine {
		t.sentOn[s][id] = fwd
	}
	t.forwarded[s][fwd]++
	return fwd
}
