package testnet

import (
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/reconcile-p2p/reconcile/peer"
)

func protocolID(s string) protocol.ID { return protocol.ID(s) }

// fakeStream is a network.Stream that swallows writes.
type fakeStream struct{ network.Stream }

func (fakeStream) Write(b []byte) (int, error) { return len(b), nil }

// held is a set of units for audits.
type held map[int]bool

func (h held) Has(i int) bool { return h[i] }

func TestAudit(t *testing.T) {
	// The server held 1, 2, 3, 4; the fetcher holds 2; 1 and 3 are found,
	// so 4 is missed. A super-seed that found 1, 3, 4 and offered 1 missed
	// nothing. Events of other kinds and of peers outside the run are not
	// audited.
	c := &counters{}
	fetcher := lpeer.ID("fetcher")
	obs := c.audit(func(id lpeer.ID) holdings {
		if id == fetcher {
			return held{2: true}
		}
		return nil
	})
	obs(peer.ServeEvent{Kind: peer.EventAnswered, Peer: fetcher, Held: []int{1, 2, 3, 4}, Offered: []int{1, 3}, Found: []int{1, 3}})
	obs(peer.ServeEvent{Kind: peer.EventAnswered, Peer: fetcher, Held: []int{1, 2, 3, 4}, Offered: []int{1}, Found: []int{1, 3, 4}})
	obs(peer.ServeEvent{Kind: peer.EventAnswered, Peer: "stranger", Held: []int{1, 2, 3, 4}})
	obs(peer.ServeEvent{Kind: peer.EventBlockSent, Peer: fetcher, Index: 1, Bytes: 10})
	if c.sessions.Load() != 2 || c.offered.Load() != 3 || c.missed.Load() != 1 {
		t.Errorf("sessions %d offered %d missed %d, want 2 3 1", c.sessions.Load(), c.offered.Load(), c.missed.Load())
	}
}

func TestCounterByProtocol(t *testing.T) {
	c := &counters{}
	for _, tc := range []struct {
		proto    string
		outbound bool
		want     *atomic.Int64
	}{
		{string(peer.ProtoReconcile), true, &c.filter},
		{string(peer.ProtoReconcile), false, &c.filter},
		{string(peer.ProtoBlocks), true, &c.want},
		{string(peer.ProtoBlocks), false, &c.blocks},
		{string(peer.ProtoManifest), false, &c.manifest},
		{string(peer.ProtoPeers), true, &c.peers},
		{"/ipfs/id/1.0.0", true, nil},
	} {
		if got := c.counter(protocolID(tc.proto), tc.outbound); got != tc.want {
			t.Errorf("%s outbound %v: wrong counter", tc.proto, tc.outbound)
		}
	}
}

func BenchmarkCountingWrite(b *testing.B) {
	c := &counters{}
	s := &countingStream{Stream: fakeStream{}, n: &c.blocks}
	buf := make([]byte, 256<<10)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		s.Write(buf)
	}
}
