package swarm

import (
	"path/filepath"
	"sort"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/swarm/outcome"
)

// The fetch's reports, defined in package outcome.
type (
	// Progress is outcome.Progress.
	Progress = outcome.Progress
	// PeerShare is outcome.PeerShare.
	PeerShare = outcome.PeerShare
	// Summary is outcome.Summary.
	Summary = outcome.Summary
	// FetchEventKind is outcome.FetchEventKind.
	FetchEventKind = outcome.FetchEventKind
	// FetchEvent is outcome.FetchEvent.
	FetchEvent = outcome.FetchEvent
)

// The kinds of FetchEvent (outcome's).
const (
	FetchCorruptBlock    = outcome.FetchCorruptBlock
	FetchPeerBanned      = outcome.FetchPeerBanned
	FetchPeerStillBanned = outcome.FetchPeerStillBanned
	FetchPeerUnreachable = outcome.FetchPeerUnreachable
)

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
