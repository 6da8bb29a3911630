package swarm

import (
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/reconcile-p2p/reconcile/chunker"
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
	// Reuse, Delete and ReuseProgress: see peer.WithReuse, WithDelete and
	// WithReuseProgress.
	Reuse         []string
	Delete        bool
	ReuseProgress func(done, total int64)
	// Older are the roots of older versions of the content (those found at
	// the output): their providers in the DHT are sources too, which serve
	// the blocks the versions share once offered the manifest.
	Older []chunker.ID
	// Lookup: see peer.WithLookupProgress (its value is peer.Lookup).
	Lookup func(Lookup)
}

// Lookup is the progress of a search for a content's providers
// (peer.WithLookupProgress).
type Lookup struct {
	// Asked counts the DHT queries sent to peers so far.
	Asked int
	// Known is the number of peers in the DHT's routing table now (0: the
	// DHT knows no peer, so nothing can be found through it).
	Known int
	// Found counts the providers found so far (DHT and LAN).
	Found int
	// Seconds is the time since the search began.
	Seconds float64
}

// A FetchEventKind says what a FetchEvent reports.
type FetchEventKind int

const (
	// FetchCorruptBlock: a peer sent a block that failed verification. The
	// block is asked of other peers, never of this one again; the peer may
	// still send others.
	FetchCorruptBlock FetchEventKind = iota + 1
	// FetchPeerBanned: a peer sent its third corrupt block; it is dropped
	// from the fetch and banned for a while.
	FetchPeerBanned
	// FetchPeerStillBanned: an earlier fetch on the same store banned the
	// peer (for corrupt blocks or other misbehaviour, see bans.File), and this
	// fetch keeps it banned until Until.
	FetchPeerStillBanned
)

// String names the kind.
func (k FetchEventKind) String() string {
	switch k {
	case FetchCorruptBlock:
		return "corrupt-block"
	case FetchPeerBanned:
		return "peer-banned"
	case FetchPeerStillBanned:
		return "peer-still-banned"
	}
	return "unknown"
}

// A FetchEvent is something a fetch reports about one of its peers, given to
// the WithFetchEvents function.
type FetchEvent struct {
	// Kind is what happened.
	Kind FetchEventKind
	// Peer is the remote peer.
	Peer lpeer.ID
	// Block is the corrupt block (a coded block with reconcile.Byers); -1
	// for FetchPeerStillBanned.
	Block int
	// Corrupt counts the corrupt blocks Peer sent in this fetch so far.
	Corrupt int
	// Until is when the ban of a FetchPeerStillBanned event ends.
	Until time.Time
}
