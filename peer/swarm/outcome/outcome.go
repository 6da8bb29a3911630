// Package outcome holds what a fetch reports: its progress as it runs, the
// events of its peers, and its summary at the end (package peer aliases them).
// They are plain data, kept apart from the fetch machinery of package swarm.
package outcome

import (
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
)

// Progress is a snapshot of a running fetch, given to the progress callback.
type Progress struct {
	// Blocks and TotalBlocks count verified blocks held and blocks of the content.
	Blocks, TotalBlocks int
	// Bytes and TotalBytes are the sizes of those blocks.
	Bytes, TotalBytes int64
	// Received is the block bytes received in this run (including rejected ones).
	Received int64
	// Peers is the number of peers the fetch downloads from.
	Peers int
}

// PeerShare is what one peer contributed to a fetch.
type PeerShare struct {
	// Peer is the remote peer id.
	Peer string `json:"peer"`
	// Blocks and Bytes are the verified blocks it sent and their size.
	Blocks int   `json:"blocks"`
	Bytes  int64 `json:"bytes"`
	// Offered is the number of blocks its reconciliation answers offered.
	Offered int `json:"offered"`
	// Haves is the number of blocks it announced on its watch after the
	// first answer (see wire.Hello.Watch), blocks this peer held left out.
	Haves int `json:"haves"`
	// FilterBytes is the reconciliation traffic with it (both directions).
	FilterBytes int64 `json:"filter_bytes"`
	// Rounds is the number of reconciliation exchanges with it.
	Rounds int `json:"rounds"`
	// RoundTrips counts the round trips of those exchanges: one each for
	// complete, ccbf, bitfield and byers; iblt adds one per batch of cells the
	// peer asked for.
	RoundTrips int `json:"round_trips"`
	// Pushed counts the blocks of Blocks it pushed down the stripe trees
	// (Service.Push) rather than sent when asked.
	Pushed int `json:"pushed,omitempty"`
	// Rejected counts its blocks that failed verification.
	Rejected int `json:"rejected"`
	// Stalled counts the blocks asked of it that did not come within what
	// the fetch allows a source (a few times what its sources take to
	// serve a block): they were asked of others.
	Stalled int `json:"stalled,omitempty"`
	// Dropped says why the peer was dropped, empty if it was not.
	Dropped string `json:"dropped,omitempty"`
	// Path is how the blocks came at the end of the fetch: PathDirect,
	// PathHolePunched or PathRelayed (empty if no longer connected).
	Path string `json:"path,omitempty"`
	// Transport is the transport of that connection ("tcp", "quic"; to the
	// relay, for a relayed one), and Relay the relay's id when relayed.
	Transport string `json:"transport,omitempty"`
	Relay     string `json:"relay,omitempty"`
}

// Summary is the outcome of a fetch.
type Summary struct {
	// Root is the content's root id.
	Root string `json:"root"`
	// Method is the reconciliation method used.
	Method string `json:"method"`
	// Out is the output folder (the store).
	Out string `json:"out"`
	// Blocks and Bytes are the block count and size of the content.
	Blocks int   `json:"blocks"`
	Bytes  int64 `json:"bytes"`
	// Resumed counts the verified blocks held when the fetch started.
	Resumed int `json:"resumed_blocks"`
	// ReusedBlocks and ReusedBytes are the blocks taken from local files: the
	// older version at the output and the WithReuse paths (not counted in
	// Resumed).
	ReusedBlocks int   `json:"reused_blocks"`
	ReusedBytes  int64 `json:"reused_bytes"`
	// DeltaBlocks and DeltaBytes are the blocks rebuilt from deltas against
	// the local bytes an edit fell in (wire.ProtoDelta), and their bytes:
	// what the deltas saved on the network is DeltaBytes less the deltas'
	// share of WireBytesReceived. Not counted in Fetched.
	DeltaBlocks int   `json:"delta_blocks"`
	DeltaBytes  int64 `json:"delta_bytes"`
	// Fetched counts the blocks downloaded, verified and stored by this fetch.
	Fetched int `json:"fetched_blocks"`
	// Received is the block payload received (fetched, redundant and rejected).
	Received int64 `json:"bytes_received"`
	// RelayedBytes is the part of Received that came over relayed
	// connections (circuit relay v2).
	RelayedBytes int64 `json:"relayed_bytes"`
	// WireBytesReceived and WireBytesSent are the bytes the fetch read from
	// and wrote to its streams: the manifest's request, reconciliations
	// and watches, block requests and replies, peer lists and the pushes
	// it took in (Service.Push), frames and their length prefixes included.
	// Not counted: the streams this peer serves to others, and what the
	// transport adds below the streams (yamux, TLS or Noise, TCP, QUIC).
	// Zero when the output was complete already.
	WireBytesReceived int64 `json:"wire_bytes_received"`
	WireBytesSent     int64 `json:"wire_bytes_sent"`
	// Redundant counts blocks received that were already held.
	Redundant int `json:"redundant_blocks"`
	// Pushed counts the blocks that came down the stripe trees
	// (Service.Push) rather than fetched.
	Pushed int `json:"pushed_blocks,omitempty"`
	// Rejected counts blocks that failed verification.
	Rejected int `json:"rejected_blocks"`
	// FalseOffers counts offered blocks the fetcher already held (filter false
	// positives; they are not downloaded).
	FalseOffers int `json:"false_offers"`
	// FilterBytes is the reconciliation traffic (both directions, all peers).
	FilterBytes int64 `json:"filter_bytes"`
	// FilterSent is the part of FilterBytes this side sent: its filters,
	// bitfields or IBLT cells (the rest is the peers' offers and requests).
	FilterSent int64 `json:"filter_sent_bytes"`
	// Cells counts the IBLT cells sent (iblt only).
	Cells int `json:"iblt_cells,omitempty"`
	// Seconds is the wall time of the fetch.
	Seconds float64 `json:"seconds"`
	// DecodeSeconds is the time spent erasure-decoding (Byers only).
	DecodeSeconds float64 `json:"decode_seconds,omitempty"`
	// Files are the paths of the output files written (at most maxListed;
	// FileCount has them all).
	Files []string `json:"files"`
	// FileCount is the number of output files.
	FileCount int `json:"file_count"`
	// Peers is each peer's share, largest first.
	Peers []PeerShare `json:"peers"`
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
	// FetchPeerUnreachable: the first dial to a peer the fetch was given (a
	// ticket's, WithPeers) failed; Err says why. The fetch dials it again,
	// with growing pauses, for a while (peer.DialRetryFor) before it gives up
	// on that peer.
	FetchPeerUnreachable
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
	case FetchPeerUnreachable:
		return "peer-unreachable"
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
	// Err is why a FetchPeerUnreachable dial failed.
	Err error
}
