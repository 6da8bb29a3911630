package stripes

import "slices"

// Placer places fetchers in k stripe trees as they join and leave, at the
// seed, which every fetcher reaches first (SplitStream's join, made by
// the one peer that sees every fetcher, rather than Plan's, which places
// every peer at once from a membership list, their delays and their
// capacities, none of which a real seed knows beforehand).
//
// Each fetcher is an inner node of one stripe, the one with the fewest
// inner nodes when it joins (the lowest on a tie), and a leaf of the
// others, so that it uploads about one copy of the file: in its own
// stripe it has up to Fanout children (k by default: k children of one
// k-th of the file each). The first inner node of a stripe is its root,
// the seed's only child there. A joining inner node takes the free place
// nearest the root, or the place of a leaf nearer the root, which is
// placed again (under it, most often), so that inner nodes stay above
// leaves. A leaf takes the free place nearest the root of each other
// stripe; where none is free (a stripe may have one inner node fewer than
// others), it goes under the inner node with the fewest children, up to
// twice the fanout; with no inner node in the stripe yet, it waits,
// parentless, until one joins (a fetcher then pulls the stripe's blocks,
// as one does whose parent failed).
//
// A fetcher that others cannot dial (JoinPrivate) is placed under none
// like it.
//
// A fetcher that leaves frees its places, and its children in every
// stripe are placed again as if they joined that stripe (an inner node
// keeps its own subtree); its stripe's first inner child takes a root's
// place. Every change is returned as Moves, which the seed passes on to
// the fetchers concerned. Like the rest of the package it is pure: no IO,
// clock or lock.
type Placer[K comparable] struct {
	seed   K
	k      int
	fanout int
	// nodes holds each fetcher in join order (order: its rank).
	nodes map[K]*placed[K]
	order int
	// inner holds, per stripe, its inner nodes in join order (the root
	// first); waiting the fetchers without a parent there.
	inner   [][]K
	waiting [][]K
	root    []K
}

// placed is one fetcher's place in the Placer's trees.
type placed[K comparable] struct {
	rank     int
	stripe   int   // the stripe it is an inner node of
	private  bool  // others cannot dial it (JoinPrivate)
	parent   []K   // per stripe, zero: none (waiting)
	children [][]K // per stripe
}

// Move is one change of the trees a Placer made: Child's parent in Stripe
// is Parent from now on (zero: none, it pulls the stripe), and Old was its
// parent there until now (zero: none). A Child that left has a zero
// Parent: Old is told to push to it no more.
type Move[K comparable] struct {
	Stripe             int
	Child, Parent, Old K
}

// NewPlacer returns a Placer of k stripe trees (1 to MaxPlaceStripes)
// under seed, in which an inner node has up to fanout children in its
// stripe (k when fanout is 0 or less).
func NewPlacer[K comparable](seed K, k, fanout int) *Placer[K] {
	k = min(max(k, 1), MaxPlaceStripes)
	if fanout <= 0 {
		fanout = k
	}
	return &Placer[K]{seed: seed, k: k, fanout: fanout, nodes: map[K]*placed[K]{},
		inner: make([][]K, k), waiting: make([][]K, k), root: make([]K, k)}
}

// MaxPlaceStripes bounds a Placer's stripes.
const MaxPlaceStripes = 256

// Stripes returns the stripe count, k.
func (p *Placer[K]) Stripes() int { return p.k }

// Len returns how many fetchers are placed.
func (p *Placer[K]) Len() int { return len(p.nodes) }

// Parent returns id's parent in stripe s (the seed for a root; zero for
// none, or for a fetcher not placed).
func (p *Placer[K]) Parent(id K, s int) K {
	var none K
	n := p.nodes[id]
	if n == nil || s < 0 || s >= p.k {
		return none
	}
	return n.parent[s]
}

