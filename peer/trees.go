package peer

import "github.com/reconcile-p2p/reconcile/chunker"

// Push has the service pass content root's blocks down the stripe trees
// st gives its place in: every block the content's store gains from now
// on (fetched, pushed to it, or put there by anyone), and every block at
// once for content held whole (a seed), goes to the block stripe's
// children, each over one ProtoPush stream, in the order gained; pushes
// are taken from the stripes' parents only, verified like fetched blocks
// and passed on in turn. A running fetch of the content (Fetch,
// FetchServed) leaves the blocks of a stripe to its pushes while they
// come, and fetches them as usual once they stop (st.RepairAfter). The
// content must be served (Seed, Serve or a fetch started) and not be the
// Byers baseline's coded blocks; Push is set once per content.
func (p *Service) Push(root chunker.ID, st Stripes) error { return p.nd.Push(root, st) }

// Pushing reports whether content root has its place in stripe trees
// (Push, or a fetch's WithStripes).
func (p *Service) Pushing(root chunker.ID) bool { return p.nd.Pushing(root) }
