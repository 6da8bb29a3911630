package stripes

import (
	"slices"
	"time"
)

// Place is one peer's place in the stripe trees of one content, as its
// Tree starts from: block i belongs to stripe i mod len(Parents). K names
// peers; its zero value names none.
type Place[K comparable] struct {
	// Self is the peer that holds the place.
	Self K
	// Parents holds, per stripe, the peer whose pushes are taken (zero for
	// none: a peer with no parent in any stripe is a seed).
	Parents []K
	// Children holds, per stripe, the peers pushed to (nil or shorter than
	// Parents: none for the rest).
	Children [][]K
	// Grandparents holds, per stripe, the parent's parent, asked to adopt
	// this peer when its parent fails (nil or shorter than Parents, or
	// zero: none).
	Grandparents []K
	// Blocks is the content's block count.
	Blocks int
	// Lengths, when given (one per block), deals the blocks into stripes by
	// their bytes (Deal), for blocks of varying lengths; without it block i
	// is in stripe i mod k, which is the same deal for blocks of one length.
	Lengths []int
	// RepairAfter is how long a stripe may go without a push from its
	// parent before it is no longer held for its pushes (see Held), and a
	// child's backlog before it is shed (see Batch).
	RepairAfter time.Duration
	// Spare, when set, reports whether other peers hold block i (enough of
	// them that this peer may leave it to them): a seed pushes an adoptee
	// none of those, a child catching up is told to fetch those this peer
	// has not gained yet, and a backlog sheds them. Nil: none.
	Spare func(i int) bool
}

// ParentState is what a peer makes of a parent's pushes.
type ParentState int

const (
	// ParentUp is a parent whose pushes are taken (and awaited, see Held).
	ParentUp ParentState = iota
	// ParentGone is a parent whose push stream failed; a new one makes it
	// up again (Accepts).
	ParentGone
	// ParentRefused is a parent that pushed a corrupt block or a malformed
	// frame, or lies in its offers: its pushes are refused from then on.
	ParentRefused
)

// Tree is one peer's place in the stripe trees of one content and the
// decisions that keep it: whose pushes are taken in each stripe, whom each
// block is pushed to, whom to ask to adopt it when a parent fails, and
// how to answer the orphans that ask it (Adoptee). It does no IO, reads no
// clock (the time is an argument) and takes no lock: its user holds one
// around every call, as package sched's Picker. Methods that return a
// slice of peers return the Tree's own, valid until its next call, unless
// they say otherwise.
type Tree[K comparable] struct {
	self K
	// seed is set for a peer without parents: the root of every stripe.
	seed bool
	// planned holds the parents the Tree began with, grand the
	// grandparents.
	planned, grand []K
	repair         time.Duration
	spare          func(i int) bool
	blocks         int

	// children holds, per stripe, the peers to push to: the planned ones,
	// and the adoptees.
	children [][]K
	// parents holds, per stripe, the parent pushes are taken from: the
	// planned one, or one that adopted this peer.
	parents []K
	// adoptees holds, per stripe, the children this peer adopted (also in
	// children); line the orphans that asked it, adopted or sent on, in
	// the order they first asked (see Adoptee); asking is set while this
	// peer asks to be adopted in the stripe.
	adoptees [][]K
	line     [][]K
	asking   []bool
	// roots holds, per stripe, a seed's planned children; early the
	// orphans that asked it while a root still took its pushes, and
	// rootGone is set once a root's stream failed after such an orphan
	// asked (see noteEarly).
	roots    [][]K
	early    [][]K
	rootGone []bool
	// sentOn holds, per stripe, the peer each orphan was sent on to;
	// forwarded how many orphans were sent on to each; complaints the
	// orphans that asked again after being sent on to a peer (see
	// complain). Made as needed.
	sentOn     []map[K]K
	forwarded  []map[K]int
	complaints []map[K][]K
	// orphan is set, per stripe, while this peer has no parent for it (its
	// parent failed and no peer adopted it): its children were let go
	// (Orphan).
	orphan []bool
	// last is, per stripe, when its parent last pushed a block (or the
	// Tree began).
	last   []time.Time
	parent map[K]ParentState
	// behind holds the parents that refused to catch this peer up: asked
	// again when their pushes come (Accepts).
	behind map[K]bool

	// up holds the children whose push stream is up (taken by them); cut
	// those let go (Orphan) whose stream is still to be reset (TakeCut).
	up  map[K]bool
	cut map[K]bool
	// placed holds the children placed as they joined (AddChild).
	placed map[K]bool
	// moved holds, per child, when its push queue last moved (Moved).
	moved map[K]time.Time
	// backlog holds, per child, since when more than Backlog blocks wait
	// for it (see Batch).
	backlog map[K]time.Time
	// pending counts, per block, the children it is queued for and not
	// yet written to.
	pending map[int]int
	// known marks the blocks passed on to the children as they were then
	// (Gained), and those known held when the Tree began (Know): those an
	// asking child is pushed (see Catch).
	known bitset
	// deal is each block's stripe when dealt by bytes (Place.Lengths), nil
	// for i mod k.
	deal []uint8
}

