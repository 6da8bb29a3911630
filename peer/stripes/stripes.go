// Package stripes plans the stripe trees down which a seed pushes a file,
// after SplitStream (Castro et al., 2003): a push that needs no knowledge of
// which blocks other peers hold.
//
// The file's blocks are dealt into k stripes (block b to stripe b mod k, or by
// bytes for blocks of varying lengths: Deal),
// each with its own tree over the fetchers. The n fetchers have k child
// places each (in proportion to their upload capacities where those are
// given), of which the k trees need k·(n-1): taken in the fetchers' order,
// the first n-1 go to stripe 0's tree, the next to stripe 1's, and so on. A
// fetcher whose places a stripe takes is an inner node of that stripe's tree
// (of two stripes, where its places straddle them) and a leaf of the others,
// so every fetcher uploads about one copy of the file at most. In each tree
// the inner nodes are placed first, then the leaves, each under a parent
// with a free place: in breadth-first order, or, given the delays between
// peers, under the parent it would hear from first (the parent's own
// arrival over the tree so far, the one-way delay between them, and a
// block time per child placed before it).
//
// The seed sends each block once, in order, to its stripe's root (Root);
// every peer passes each block it gets on to its children in that block's
// stripe (Children), in the order they were placed. Who is where must be
// known to all: the plan is drawn once, from a membership list.
//
// Tree is one peer's place in the trees once pushes run, and the policy
// that keeps it whole (tree.go, adopt.go, queue.go): whose pushes are
// taken in each stripe and for how long the stripe is held for them, whom
// each block is queued for, what a parent sheds of a child's backlog, and
// the repair of a tree whose inner node left or lies. A child with
// children of its own asks its grandparent to adopt it (Try, then Adopted
// or Undo); the peer asked answers (Adoptee) by adopting it, sending it on
// to an orphan that asked before (a binary tree of orphans), or refusing;
// a seed doubts the orphans that ask while their root still takes its
// pushes, and cuts a root two orphans were failed by; an orphan that no
// peer adopts lets its children go (Orphan).
//
// The package is pure: peers are numbers (a Tree's, any comparable key),
// delays and capacities are plain inputs, time is an argument, and there
// is no IO, goroutine or lock: a plan depends on nothing else, and package
// peer drives each Tree from its streams, holding its own lock around
// every call. Package transitstub times pushes down the trees in its
// simulator, package testnet gives real peers their places (package
// peer's Stripes).
package stripes

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrConfig is returned by Plan for a Config it cannot plan.
var ErrConfig = errors.New("stripes: invalid config")

// Config is what Plan deals into stripe trees. Peers are numbered from 0
// to Peers-1.
type Config struct {
	// Peers is the number of peers, the seed included.
	Peers int
	// Stripes is the number of stripes and trees, k (at least 1).
	Stripes int
	// Order lists the fetchers, distinct peers other than Seed, in the
	// order they take child places.
	Order []int
	// Seed is the peer that sends each block to its stripe's root.
	Seed int
	// Up, when set, holds the Peers peers' upload capacities (any unit,
	// finite and not negative): the k·(len(Order)-1) child places are
	// shared in proportion to the fetchers' capacities (largest
	// remainders, ties to the first listed) instead of k to each. A
	// fetcher of capacity 0 is a leaf of every tree. Nil, or all zero:
	// all alike.
	Up []float64
	// Delay, when set, is the one-way delay from peer a to peer b in ms:
	// each fetcher is placed under the parent it would hear from first,
	// counting BlockMS for each child placed before it. Nil: breadth-first
	// order.
	Delay func(a, b int) float64
	// BlockMS is a block's time on a sender's uplink in ms (with Delay).
	BlockMS float64
}

// Trees are k stripe trees over a swarm's fetchers: the seed sends the
// blocks of stripe s (block b is in stripe b mod k) to Roots[s], and every
// peer p passes each block of stripe s it gets on to Kids[s][p], in that
// order. A peer appears once in each tree, as its root or as one parent's
// child; the seed appears in none.
type Trees struct {
	// Roots holds each stripe's root.
	Roots []int
	// Kids holds, per stripe, each peer's children in that stripe's tree.
	Kids [][][]int32
}

// Root is the peer the seed sends block b to: its stripe's root.
func (t *Trees) Root(b int) int { return t.Roots[b%len(t.Roots)] }

// Children are the peers that peer p passes block b on to, in order.
func (t *Trees) Children(b, p int) []int32 { return t.Kids[b%len(t.Roots)][p] }

// Plan deals cfg's fetchers into cfg.Stripes stripe trees. The same Config
// gives the same trees. With no fetchers, the trees are empty (Kids nil).
func Plan(cfg Config) (*Trees, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n, k, order, delay, seed := cfg.Peers, cfg.Stripes, cfg.Order, cfg.Delay, cfg.Seed
	t := &Trees{Roots: make([]int, k), Kids: make([][][]int32, k)}
	if len(order) == 0 {
		return t, nil
	}
	nf := len(order)
	// owner[g] is the fetcher that owns place g; every fetcher but a
	// stripe's root needs one in each stripe.
	var owner []int
	if places := placesOf(order, cfg.Up, k); places == nil {
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
				at := heard[p] + delay(p, c) + float64(len(kids[p])+1)*cfg.BlockMS
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
	return t, nil
}

// validate checks that cfg names its peers within range, once each.
func (cfg *Config) validate() error {
	n := cfg.Peers
	switch {
	case n < 0 || cfg.Stripes < 1:
		return fmt.Errorf("%w: %d peers, %d stripes", ErrConfig, n, cfg.Stripes)
	case len(cfg.Order) > 0 && (cfg.Seed < 0 || cfg.Seed >= n):
		return fmt.Errorf("%w: seed %d of %d peers", ErrConfig, cfg.Seed, n)
	case cfg.Up != nil && len(cfg.Up) != n:
		return fmt.Errorf("%w: %d upload capacities for %d peers", ErrConfig, len(cfg.Up), n)
	}
	seen := make([]bool, n)
	for _, a := range cfg.Order {
		if a < 0 || a >= n || a == cfg.Seed || seen[a] {
			return fmt.Errorf("%w: fetcher %d (of %d peers, seed %d) out of range, the seed or listed twice", ErrConfig, a, n, cfg.Seed)
		}
		seen[a] = true
	}
	for a, u := range cfg.Up {
		if !(u >= 0) || math.IsInf(u, 0) {
			return fmt.Errorf("%w: peer %d's upload capacity %g", ErrConfig, a, u)
		}
	}
	return nil
}

// placesOf shares k·(n-1) child places among the n fetchers listed in
// order in proportion to their upload capacities up (largest remainders,
// ties to the first listed), or returns nil where up is nil or all zero.
func placesOf(order []int, up []float64, k int) []int {
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
