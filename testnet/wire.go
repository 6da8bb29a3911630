package testnet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
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
	has(i int) bool
	held() []int
}

// countingHost wraps a host so that every stream of package peer's protocols
// counts the bytes written on it, and the answers to reconciliation requests
// are checked for missed blocks.
type countingHost struct {
	host.Host
	c *counters
	// audit, when set, returns the holdings of this node and of a remote peer
	// (nil if unknown) to check reconciliation answers.
	audit func(remote lpeer.ID) (self, other holdings)
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

// SetStreamHandler counts the writes of the streams handed to handler and
// audits reconciliation answers.
func (h *countingHost) SetStreamHandler(pid protocol.ID, handler network.StreamHandler) {
	n := h.c.counter(pid, false)
	if n == nil {
		h.Host.SetStreamHandler(pid, handler)
		return
	}
	h.Host.SetStreamHandler(pid, func(s network.Stream) {
		cs := &countingStream{Stream: s, n: n}
		if pid == peer.ProtoReconcile && h.audit != nil {
			self, other := h.audit(s.Conn().RemotePeer())
			if self != nil && other != nil {
				cs.tap = &offerAudit{c: h.c, before: self.held(), fetcher: other}
			}
		}
		handler(cs)
	})
}

// countingStream counts the bytes written and feeds them to a tap.
type countingStream struct {
	network.Stream
	n   *atomic.Int64
	tap *offerAudit
}

func (s *countingStream) Write(b []byte) (int, error) {
	n, err := s.Stream.Write(b)
	s.n.Add(int64(n))
	if s.tap != nil && n > 0 {
		s.tap.write(b[:n])
	}
	return n, err
}

// offerAudit watches the answer to one reconciliation request: the units the
// server held when the request arrived (before), and the fetcher's holdings.
// When the answer's first frame is complete, every unit of before that the
// fetcher still lacks must be among the offered ones; those that are not are
// missed blocks.
type offerAudit struct {
	c       *counters
	before  []int
	fetcher holdings

	mu   sync.Mutex
	buf  []byte
	done bool
}

// maxAuditBytes bounds what an audit buffers before it gives up.
const maxAuditBytes = 8 << 20

func (a *offerAudit) write(b []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done {
		return
	}
	a.buf = append(a.buf, b...)
	ans, complete, err := ParseAnswer(a.buf, maxAuditBytes)
	if !complete && err == nil && len(a.buf) < maxAuditBytes {
		return
	}
	a.done = true
	a.buf = nil
	if err != nil || !complete || ans.Rejected {
		return
	}
	offered := make(map[uint32]struct{}, len(ans.Offered))
	for _, i := range ans.Offered {
		offered[i] = struct{}{}
	}
	var missed int64
	for _, i := range a.before {
		if _, ok := offered[uint32(i)]; !ok && !a.fetcher.has(i) {
			missed++
		}
	}
	a.c.sessions.Add(1)
	a.c.offered.Add(int64(len(ans.Offered)))
	a.c.missed.Add(missed)
}

// ErrFrame means bytes given to ParseAnswer are not a frame of package
// peer's reconciliation protocol.
var ErrFrame = errors.New("testnet: bad reconciliation frame")

// Frame types of package peer's wire format that ParseAnswer reads.
const (
	frameError   = 0x05
	framePayload = 0x08
)

// An Answer is how a server ended a reconciliation request.
type Answer struct {
	// Offered are the indices the server offered (or sent).
	Offered []uint32
	// Rejected means the server refused the request (an error frame, such as
	// "does not serve this content", or a reject message) and offered nothing.
	Rejected bool
}

// ParseAnswer reads a server's side of a reconciliation request in package
// peer's wire format (frames of a uvarint length, a type byte, then for a
// payload frame one message of package reconcile) up to the frame that ends
// it: an offer or blocks message, a reject, or an error frame. Requests for
// more IBLT cells on the way are skipped. complete is false, with no error,
// while b holds no such frame yet. A frame longer than max, or one that does
// not decode, is an error wrapping ErrFrame. Allocation is bounded by len(b).
func ParseAnswer(b []byte, max int) (a Answer, complete bool, err error) {
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		switch {
		case k == 0:
			return Answer{}, false, nil
		case k < 0:
			return Answer{}, false, fmt.Errorf("%w: frame length overflows", ErrFrame)
		case n == 0 || n > uint64(max):
			return Answer{}, false, fmt.Errorf("%w: frame of %d bytes, limit %d", ErrFrame, n, max)
		case uint64(len(b)-k) < n:
			return Answer{}, false, nil
		}
		f := b[k : k+int(n)]
		b = b[k+int(n):]
		switch f[0] {
		case frameError:
			return Answer{Rejected: true}, true, nil
		case framePayload:
		default:
			return Answer{}, false, fmt.Errorf("%w: frame type %#x", ErrFrame, f[0])
		}
		m, err := reconcile.Decode(f[1:], reconcile.Limits{MaxMessage: max, MaxFilterBytes: max})
		if err != nil {
			return Answer{}, false, fmt.Errorf("%w: %w", ErrFrame, err)
		}
		switch m.Type {
		case reconcile.MsgOffer, reconcile.MsgBlocks:
			return Answer{Offered: m.Indices}, true, nil
		case reconcile.MsgReject:
			return Answer{Rejected: true}, true, nil
		}
		// A request for more cells (IBLT) or a filter: read on.
	}
	return Answer{}, false, nil
}