// bitset is a set of block indexes.
type bitset []uint64

func (b bitset) has(i int) bool { return i >= 0 && i>>6 < len(b) && b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i int) {
	if i >= 0 && i>>6 < len(b) {
		b[i>>6] |= 1 << (i & 63)
	}
}

// NewTree returns the Tree of place pl, at time now. pl must have at least
// one stripe; its slices are copied.
func NewTree[K comparable](pl Place[K], now time.Time) *Tree[K] {
	k := len(pl.Parents)
	var none K
	t := &Tree[K]{self: pl.Self, parents: slices.Clone(pl.Parents), planned: slices.Clone(pl.Parents),
		children: make([][]K, k), grand: make([]K, k), adoptees: make([][]K, k), line: make([][]K, k),
		early: make([][]K, k), rootGone: make([]bool, k), asking: make([]bool, k), orphan: make([]bool, k),
		sentOn: make([]map[K]K, k), forwarded: make([]map[K]int, k), complaints: make([]map[K][]K, k),
		repair: pl.RepairAfter, spare: pl.Spare, blocks: pl.Blocks, last: make([]time.Time, k),
		parent: map[K]ParentState{}, behind: map[K]bool{}, up: map[K]bool{}, cut: map[K]bool{}, placed: map[K]bool{}, moved: map[K]time.Time{},
		backlog: map[K]time.Time{}, pending: map[int]int{}, known: make(bitset, (max(pl.Blocks, 0)+63)/64)}
	if len(pl.Lengths) == pl.Blocks && pl.Blocks > 0 && k <= 256 {
		t.deal = Deal(pl.Lengths, k)
	}
	copy(t.grand, pl.Grandparents)
	t.seed = !slices.ContainsFunc(t.parents, func(id K) bool { return id != none })
	for s, kids := range pl.Children[:min(len(pl.Children), k)] {
		t.children[s] = slices.Clone(kids)
	}
	if t.seed {
		t.roots = make([][]K, k)
		for s := range t.children {
			t.roots[s] = slices.Clone(t.children[s])
		}
	}
	for s := range t.last {
		t.last[s] = now
	}
	for _, id := range t.parents {
		if id != none {
			t.parent[id] = ParentUp
		}
	}
	return t
}

// Stripes returns the stripe count.
func (t *Tree[K]) Stripes() int { return len(t.planned) }

// Stripe returns block i's stripe.
func (t *Tree[K]) Stripe(i int) int {
	if i >= 0 && i < len(t.deal) {
		return int(t.deal[i])
	}
	return i % len(t.planned)
}

// Deal deals blocks of the given lengths into k stripes (1 to 256) so that
// each carries about as many bytes: each block, in order, goes to the
// stripe with the fewest bytes so far, the lowest on a tie. Blocks of one
// length (all but a shorter last one) are dealt as i mod k; blocks of
// varying lengths leave the stripes at most one block apart in bytes.
func Deal(lengths []int, k int) []uint8 {
	k = min(max(k, 1), 256)
	out := make([]uint8, len(lengths))
	bytes := make([]int64, k)
	for i, n := range lengths {
		s := 0
		for j := 1; j < k; j++ {
			if bytes[j] < bytes[s] {
				s = j
			}
		}
		out[i] = uint8(s)
		bytes[s] += int64(n)
	}
	return out
}

