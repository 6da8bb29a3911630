package testnet

import (
	"context"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/reconcile-p2p/reconcile/peer"
)

// Message types of the byte counts in Result.Wire.
const (
	WireFilter   = "filter"   // reconciliation messages, both directions
	WireBlocks   = "blocks"   // block messages (server to fetcher)
	WireWant     = "want"     // want messages and hellos of block streams (fetcher to server)
	WireManifest = "manifest" // manifest requests and answers
	WirePeers    = "peers"    // peer exchange
)

// counters are the byte counts of one run, shared by every host.
type counters struct {
	filter, blocks, want, manifest, peers atomic.Int64
	sessions, missed, offered             atomic.Int64
}

func (c *counters) wire() map[string]int64 {
	return map[string]int64{WireFilter: c.filter.Load(), WireBlocks: c.blocks.Load(), WireWant: c.want.Load(),
		WireManifest: c.manifest.Load(), WirePeers: c.peers.Load()}
}

// counter returns the count the writes of a stream of proto go to; outbound
// says whether this side opened the stream.
func (c *counters) counter(proto protocol.ID, outbound bool) *atomic.Int64 {
	switch proto {
	case peer.ProtoReconcile:
		return &c.filter
	case peer.ProtoBlocks:
		if outbound {
			return &c.want
		}
		return &c.blocks
	case peer.ProtoManifest:
		return &c.manifest
	case peer.ProtoPeers:
		return &c.peers
	}
	return nil
}

// holdings answer which units (blocks, or coded blocks for Byers) a node holds.
type holdings interface {
	Has(i int) bool
}

// countingHost wraps a host so that every stream of package peer's protocols
// counts the bytes written on it. It sees only bytes and protocol ids, never
// package peer's frames: what a peer answered is audited through
// peer.WithServeObserver instead (see audit).
type countingHost struct {
	host.Host
	c *counters
}

// NewStream counts the writes of the stream it opens.
func (h *countingHost) NewStream(ctx context.Context, p lpeer.ID, pids ...protocol.ID) (network.Stream, error) {
	s, err := h.Host.NewStream(ctx, p, pids...)
	if err != nil {
		return s, err
	}
	proto := s.Protocol()
	if proto == "" && len(pids) == 1 {
		proto = pids[0]
	}
	if n := h.c.counter(proto, true); n != nil {
		return &countingStream{Stream: s, n: n}, nil
	}
	return s, nil
}

// SetStreamHandler counts the writes of the streams handed to handler.
func (h *countingHost) SetStreamHandler(pid protocol.ID, handler network.StreamHandler) {
	n := h.c.counter(pid, false)
	if n == nil {
		h.Host.SetStreamHandler(pid, handler)
		return
	}
	h.Host.SetStreamHandler(pid, func(s network.Stream) {
		handler(&countingStream{Stream: s, n: n})
	})
}

// countingStream counts the bytes written.
type countingStream struct {
	network.Stream
	n *atomic.Int64
}

func (s *countingStream) Write(b []byte) (int, error) {
	n, err := s.Stream.Write(b)
	s.n.Add(int64(n))
	return n, err
}

// audit checks the reconciliation answers of the node self: every unit it
// held when it answered, that the fetcher lacks and that the answer did not
// offer, is a missed one. holdingsOf returns the fetcher's holdings (nil for
// a peer outside the run).
func (c *counters) audit(holdingsOf func(lpeer.ID) holdings) func(peer.ServeEvent) {
	return func(ev peer.ServeEvent) {
		if ev.Kind != peer.EventAnswered {
			return
		}
		fetcher := holdingsOf(ev.Peer)
		if fetcher == nil {
			return
		}
		offered := make(map[int]struct{}, len(ev.Offered))
		for _, i := range ev.Offered {
			offered[i] = struct{}{}
		}
		var missed int64
		for _, i := range ev.Held {
			if _, ok := offered[i]; !ok && !fetcher.Has(i) {
				missed++
			}
		}
		c.sessions.Add(1)
		c.offered.Add(int64(len(ev.Offered)))
		c.missed.Add(missed)
	}
}
