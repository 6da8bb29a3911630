// Package paperexp reproduces the filter experiments of the paper behind
// cbfalgebra (paper-notes §5 and §6): Table 1, the false-positive and
// false-negative rates of every algebra result against the CBF of the result
// set, and Table 2, the counter probes and errors of the algebra against the
// "double-CBF" way of answering the same queries from the two original filters.
//
// The paper used u = 12000 English words; random strings of 4 to 16 lower-case
// letters stand in for them here. Each trial draws a fresh universe U, the
// subsets S1 and S2 with |S1| = n1, |S2| = n2, |S1 ∩ S2| = n3, and probes
// elements outside U. Everything is deterministic for a given seed.
//
// False-positive rates are measured as the share of the probe elements (not in
// U) that a filter reports as members, as the paper does; false-negative rates
// as the share of the true result set that a filter reports as absent.
package paperexp

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// Sizes are the set sizes of an experiment: |U|, |S1|, |S2|, |S1 ∩ S2| and the
// number of probe elements outside U.
type Sizes struct {
	U, N1, N2, N3, Probes int
}

// PaperSizes are the sizes of paper Table 1: u = 12000, n1 = n2 = 6000,
// n3 = 2000 and 6000 probes.
var PaperSizes = Sizes{U: 12000, N1: 6000, N2: 6000, N3: 2000, Probes: 6000}

// validate checks that sets of these sizes can be drawn.
func (s Sizes) validate() error {
	switch {
	case s.U < 1 || s.N1 < 0 || s.N2 < 0 || s.N3 < 0 || s.Probes < 1:
		return fmt.Errorf("paperexp: sizes must be positive: %+v", s)
	case s.N3 > s.N1 || s.N3 > s.N2:
		return fmt.Errorf("paperexp: n3 = %d exceeds n1 = %d or n2 = %d", s.N3, s.N1, s.N2)
	case s.N1+s.N2-s.N3 > s.U:
		return fmt.Errorf("paperexp: |S1 ∪ S2| = %d exceeds u = %d", s.N1+s.N2-s.N3, s.U)
	}
	return nil
}

// trialSets is one draw of the experiment's sets. Elements are indices into
// words; membership flags say which sets each element of U is in.
type trialSets struct {
	words  [][]byte // U first (U elements), then the probes
	inS1   []bool   // over U
	inS2   []bool   // over U
	u      int
	probes int
}

// letters make the stand-in words.
const letters = "abcdefghijklmnopqrstuvwxyz"

// drawSets draws U, S1, S2 and the probe elements for one trial.
func drawSets(rng *rand.Rand, s Sizes) *trialSets {
	total := s.U + s.Probes
	seen := make(map[string]struct{}, total)
	words := make([][]byte, 0, total)
	for len(words) < total {
		n := 4 + rng.IntN(13)
		w := make([]byte, n)
		for i := range w {
			w[i] = letters[rng.IntN(len(letters))]
		}
		if _, dup := seen[string(w)]; dup {
			continue
		}
		seen[string(w)] = struct{}{}
		words = append(words, w)
	}
	// A random permutation of U: the first n3 are in both sets, the next
	// n1-n3 only in S1, the next n2-n3 only in S2, the rest in neither.
	perm := rng.Perm(s.U)
	t := &trialSets{words: words, inS1: make([]bool, s.U), inS2: make([]bool, s.U), u: s.U, probes: s.Probes}
	for i, e := range perm {
		switch {
		case i < s.N3:
			t.inS1[e], t.inS2[e] = true, true
		case i < s.N1:
			t.inS1[e] = true
		case i < s.N1+s.N2-s.N3:
			t.inS2[e] = true
		}
	}
	return t
}

// locations holds the k addresses of every word under one parameter set, laid
// out flat so that building and querying filters does not hash again.
type locations struct {
	k    int
	locs []uint32
}

func locate(p cbfalgebra.Params, words [][]byte) locations {
	l := locations{k: p.K, locs: make([]uint32, 0, len(words)*p.K)}
	for _, w := range words {
		l.locs = p.Locations(l.locs, w)
	}
	return l
}

func (l locations) of(i int) []uint32 { return l.locs[i*l.k : (i+1)*l.k] }

// filterOf returns a CBF with parameters p holding the elements of U for which
// member returns true.
func filterOf(p cbfalgebra.Params, l locations, u int, member func(int) bool) (*cbfalgebra.CBF, error) {
	c, err := cbfalgebra.NewFromParams(p)
	if err != nil {
		return nil, err
	}
	for i := 0; i < u; i++ {
		if member(i) {
			c.InsertLocations(l.of(i))
		}
	}
	return c, nil
}

// runTrials runs trials of one experiment, calling trial with a fresh draw of
// the sets each time and progress after each trial. It stops early when ctx
// is cancelled.
func runTrials(ctx context.Context, trials int, seed uint64, s Sizes, progress func(done, total int), trial func(*trialSets) error) error {
	if trials < 1 {
		return fmt.Errorf("paperexp: trials must be at least 1, got %d", trials)
	}
	if err := s.validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0x7461626c65)) // "table"
	for t := 0; t < trials; t++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := trial(drawSets(rng, s)); err != nil {
			return err
		}
		if progress != nil {
			progress(t+1, trials)
		}
	}
	return nil
}

// paramsGrid returns the parameters for every (m, k) pair, checked.
func paramsGrid(ms, ks []int, h cbfalgebra.HashFamily, seed uint64) ([]cbfalgebra.Params, error) {
	if len(ms) == 0 || len(ks) == 0 {
		return nil, fmt.Errorf("paperexp: need at least one m and one k")
	}
	var grid []cbfalgebra.Params
	for _, m := range ms {
		for _, k := range ks {
			p := cbfalgebra.Params{M: m, K: k, R: cbfalgebra.DefaultCounterBits, Hash: h, Seed: seed}
			if err := p.Validate(); err != nil {
				return nil, fmt.Errorf("paperexp: m=%d k=%d: %w", m, k, err)
			}
			grid = append(grid, p)
		}
	}
	return grid, nil
}