// Seed reports whether the Tree's peer has no parent in any stripe: a
// seed, the root of every stripe.
func (t *Tree[K]) Seed() bool { return t.seed }

// Parent returns the parent whose pushes of stripe s are taken: the
// planned one or an adopter (zero for none).
func (t *Tree[K]) Parent(s int) K { return t.parents[s] }

// Parents returns every stripe's parent (a copy).
func (t *Tree[K]) Parents() []K { return slices.Clone(t.parents) }

// Grand returns the peer asked to adopt this one when its parent in
// stripe s fails: the planned grandparent, or the parent's parent as its
// parent last named it (zero for none).
func (t *Tree[K]) Grand(s int) K { return t.grand[s] }

// Children returns the peers that stripe s is pushed to: the planned
// children and the adoptees, but for those cut.
func (t *Tree[K]) Children(s int) []K { return t.children[s] }

// Adoptees returns the children this peer adopted in stripe s.
func (t *Tree[K]) Adoptees(s int) []K { return t.adoptees[s] }

// State returns what this peer makes of parent id's pushes, false when id
// is no parent it knows.
func (t *Tree[K]) State(id K) (ParentState, bool) {
	st, ok := t.parent[id]
	return st, ok
}

// ParentUp returns the parent of stripe s while its pushes are taken,
// zero otherwise (and for a seed).
func (t *Tree[K]) ParentUp(s int) K {
	var none K
	if id := t.parents[s]; id != none && t.parent[id] == ParentUp {
		return id
	}
	return none
}

// PushesTo reports whether block i is pushed to child: whether child is
// still a child in i's stripe (not a root the seed cut, nor an adoptee
// dropped).
func (t *Tree[K]) PushesTo(child K, i int) bool {
	return slices.Contains(t.children[t.Stripe(i)], child)
}

// Verdict is what a Tree makes of a pushed block (PushedBy).
type Verdict int

const (
	// Taken: the sender is the stripe's parent; the block is taken.
	Taken Verdict = iota
	// NotNow: the sender is the stripe's planned parent, back after
	// another adopted this peer: the block is dropped, and the sender is
	// not at fault.
	NotNow
	// NotTheirs: the block's stripe is not the sender's to push.
	NotTheirs
	// Refused: the sender's pushes are refused (ParentRefused).
	Refused
)

// PushedBy notes that id pushed block i at now, and returns what to make
// of it.
func (t *Tree[K]) PushedBy(id K, i int, now time.Time) Verdict {
	s := t.Stripe(i)
	if t.parents[s] != id {
		if t.planned[s] == id {
			return NotNow
		}
		return NotTheirs
	}
	if t.parent[id] == ParentRefused {
		return Refused
	}
	t.last[s] = now
	return Taken
}

// Repair returns how long a stripe may go without a push before it is
// no longer held for its pushes, and how long a block its parent offered
// may wait for its push: the repair time, whatever the stripe's pace.
// Stretched to four of the stripe's usual gaps between pushes (up to four
// repair times, for large blocks on a slow uplink), it saved 0.02 to 0.1 T*
// of the median in the 200-peer testnet of 256 KiB blocks (8 joined or
// planned trees) but held a stripe whose parent went silent for up to four
// repair times: with --churn 0.1 --liars 0.1 the peers that never left
// finished by 3.44x T*, against 2.41x with the repair time alone (2.51x
// pulling), and without churn the last peer by 2.65x against 2.11x to 2.18x.
func (t *Tree[K]) Repair() time.Duration { return t.repair }

// Held reports in dst (grown as needed), per stripe, whether a fetch
// leaves its blocks to the pushes at now: while its parent is up and
// pushed within the repair time.
func (t *Tree[K]) Held(now time.Time, dst []bool) []bool {
	var none K
	dst = slices.Grow(dst[:0], len(t.parents))[:len(t.parents)]
	for s, id := range t.parents {
		dst[s] = id != none && t.parent[id] == ParentUp && now.Sub(t.last[s]) < t.repair
	}
	return dst
}