// Children returns id's children in stripe s (a copy), the roots for the
// seed.
func (p *Placer[K]) Children(id K, s int) []K {
	if s < 0 || s >= p.k {
		return nil
	}
	if id == p.seed {
		var none K
		if p.root[s] == none {
			return nil
		}
		return []K{p.root[s]}
	}
	if n := p.nodes[id]; n != nil {
		return slices.Clone(n.children[s])
	}
	return nil
}

// Inner returns the stripe id is an inner node of, -1 for a fetcher not
// placed.
func (p *Placer[K]) Inner(id K) int {
	if n := p.nodes[id]; n != nil {
		return n.stripe
	}
	return -1
}

// Join places fetcher id, and returns the moves made: its own parents,
// and the fetchers that moved to make room for it, or that waited for an
// inner node of its stripe. A fetcher placed already, or the seed,
// changes nothing.
func (p *Placer[K]) Join(id K) []Move[K] { return p.join(id, false) }

// join is Join, of a private fetcher (JoinPrivate) or not.
func (p *Placer[K]) join(id K, private bool) []Move[K] {
	var none K
	if id == none || id == p.seed || p.nodes[id] != nil {
		return nil
	}
	s := 0
	for t := 1; t < p.k; t++ {
		if len(p.inner[t]) < len(p.inner[s]) {
			s = t
		}
	}
	n := &placed[K]{rank: p.order, stripe: s, private: private, parent: make([]K, p.k), children: make([][]K, p.k)}
	p.order++
	p.nodes[id] = n
	p.inner[s] = append(p.inner[s], id)
	var moves []Move[K]
	for t := range p.k {
		moves = p.place(moves, id, t)
	}
	return p.rebalance(p.fill(moves, s), s)
}

// JoinPrivate is Join for a fetcher that other peers cannot dial (behind
// a NAT): it is placed under no other such fetcher, so that in every pair
// of parent and child one side can dial the other (a child asks its
// parent to catch it up, and the parent pushes over that connection).
// Where no place is free under a fetcher others can dial, it waits, and
// pulls the stripe meanwhile.
func (p *Placer[K]) JoinPrivate(id K) []Move[K] { return p.join(id, true) }

// rebalance moves the leaves that spilled over an inner node's fanout in
// stripe t (see spill) to free places, such as a new inner node's, the
// last placed first.
func (p *Placer[K]) rebalance(moves []Move[K], t int) []Move[K] {
	for _, c := range p.inner[t] {
		n := p.nodes[c]
		for j := len(n.children[t]) - 1; j >= 0 && len(n.children[t]) > p.fanout; j-- {
			leaf := n.children[t][j]
			if p.nodes[leaf].stripe == t {
				continue
			}
			par, ok := p.free(t, leaf)
			if !ok {
				return moves
			}
			p.unlink(leaf, c, t)
			p.link(leaf, par, t)
			moves = append(moves, Move[K]{Stripe: t, Child: leaf, Parent: par, Old: c})
		}
	}
	return moves
}

// Leave removes fetcher id, and returns the moves made: its parents told
// to push to it no more, and its children placed again.
func (p *Placer[K]) Leave(id K) []Move[K] {
	n := p.nodes[id]
	if n == nil {
		return nil
	}
	var none K
	var moves []Move[K]
	delete(p.nodes, id)
	p.inner[n.stripe] = slices.DeleteFunc(p.inner[n.stripe], func(x K) bool { return x == id })
	for t := range p.k {
		p.waiting[t] = slices.DeleteFunc(p.waiting[t], func(x K) bool { return x == id })
		if par := n.parent[t]; par != none {
			p.unlink(id, par, t)
			moves = append(moves, Move[K]{Stripe: t, Child: id, Old: par})
		}
	}
	for t := range p.k {
		kids := n.children[t]
		// Inner children first: they take the places nearest the root.
		slices.SortStableFunc(kids, func(a, b K) int { return p.rankInner(a, t) - p.rankInner(b, t) })
		for _, c := range kids {
			p.nodes[c].parent[t] = none
			at := len(moves)
			moves = p.place(moves, c, t)
			if at == len(moves) {
				// No place: it waits, and pulls the stripe meanwhile.
				moves = append(moves, Move[K]{Stripe: t, Child: c})
			}
			moves[at].Old = id
		}
		moves = p.fill(moves, t)
	}
	return moves
}

