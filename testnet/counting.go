package testnet

import (
	"context"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/testnet/natmodel"
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
	// liedCorrupt and liedMissing count the block frames liars corrupted
	// and answered "missing" instead; corrupt and bans the corrupt blocks
	// honest fetches received and the bans they made, honestBans those of
	// honest peers.
	liedCorrupt, liedMissing, corrupt, bans, honestBans atomic.Int64
	// restarts counts the stuck fetches started again.
	restarts atomic.Int64
	// adopted counts the orphans adopted in the stripe trees.
	adopted atomic.Int64
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
	case peer.ProtoPeers, peer.ProtoJoin:
		return &c.peers
	case peer.ProtoPush:
		return &c.blocks
	}
	return nil
}

// holdings answer which units (blocks, or coded blocks for Byers) a node holds.
type holdings interface {
	Has(i int) bool
}

// countingHost wraps a host so that every stream of package peer's protocols
// counts the bytes written on it and, over the mock network or with access
// links, goes through the run's network model (shaper). It sees only bytes
// and protocol ids, never package peer's frames: what a peer answered is
// audited through peer.WithServeObserver instead (see audit). Only a liar's
// host reads the frames of the block streams it serves or pushes, to lie in
// them (liarStream).
type countingHost struct {
	host.Host
	c *counters
	// liar, when set, makes the blocks served lie as lie says.
	liar bool
	lie  LiarKind
	// shape, when set, carries the writes of node self's streams.
	shape *shaper
	self  int
}

// wrap returns s counting its writes into n and, with a model, shaped as
// written by node self.
func (h *countingHost) wrap(s network.Stream, n *atomic.Int64) network.Stream {
	inner := s
	if h.shape != nil {
		inner = h.shape.stream(s, h.self, n == &h.c.blocks)
	}
	return &countingStream{Stream: inner, n: n}
}

// Network returns the host's network, its connections of relayed pairs
// marked as relayed (natmodel.MarkNetwork) when the run has NATs: package
// peer learns a connection is relayed from it.
func (h *countingHost) Network() network.Network {
	if h.shape == nil || h.shape.nat == nil {
		return h.Host.Network()
	}
	return natmodel.MarkNetwork(h.Host.Network(), h.shape.nat.relayOf(h.self, h.shape.index))
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
		if h.liar && proto == peer.ProtoPush {
			// A liar lies in the blocks it pushes as in those it serves.
			return &liarStream{Stream: h.wrap(s, n), lie: h.lie, c: h.c}, nil
		}
		return h.wrap(s, n), nil
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
	if h.liar && pid == peer.ProtoBlocks {
		h.Host.SetStreamHandler(pid, func(s network.Stream) {
			handler(&liarStream{Stream: h.wrap(s, n), lie: h.lie, c: h.c})
		})
		return
	}
	h.Host.SetStreamHandler(pid, func(s network.Stream) {
		handler(h.wrap(s, n))
	})
}

// countingStream counts the bytes written on the stream below.
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
// held when it answered, that the fetcher lacks and that the session did not
// find, is a missed one (a super-seed offers fewer of those found, on
// purpose). holdingsOf returns the fetcher's holdings (nil for
// a peer outside the run).
func (c *counters) audit(holdingsOf func(lpeer.ID) holdings) func(peer.ServeEvent) {
	return func(ev peer.ServeEvent) {
		if ev.Kind == peer.EventAdopted {
			c.adopted.Add(1)
		}
		if ev.Kind != peer.EventAnswered {
			return
		}
		fetcher := holdingsOf(ev.Peer)
		if fetcher == nil {
			return
		}
		found := make(map[int]struct{}, len(ev.Found))
		for _, i := range ev.Found {
			found[i] = struct{}{}
		}
		var missed int64
		for _, i := range ev.Held {
			if _, ok := found[i]; !ok && !fetcher.Has(i) {
				missed++
			}
		}
		c.sessions.Add(1)
		c.offered.Add(int64(len(ev.Offered)))
		c.missed.Add(missed)
	}
}