// Accepts reports whether pushes from id are taken (taken), and marks it
// up when they are (a new stream of a parent whose last one failed): the
// stripes it parents are no longer orphaned. catchUp is set when id is to
// be asked to catch this peer up: it was gone, or refused before
// (CatchUpRefused).
func (t *Tree[K]) Accepts(id K) (taken, catchUp bool) {
	st, ok := t.parent[id]
	if !ok || st == ParentRefused || !slices.Contains(t.parents, id) {
		return false, false // refused, or no parent (any more: another adopted us)
	}
	t.parent[id] = ParentUp
	for s, pid := range t.parents {
		if pid == id {
			t.unorphan(s) // its pushes come again: passed on
		}
	}
	if st == ParentGone || t.behind[id] {
		// Back (it left, or its stream failed), or it refused to catch
		// this peer up before it pushed: it pushes what it gains from now
		// on, and is asked for what it held before.
		delete(t.behind, id)
		return true, true
	}
	return true, false
}

// CatchUpRefused notes that parent answered a catch-up request with a
// refusal (not in the trees yet, or no place for this peer): it is asked
// again when its pushes come (Accepts).
func (t *Tree[K]) CatchUpRefused(parent K) {
	if t.parent[parent] == ParentUp {
		t.behind[parent] = true
	}
}

// Behind reports whether parent refused to catch this peer up, and is to
// be asked again when its pushes come.
func (t *Tree[K]) Behind(parent K) bool { return t.behind[parent] }

// ParentFailed marks id gone (its stream failed) or refused (bad pushes,
// or lies), and returns the stripes it parents in which this peer is now
// to ask to be adopted (it has a grandparent and children there, and is
// not asking already): each is marked asking until AskEnded.
func (t *Tree[K]) ParentFailed(id K, refused bool) []int {
	st, ok := t.parent[id]
	if !ok || st == ParentRefused {
		return nil
	}
	if refused {
		t.parent[id] = ParentRefused
	} else {
		t.parent[id] = ParentGone
	}
	var none K
	var ask []int
	for s, p := range t.parents {
		if p == id && t.grand[s] != none && len(t.children[s]) > 0 && !t.asking[s] {
			t.asking[s] = true
			ask = append(ask, s)
		}
	}
	return ask
}

// SetGrand makes grand, the parent that this peer's parent in stripe s
// named in its answer to an adoption or catch-up request, the stripe's
// grandparent, if parent is still this peer's parent in s: the peer asked
// to adopt this one when that parent fails in turn. An orphan its
// grandparent adopted would otherwise ask that same grandparent, gone
// with it, and no one else: in the 200-peer testnet with churn, a stripe
// whose root left and came back reached such an orphan's subtree by what
// the orphan pulled and, after the root's return, by its pushes, up to
// 2x T*. Zero (none named: the parent is a seed, or has no parent now)
// changes nothing.
func (t *Tree[K]) SetGrand(s int, parent, grand K) {
	var none K
	if t.parents[s] == parent && grand != none && grand != t.self && grand != parent {
		t.grand[s] = grand
	}
}

// Attempt is an ask to be adopted under way (Try).
type Attempt[K comparable] struct {
	s              int
	target, prev   K
	prevState      ParentState
	hadState, made bool
}

// Try makes target the parent of stripe s for an ask to be adopted by it,
// so that its first pushes are taken, and returns the attempt, to be
// ended by Adopted or Undo; false (nothing changed) when target's pushes
// are refused.
func (t *Tree[K]) Try(s int, target K) (Attempt[K], bool) {
	if t.parent[target] == ParentRefused {
		return Attempt[K]{}, false
	}
	a := Attempt[K]{s: s, target: target, prev: t.parents[s], made: true}
	a.prevState, a.hadState = t.parent[target]
	t.parents[s], t.parent[target] = target, ParentUp
	return a, true
}