// rankInner orders fetchers for placing in stripe t: inner nodes of t
// first, each group in join order.
func (p *Placer[K]) rankInner(id K, t int) int {
	n := p.nodes[id]
	r := n.rank
	if n.stripe != t {
		r += 1 << 40
	}
	return r
}

// place gives fetcher id, without a parent in stripe t, its place there
// (see Placer), and appends the moves made to moves.
func (p *Placer[K]) place(moves []Move[K], id K, t int) []Move[K] {
	var none K
	n := p.nodes[id]
	if n.stripe == t {
		if p.root[t] == none {
			p.root[t] = id
			n.parent[t] = p.seed
			return append(moves, Move[K]{Stripe: t, Child: id, Parent: p.seed})
		}
		// The free place nearest the root, unless a leaf is nearer, whose
		// place it takes; with neither (a fanout of one), it hangs under
		// the deepest inner node.
		free, okFree := p.free(t, id)
		leaf, par, okLeaf := p.nearestLeaf(t, id)
		if okFree && (!okLeaf || p.depth(free, t) <= p.depth(par, t)) {
			p.link(id, free, t)
			return append(moves, Move[K]{Stripe: t, Child: id, Parent: free})
		}
		if okLeaf {
			p.unlink(leaf, par, t)
			p.link(id, par, t)
			moves = append(moves, Move[K]{Stripe: t, Child: id, Parent: par})
			at := len(moves)
			moves = p.place(moves, leaf, t)
			if at == len(moves) {
				moves = append(moves, Move[K]{Stripe: t, Child: leaf})
			}
			moves[at].Old = par
			return moves
		}
		if par = p.deepestInner(t, id); par == p.seed {
			// Private, and every other inner node too: it waits.
			if !slices.Contains(p.waiting[t], id) {
				p.waiting[t] = append(p.waiting[t], id)
			}
			return moves
		}
		p.link(id, par, t)
		return append(moves, Move[K]{Stripe: t, Child: id, Parent: par})
	}
	par, ok := p.free(t, id)
	if !ok {
		par, ok = p.spill(t, id)
	}
	if ok {
		p.link(id, par, t)
		return append(moves, Move[K]{Stripe: t, Child: id, Parent: par})
	}
	if !slices.Contains(p.waiting[t], id) {
		p.waiting[t] = append(p.waiting[t], id)
	}
	return moves
}

// fill places the fetchers waiting in stripe t where places are free
// (a private fetcher may find none where others do).
func (p *Placer[K]) fill(moves []Move[K], t int) []Move[K] {
	still := p.waiting[t][:0]
	for _, id := range p.waiting[t] {
		par, ok := p.free(t, id)
		if !ok {
			par, ok = p.spill(t, id)
		}
		if !ok {
			still = append(still, id)
			continue
		}
		p.link(id, par, t)
		moves = append(moves, Move[K]{Stripe: t, Child: id, Parent: par})
	}
	p.waiting[t] = still
	return moves
}

// free returns the inner node of stripe t nearest its root (then the
// first to join) with a free place, other than id and its descendants.
func (p *Placer[K]) free(t int, id K) (K, bool) {
	var best K
	bestDepth := -1
	for _, c := range p.inner[t] {
		n := p.nodes[c]
		if c == id || len(n.children[t]) >= p.fanout || !p.may(c, id) || !p.rooted(c, t) || p.below(c, id, t) {
			continue
		}
		if d := p.depth(c, t); bestDepth < 0 || d < bestDepth {
			best, bestDepth = c, d
		}
	}
	return best, bestDepth >= 0
}

