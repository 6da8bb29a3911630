package swarm

import (
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// heldFilter returns the CBF of the blocks idx of u, of parameters cfg
// (its counters and hash count; when unset, sized for idx), as package
// reconcile builds it, cloned so that a tally may change it.
func heldFilter(t testing.TB, u *reconcile.Universe, cfg reconcile.Config, idx []int) *cbfalgebra.CBF {
	t.Helper()
	p, err := cfg.Params(max(1, len(idx)))
	if err != nil {
		t.Fatal(err)
	}
	set, err := reconcile.SetOf(u.Blocks(), idx...)
	if err != nil {
		t.Fatal(err)
	}
	f, err := reconcile.NewFilters(u, set)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.CBF(p)
	if err != nil {
		t.Fatal(err)
	}
	return c.Clone()
}

// watchFilter returns the CBF of the blocks idx of u that a watcher sends
// (sized for all of u's blocks, see watchParams).
func watchFilter(t testing.TB, u *reconcile.Universe, idx []int) *cbfalgebra.CBF {
	t.Helper()
	m, k := WatchParams(reconcile.Complete, u.Blocks())
	return heldFilter(t, u, reconcile.Config{M: m, K: k}, idx)
}