// Adopted notes that a's target adopted this peer at now, naming grand
// as its own parent in the stripe (zero for none): the stripe has a
// parent again.
func (t *Tree[K]) Adopted(a Attempt[K], grand K, now time.Time) {
	if !a.made {
		return
	}
	t.last[a.s] = now
	t.unorphan(a.s)
	t.SetGrand(a.s, a.target, grand)
}

// Undo puts back the parent that a replaced, if a's target is still the
// stripe's parent: the target did not adopt this peer.
func (t *Tree[K]) Undo(a Attempt[K]) {
	if !a.made || t.parents[a.s] != a.target {
		return
	}
	t.parents[a.s] = a.prev
	if a.hadState {
		t.parent[a.target] = a.prevState
	} else if !slices.Contains(t.parents, a.target) {
		delete(t.parent, a.target)
	}
}

// AskEnded notes that this peer's asks to be adopted in stripe s ended,
// adopted or not, and reports whether the stripe is left without a
// parent whose pushes come: its children are then to be let go (Orphan),
// unless this peer holds the whole stripe.
func (t *Tree[K]) AskEnded(s int, adopted bool) (orphaned bool) {
	t.asking[s] = false
	return !adopted && t.parent[t.parents[s]] != ParentUp
}

// Orphaned reports whether this peer's children in stripe s were let go.
func (t *Tree[K]) Orphaned(s int) bool { return t.orphan[s] }

// Orphan notes that this peer found no parent for stripe s, whose parent
// failed, and returns its children there, to be let go (nil when they
// were already): it pushes them nothing of s until a parent pushes to it
// again (Accepts, Adopted), and their push streams are to be reset
// (TakeCut), so that they repair the stripe at once, by pulls or
// adoption, rather than wait for what this peer pulls and passes on (in
// the 200-peer testnet a whole subtree waited so, up to 2.1x T*). What it
// gains meanwhile is known (Gained), for their catch-up.
func (t *Tree[K]) Orphan(s int) []K {
	if t.orphan[s] {
		return nil
	}
	t.orphan[s] = true
	for _, child := range t.children[s] {
		// A stream it takes and that is then reset tells it, whether
		// blocks were flowing or not.
		t.cut[child] = true
	}
	return t.children[s]
}

// unorphan notes that stripe s has a parent again: what this peer gains
// of it goes to its children again, and a reset still due to a child's
// stream (Orphan) is not made.
func (t *Tree[K]) unorphan(s int) {
	if !t.orphan[s] {
		return
	}
	t.orphan[s] = false
	for _, child := range t.children[s] {
		delete(t.cut, child)
	}
}

// TakeCut reports whether child was let go (Orphan) and its stream taken
// since is to be reset, and clears it.
func (t *Tree[K]) TakeCut(child K) bool {
	if !t.cut[child] {
		return false
	}
	delete(t.cut, child)
	return true
}

// SetUp notes whether child's push stream is up (child took it).
func (t *Tree[K]) SetUp(child K, up bool) {
	if up {
		t.up[child] = true
	} else {
		delete(t.up, child)
	}
}

// Up reports whether child's push stream is up.
func (t *Tree[K]) Up(child K) bool { return t.up[child] }

// StreamFailed notes that child's push stream failed after child took
// it: in the stripes child is a root of (for a seed), the early orphans
// are doubted from then on (see Adoptee).
func (t *Tree[K]) StreamFailed(child K) {
	delete(t.up, child)
	for s, roots := range t.roots {
		if slices.Contains(roots, child) && len(t.early[s]) > 0 {
			t.rootGone[s] = true
		}
	}
}

// DropAdoptee forgets child as an adoptee in every stripe (its push
// stream failed for good): it is no longer pushed to, and its place goes
// to the next orphan.
func (t *Tree[K]) DropAdoptee(child K) {
	for s := range t.adoptees {
		t.dropAdoptee(s, child)
	}
}

// dropAdoptee forgets child as an adoptee in stripe s.
func (t *Tree[K]) dropAdoptee(s int, child K) {
	if k := slices.Index(t.adoptees[s], child); k >= 0 {
		t.adoptees[s] = slices.Delete(t.adoptees[s], k, k+1)
		t.children[s] = slices.DeleteFunc(t.children[s], func(id K) bool { return id == child })
	}
}
