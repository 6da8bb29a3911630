package peer

import (
	"github.com/reconcile-p2p/reconcile/peer/swarm"
	"github.com/reconcile-p2p/reconcile/peer/swarm/bans"
)

// The figures of a fetch (see package peer/swarm for each field).
type (
	// Summary is what a fetch did: blocks, bytes, time, and each peer's
	// share (swarm.Summary).
	Summary = swarm.Summary
	// PeerShare is one peer's part in a fetch (swarm.PeerShare).
	PeerShare = swarm.PeerShare
	// Progress is a fetch's progress, given to the WithProgress function
	// after every stored block (swarm.Progress).
	Progress = swarm.Progress
	// Stripes is one peer's place in the stripe trees of one content
	// (swarm.Stripes; Service.Push).
	Stripes = swarm.Stripes
	// A FetchEvent is something a fetch reports about one of its peers,
	// given to the WithFetchEvents function (swarm.FetchEvent).
	FetchEvent = swarm.FetchEvent
	// A FetchEventKind says what a FetchEvent reports.
	FetchEventKind = swarm.FetchEventKind
)

// The kinds of FetchEvent.
const (
	// FetchCorruptBlock: a peer sent a block that failed verification.
	FetchCorruptBlock = swarm.FetchCorruptBlock
	// FetchPeerBanned: a peer sent its third corrupt block; it is dropped
	// from the fetch and banned for a while.
	FetchPeerBanned = swarm.FetchPeerBanned
	// FetchPeerStillBanned: an earlier fetch on the same store banned the
	// peer, and this fetch keeps it banned.
	FetchPeerStillBanned = swarm.FetchPeerStillBanned
	// FetchPeerUnreachable: the first dial to a peer the fetch was given
	// failed (FetchEvent.Err says why); it is dialled again for up to
	// DialRetryFor.
	FetchPeerUnreachable = swarm.FetchPeerUnreachable
)

// DefaultRepairAfter is Stripes.RepairAfter's default.
const DefaultRepairAfter = swarm.DefaultRepairAfter

// BanFile is the name of the file, in a store's state folder, that keeps
// the bans of its fetches (bans.File).
const BanFile = bans.File
