package swarm

import (
	"errors"
	"fmt"
	"slices"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Push has the service pass content root's blocks down the stripe trees
// st gives its place in: every block the content's store gains from now
// on (fetched, pushed to it, or put there by anyone), and every block at
// once for content held whole (a seed), goes to the block stripe's
// children, each over one wire.ProtoPush stream, in the order gained; pushes
// are taken from the stripes' parents only, verified like fetched blocks
// and passed on in turn. A running fetch of the content (Fetch,
// FetchServed) leaves the blocks of a stripe to its pushes while they
// come, and fetches them as usual once they stop (st.RepairAfter). The
// content must be served (Seed, Serve or a fetch started) and not be the
// Byers baseline's coded blocks; Push is set once per content.
func (p *Node) Push(root chunker.ID, st Stripes) error {
	k := len(st.Parents)
	switch {
	case k == 0 || k > MaxStripes:
		return fmt.Errorf("peer: push: %d stripes (want 1 to %d)", k, MaxStripes)
	case len(st.Children) > k:
		return fmt.Errorf("peer: push: children of %d stripes, parents of %d", len(st.Children), k)
	case len(st.Grandparents) > k:
		return fmt.Errorf("peer: push: grandparents of %d stripes, parents of %d", len(st.Grandparents), k)
	case st.RepairAfter < 0:
		return fmt.Errorf("peer: push: negative repair time %v", st.RepairAfter)
	}
	n := 0
	for s, kids := range st.Children {
		for a, c := range kids {
			if c == p.h.ID() || c == "" || slices.Contains(kids[:a], c) {
				return fmt.Errorf("peer: push: stripe %d: child %q is this peer, empty or listed twice", s, c)
			}
		}
		n += len(kids)
	}
	if n > MaxPushChildren {
		return fmt.Errorf("peer: push: %d children (at most %d)", n, MaxPushChildren)
	}
	if slices.Contains(st.Parents, p.h.ID()) || slices.Contains(st.Grandparents, p.h.ID()) {
		return errors.New("peer: push: this peer is its own parent or grandparent")
	}
	c := p.lib.Lookup(root[:])
	if c == nil {
		return fmt.Errorf("peer: push: content %s is not served: %w", root, wire.ErrUnknownRoot)
	}
	if c.AltSet() != nil {
		return errors.New("peer: push: the content is served as the Byers baseline's coded blocks")
	}
	repair := st.RepairAfter
	if repair == 0 {
		repair = DefaultRepairAfter
	}
	t := NewTrees(p, c, st, repair)
	if !c.SetPushes(t) {
		return errors.New("peer: push: the content's stripes are set already")
	}
	t.mu.Lock()
	for _, i := range c.Store.Held() {
		t.tree.Know(i)
	}
	t.mu.Unlock()
	if c.Store.Complete() {
		// A seed: every block, in order, to the roots of the stripes.
		for i := range c.Man.BlockCount() {
			t.Gained(i)
		}
	}
	if FetchOf(c).Running() {
		t.catchUp("") // else the fetch does as it starts
	}
	return nil
}

// Pushing reports whether content root has its place in stripe trees
// (Push, or a fetch's WithStripes).
func (p *Node) Pushing(root chunker.ID) bool {
	c := p.lib.Lookup(root[:])
	return c != nil && TreesOf(c) != nil
}