// spill returns, when no inner node of stripe t has a free place, the one
// with the fewest children (then the nearest the root) of fewer than
// twice the fanout: the fetchers are dealt into the stripes one at a time,
// so a stripe may have an inner node fewer than the others, whose places
// are short by up to a fanout.
func (p *Placer[K]) spill(t int, id K) (K, bool) {
	var best K
	bestKids, bestDepth := 2*p.fanout, 0
	for _, c := range p.inner[t] {
		n := p.nodes[c]
		if c == id || !p.may(c, id) || !p.rooted(c, t) || p.below(c, id, t) {
			continue
		}
		d := p.depth(c, t)
		if kids := len(n.children[t]); kids < bestKids || kids == bestKids && d < bestDepth && kids < 2*p.fanout {
			best, bestKids, bestDepth = c, kids, d
		}
	}
	return best, bestKids < 2*p.fanout
}

// nearestLeaf returns the leaf of stripe t nearest the root (then the
// first placed under its parent), under an inner node other than id, and
// that parent.
func (p *Placer[K]) nearestLeaf(t int, id K) (leaf, parent K, ok bool) {
	bestDepth := -1
	for _, c := range p.inner[t] {
		if c == id || !p.may(c, id) || !p.rooted(c, t) {
			continue
		}
		d := p.depth(c, t)
		if bestDepth >= 0 && d >= bestDepth {
			continue
		}
		for _, k := range p.nodes[c].children[t] {
			if p.nodes[k].stripe != t {
				leaf, parent, bestDepth, ok = k, c, d, true
				break
			}
		}
	}
	return leaf, parent, ok
}

// deepestInner returns the inner node of stripe t, other than id, farthest
// from the root (the seed when there is none).
func (p *Placer[K]) deepestInner(t int, id K) K {
	best, bestDepth := p.seed, -1
	for _, c := range p.inner[t] {
		if c != id && p.may(c, id) && p.rooted(c, t) {
			if d := p.depth(c, t); d > bestDepth {
				best, bestDepth = c, d
			}
		}
	}
	return best
}

// may reports whether parent may take child: not when others can dial
// neither (JoinPrivate).
func (p *Placer[K]) may(parent, child K) bool {
	a, b := p.nodes[parent], p.nodes[child]
	return a == nil || b == nil || !a.private || !b.private
}

// Private reports whether id joined as a fetcher others cannot dial
// (JoinPrivate).
func (p *Placer[K]) Private(id K) bool {
	n := p.nodes[id]
	return n != nil && n.private
}

// rooted reports whether id's chain of parents in stripe t reaches the
// seed.
func (p *Placer[K]) rooted(id K, t int) bool {
	for range len(p.nodes) + 1 {
		if id == p.seed {
			return true
		}
		n := p.nodes[id]
		if n == nil {
			return false
		}
		id = n.parent[t]
	}
	return false
}

// depth returns id's hops from the seed in stripe t (1 for a root).
func (p *Placer[K]) depth(id K, t int) int {
	d := 0
	for range len(p.nodes) + 1 {
		n := p.nodes[id]
		if n == nil {
			break
		}
		d++
		id = n.parent[t]
	}
	return d
}

// below reports whether c is id or one of id's descendants in stripe t.
func (p *Placer[K]) below(c, id K, t int) bool {
	for range len(p.nodes) + 1 {
		if c == id {
			return true
		}
		n := p.nodes[c]
		if n == nil {
			return false
		}
		c = n.parent[t]
	}
	return false
}

// link makes par the parent of id in stripe t.
func (p *Placer[K]) link(id, par K, t int) {
	p.nodes[id].parent[t] = par
	if n := p.nodes[par]; n != nil {
		n.children[t] = append(n.children[t], id)
	}
}

// unlink removes id from par's children in stripe t (a root from the
// seed's place).
func (p *Placer[K]) unlink(id, par K, t int) {
	var none K
	if par == p.seed {
		if p.root[t] == id {
			p.root[t] = none
		}
	} else if n := p.nodes[par]; n != nil {
		n.children[t] = slices.DeleteFunc(n.children[t], func(x K) bool { return x == id })
	}
	if n := p.nodes[id]; n != nil {
		n.parent[t] = none
	}
}
