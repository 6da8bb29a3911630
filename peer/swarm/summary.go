package swarm

import (
	"path/filepath"
	"sort"

	"github.com/reconcile-p2p/reconcile/chunker"
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

// summary is the fetch's figures so far.
func (f *fetch) summary() *Summary {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sum
	s.Received = f.received
	s.WireBytesReceived, s.WireBytesSent = f.wireBytes.Received(), f.wireBytes.Sent()
	s.Fetched = f.c.Store.HeldCount() - f.resumed
	s.Peers = make([]PeerShare, 0, len(f.shares))
	for _, sh := range f.shares {
		s.Peers = append(s.Peers, *sh)
	}
	f.notePaths(s.Peers) // paths.go
	sort.Slice(s.Peers, func(i, j int) bool {
		if s.Peers[i].Bytes != s.Peers[j].Bytes {
			return s.Peers[i].Bytes > s.Peers[j].Bytes
		}
		return s.Peers[i].Peer < s.Peers[j].Peer
	})
	return &s
}

// maxListed bounds Summary.Files.
const maxListed = 1000

// outputFiles lists the output files of st: the file of a single-file
// store, or the files of the manifest under its folder.
func outputFiles(st *chunker.Store) (files []string, n int) {
	if p := st.FilePath(); p != "" {
		return []string{p}, 1
	}
	m := st.Manifest()
	for _, f := range m.Files() {
		if len(files) == maxListed {
			break
		}
		files = append(files, filepath.Join(st.Dir(), filepath.FromSlash(f.Path)))
	}
	return files, m.FileCount()
}
