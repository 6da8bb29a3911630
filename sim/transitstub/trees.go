package transitstub

import (
	"cmp"
	"math"
	"slices"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// The stripe trees (SwarmConfig.Trees) are a push protocol that needs no
// knowledge of which blocks other peers hold, after SplitStream (Castro et
// al., 2003): the file's blocks are dealt into k stripes (block b to
// stripe b mod k), each with its own tree over the fetchers. The n
// fetchers have k child places each (in proportion to their upload
// capacities where those differ), of which the k trees need k·(n-1):
// taken in a random order of the fetchers, the first n-1 go to stripe 0's
// tree, the next to stripe 1's, and so on. A fetcher whose places a stripe
// takes is an inner node of that stripe's tree (of two stripes, where its
// places straddle them) and a leaf of the others, so every fetcher uploads
// at most about one copy of the file, as T* needs. In each tree the inner nodes are placed first, then the
// leaves, each under a parent with a free place: in breadth-first order,
// or with TreesByDelay under the parent it would hear from first (the
// parent's own arrival over the tree so far, the one-way delay between
// them, and a block time per child placed before it).
//
// The seed sends each block once, in order, to its stripe's root; every
// node passes each block it gets on to its children, as soon as it is
// in, in the order they were placed. No block is sent twice; a block
// reaches the deepest leaf after about log_k(N) hops, each a one-way delay
// plus up to k block times on the sender's uplink.
//
// Who is where must be known to all (a membership list, here drawn at the
// start), and nothing repairs a tree: with churn or liars the pushes would
// have to be followed by reconciliations, which this model does not time.

// treeModel runs the stripe trees on RunSwarm's peers and clock.
type treeModel struct {
	sim      *Sim
	peers    []swarmPeer
	u        int
	blockLen int
	noDelay  bool
	blockMS  float64 // a block's time on the seed's uplink
	res      *SwarmResult
	route    func(a, b int) Route
	transfer func(x, y int, route Route, b int, now float64, arrived func()) float64
	complete func(a int)
	seedOut  *seedOut
	seed     int
	trees    *StripeTrees
}

// StripeTrees are k stripe trees over a swarm's fetchers, as
// SwarmConfig.Trees pushes a file down them (and testnet's Config.Trees):
// the seed sends stripe s's blocks (block b is in stripe b mod k) to
// Roots[s], and every peer passes each block of stripe s it gets on to
// Kids[s][peer], in that order.
type StripeTrees struct {
	Roots []int
	Kids  [][][]int32
}

// Root is the peer the seed sends block b to: its stripe's root.
func (t *StripeTrees) Root(b int) int { return t.Roots[b%len(t.Roots)] }

// Children are the peers that peer p passes block b on to, in order.
func (t *StripeTrees) Children(b, p int) []int32 { return t.Kids[b%len(t.Roots)][p] }

// NewStripeTrees deals the fetchers, listed in order (indices below n, the
// peers' count), into k stripe trees. With up (the upload capacities of
// the n peers; nil: all alike) the k·(len(order)-1) child places are shared
// in proportion to the fetchers' capacities (largest remainders), instead
// of k to each in order. With delay (the one-way delay from a peer to
// another, in ms; nil: breadth-first order) each fetcher is placed under
// the parent it would hear from first, counting blockMS for each child
// placed before it; the seed is peer seed.
func NewStripeTrees(n, k int, order []int, up []float64, seed int, delay func(a, b int) float64, blockMS float64) *StripeTrees {
	t := &StripeTrees{Roots: make([]int, k), Kids: make([][][]int32, k)}
	if len(order) == 0 || k < 1 {
		return t
	}
	nf := len(order)
	// owner[g] is the fetcher that owns place g; every fetcher but a
	// stripe's root needs one in each stripe.
	var owner []int
	if places := treePlaces(order, up, k); places == nil {
		for _, a := range order {
			for range k {
				owner = append(owner, a)
			}
		}
	} else {
		for j, a := range order {
			for range places[j] {
				owner = append(owner, a)
			}
		}
	}
	for s := range k {
		kids := make([][]int32, n)
		t.Kids[s] = kids
		// Stripe s takes places lo to hi.
		lo, hi := s*(nf-1), (s+1)*(nf-1)
		root := order[0]
		if lo < len(owner) {
			root = owner[lo]
		}
		t.Roots[s] = root
		room := map[int]int{root: 0}
		inner := []int{root}
		for g := lo; g < hi; g++ {
			a := owner[g]
			if _, ok := room[a]; !ok {
				inner = append(inner, a)
			}
			room[a]++
		}
		line := inner[1:]
		for _, a := range order {
			if _, ok := room[a]; !ok {
				line = append(line, a)
			}
		}
		if delay == nil {
			for j, c := range line {
				kids[owner[lo+j]] = append(kids[owner[lo+j]], int32(c))
			}
			continue
		}
		heard := map[int]float64{root: delay(seed, root)}
		placed := []int{root} // inner nodes in the tree so far
		for _, c := range line {
			best, bestAt := -1, 0.0
			for _, p := range placed {
				if room[p] == 0 {
					continue
				}
				at := heard[p] + delay(p, c) + float64(len(kids[p])+1)*blockMS
				if best < 0 || at < bestAt {
					best, bestAt = p, at
				}
			}
			// The inner nodes come first and own every place, so one
			// placed before c has room.
			room[best]--
			kids[best] = append(kids[best], int32(c))
			if _, ok := room[c]; ok {
				heard[c] = bestAt
				placed = append(placed, c)
			}
		}
	}
	return t
}

// delay is the one-way delay from a to b in ms (0 with NoDelay).
func (m *treeModel) delay(a, b int) int32 {
	if m.noDelay {
		return 0
	}
	return m.route(a, b).DelayMS
}

// start sends every block from the seed to its stripe's root, in order.
func (m *treeModel) start() {
	for b := range m.u {
		m.push(m.seed, m.trees.Root(b), b)
	}
}

// push sends block b from a to y.
func (m *treeModel) push(a, y, b int) {
	r := m.route(a, y)
	if m.noDelay {
		r.DelayMS = 0
	}
	m.res.BlocksSent++
	m.res.Bytes[reconcile.MsgBlocks.String()] += int64(m.blockLen)
	done := m.transfer(a, y, r, m.blockLen, m.sim.Now(), func() { m.arrived(y, b) })
	if a == m.seed {
		m.seedOut.sent(done)
	}
}

// arrived stores block b at y and passes it on to y's children in b's
// stripe.
func (m *treeModel) arrived(y, b int) {
	q := &m.peers[y]
	if !q.set.Add(b) {
		m.res.RedundantBlocks++
		return
	}
	if q.set.Len() == m.u {
		m.complete(y)
	}
	for _, c := range m.trees.Children(b, y) {
		m.push(y, int(c), b)
	}
}

// treePlaces shares k·(n-1) child places among the n fetchers listed in
// order in proportion to their upload capacities up (largest remainders,
// ties to the first listed), or returns nil where up is nil or all zero.
func treePlaces(order []int, up []float64, k int) []int {
	sum := 0.0
	for _, a := range order {
		if up != nil {
			sum += up[a]
		}
	}
	if sum <= 0 {
		return nil
	}
	n := len(order)
	total := k * (n - 1)
	places := make([]int, n)
	rest := make([]int, n)
	frac := make([]float64, n)
	given := 0
	for j, a := range order {
		q := float64(total) * up[a] / sum
		places[j] = int(math.Floor(q))
		frac[j] = q - float64(places[j])
		given += places[j]
		rest[j] = j
	}
	slices.SortStableFunc(rest, func(x, y int) int { return cmp.Compare(frac[y], frac[x]) })
	for _, j := range rest[:min(n, max(0, total-given))] {
		places[j]++
	}
	return places
}
