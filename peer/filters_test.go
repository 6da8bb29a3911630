package peer

import (
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/internal/testkit"
	"github.com/reconcile-p2p/reconcile/peer/swarm"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// heldFilter is testkit.HeldFilter.
var heldFilter = testkit.HeldFilter

// watchFilter returns the CBF of the blocks idx of u that a watcher sends
// (sized for all of u's blocks, see watchParams).
func watchFilter(t testing.TB, u *reconcile.Universe, idx []int) *cbfalgebra.CBF {
	t.Helper()
	m, k := swarm.WatchParams(reconcile.Complete, u.Blocks())
	return heldFilter(t, u, reconcile.Config{M: m, K: k}, idx)
}
