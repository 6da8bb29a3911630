package swarm

import (
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
	"github.com/reconcile-p2p/reconcile/peer/sched"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// FetchConfig is what one fetch is told (package peer's FetchOptions set
// it).
type FetchConfig struct {
	Progress func(Progress)
	Peers    []ma.Multiaddr
	Sources  []lpeer.ID
	Method   reconcile.Method
	NoPeer   time.Duration
	OutFile  bool
	Check    func(done, total int)
	Events   func(FetchEvent)
	Choice   sched.BlockChoice
	Endgame  bool
	Stripes  *Stripes
	// NoJoin keeps the fetch out of a placing seed's trees (see
	// peer.WithoutJoin); JoinAt names the peers asked first to place it
	// (peer.WithJoinAt).
	NoJoin bool
	JoinAt []lpeer.ID
	// JoinNear has the fetch take its place in a placing seed's trees
	// even when the seed is near (NearAddr; see peer.WithJoinNear).
	JoinNear bool
	// Reuse, Delete and ReuseProgress: see peer.WithReuse, WithDelete and
	// WithReuseProgress.
	Reuse  []string
	Delete bool
	// NoDeltas: see peer.WithoutDeltas.
	NoDeltas      bool
	ReuseProgress func(done, total int64)
	// Older are the roots of older versions of the content (those found at
	// the output): their providers in the DHT are sources too, which serve
	// the blocks the versions share once offered the manifest.
	Older []chunker.ID
	// Lookup: see peer.WithLookupProgress.
	Lookup func(hostkit.Lookup)
	// Started, if not nil, is called once the fetch is the content's
	// running fetch (serve.Content.RunningFetch), before it opens to its
	// sources: peers found after the caller gave its sources reach the
	// fetch from then on.
	Started func()
}
