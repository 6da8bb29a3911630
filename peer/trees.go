package peer

import (
	"fmt"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/swarm"
)

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

// Place has the service place the fetchers of content root, which it
// holds whole, in k stripe trees as they join (ProtoJoin), and push each
// block down its stripe's tree, as a seed does with Push, but without a
// membership list: each fetcher is an inner node of one stripe and a leaf
// of the others (stripes.Placer), learns its parents and children from
// this seed over the join stream it keeps open, and is placed again when
// a peer above it leaves. Fetches join by default (WithoutJoin keeps one
// out), and pull what the trees do not bring. Seed and Serve call it with
// WithTrees and WithServeTrees.
func (p *Service) Place(root chunker.ID, k int) error { return p.nd.Place(root, k) }

// MaxStripes bounds the stripe count of Stripes, Place and WithTrees.
const MaxStripes = swarm.MaxStripes

// DefaultTrees is the stripe trees reconcile seed places its fetchers in
// when not told otherwise (--trees), and the testnet's default (its
// --join) where one seed serves a block method: in the 200-peer testnet
// (16 MiB, 256 KiB blocks, 20/100 Mbit) 8 joined trees finish at 1.5x to
// 1.6x the fluid bound, against 2.1x pulling (docs/stripe-trees.md).
// Fetchers that reach the seed at a loopback or private address, or only
// through a relay, pull (NearAddr).
const DefaultTrees = 8

// WithTrees makes Seed place its fetchers in k stripe trees as they join
// (Place; 1 to MaxStripes). Default: none (0), every block pulled, for a
// program that places its own; reconcile seed passes DefaultTrees.
func WithTrees(k int) SeedOption {
	return func(c *seedConfig) error {
		if k < 0 || k > MaxStripes {
			return fmt.Errorf("peer: WithTrees: %d stripes (want 0 to %d)", k, MaxStripes)
		}
		c.trees = k
		return nil
	}
}

// WithServeTrees is WithTrees for Serve, for a store held whole.
func WithServeTrees(k int) ServeOption {
	return func(c *serveConfig) error {
		if k < 0 || k > MaxStripes {
			return fmt.Errorf("peer: WithServeTrees: %d stripes (want 0 to %d)", k, MaxStripes)
		}
		c.trees = k
		return nil
	}
}

// WithJoinAt names the peers a fetch asks first to place it in their
// stripe trees (Place), such as the seed a ticket names when the fetch is
// given other sources: by default it asks its first sources.
func WithJoinAt(ids ...lpeer.ID) FetchOption {
	return func(c *swarm.FetchConfig) error { c.JoinAt = append(c.JoinAt, ids...); return nil }
}

// WithJoinNear has a fetch take its place in a placing seed's stripe
// trees even when the seed is near: by default a fetch that reaches the
// seed at a loopback, private or link-local address (on the same machine
// or LAN) does not join and pulls every block, which is faster where the
// uplinks, not the latency, set the pace (see NearAddr).
func WithJoinNear() FetchOption {
	return func(c *swarm.FetchConfig) error { c.JoinNear = true; return nil }
}

// NearAddr reports whether a peer reached at a is near, on the same
// machine or LAN: a fetch does not join the stripe trees of a seed it
// reaches so (see WithJoinNear), nor one it reaches through a relay only.
func NearAddr(a ma.Multiaddr) bool { return swarm.NearAddr(a) }

// WithoutJoin keeps a fetch out of a placing seed's stripe trees (see
// Place): it pulls every block. By default a fetch asks its first
// sources to place it, and takes its place where one does.
func WithoutJoin() FetchOption {
	return func(c *swarm.FetchConfig) error { c.NoJoin = true; return nil }
}
