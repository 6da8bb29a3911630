package testnet

import (
	"encoding/binary"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// frame wraps a body of package peer's wire format: uvarint length, type, body.
func frame(typ byte, body []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(body)+1))
	return append(append(b, typ), body...)
}

func offerFrame(t testing.TB, idx ...uint32) []byte {
	m := reconcile.Message{Type: reconcile.MsgOffer, Session: 42, Indices: idx}
	body, err := m.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return frame(framePayload, body)
}

func TestParseAnswer(t *testing.T) {
	offer := offerFrame(t, 1, 5, 9, 300)
	reject, err := (&reconcile.Message{Type: reconcile.MsgReject, Reason: "no"}).AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	more, err := (&reconcile.Message{Type: reconcile.MsgMore, Cells: 64}).AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		in       []byte
		max      int
		want     Answer
		complete bool
		err      bool
	}{
		{"empty", nil, 1 << 20, Answer{}, false, false},
		{"offer", offer, 1 << 20, Answer{Offered: []uint32{1, 5, 9, 300}}, true, false},
		{"offer and more", append(slices.Clone(offer), 0xff, 0xff), 1 << 20, Answer{Offered: []uint32{1, 5, 9, 300}}, true, false},
		{"partial offer", offer[:len(offer)-1], 1 << 20, Answer{}, false, false},
		{"length only", offer[:1], 1 << 20, Answer{}, false, false},
		{"empty offer", offerFrame(t), 1 << 20, Answer{}, true, false},
		{"more cells, then offer", append(frame(framePayload, more), offer...), 1 << 20, Answer{Offered: []uint32{1, 5, 9, 300}}, true, false},
		{"more cells only", frame(framePayload, more), 1 << 20, Answer{}, false, false},
		{"error frame", frame(frameError, []byte("unknown root")), 1 << 20, Answer{Rejected: true}, true, false},
		{"reject", frame(framePayload, reject), 1 << 20, Answer{Rejected: true}, true, false},
		{"over the limit", offer, 4, Answer{}, false, true},
		{"zero length", []byte{0}, 1 << 20, Answer{}, false, true},
		{"unknown type", frame(0x42, []byte{1, 2}), 1 << 20, Answer{}, false, true},
		{"garbage payload", frame(framePayload, []byte{0xc1, 0xc1}), 1 << 20, Answer{}, false, true},
		{"length overflow", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 1 << 20, Answer{}, false, true},
	} {
		got, complete, err := ParseAnswer(tc.in, tc.max)
		if (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrFrame)) {
			t.Errorf("%s: error %v, want error %v (ErrFrame)", tc.name, err, tc.err)
		}
		if complete != tc.complete || got.Rejected != tc.want.Rejected || !slices.Equal(got.Offered, tc.want.Offered) {
			t.Errorf("%s: got %+v complete %v, want %+v complete %v", tc.name, got, complete, tc.want, tc.complete)
		}
	}
}

func FuzzParseAnswer(f *testing.F) {
	f.Add(offerFrame(f, 1, 2, 3), 1<<20)
	f.Add(frame(frameError, []byte("x")), 100)
	f.Add([]byte{0x80}, 10)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		if max <= 0 || max > 1<<24 {
			max = 1 << 20
		}
		a, complete, err := ParseAnswer(b, max)
		if err != nil && (complete || a.Offered != nil || a.Rejected) {
			t.Fatalf("error %v with a result", err)
		}
		if !complete && (a.Offered != nil || a.Rejected) {
			t.Fatal("an answer from an incomplete frame")
		}
		if a.Rejected && a.Offered != nil {
			t.Fatal("rejected with offers")
		}
		if len(a.Offered) > len(b) {
			t.Fatalf("%d indices from %d bytes", len(a.Offered), len(b))
		}
	})
}

func protocolID(s string) protocol.ID { return protocol.ID(s) }

// fakeStream is a network.Stream that swallows writes.
type fakeStream struct{ network.Stream }

func (fakeStream) Write(b []byte) (int, error) { return len(b), nil }

// held is a set of units for audits.
type held map[int]bool

func (h held) has(i int) bool { return h[i] }
func (h held) held() []int {
	var out []int
	for i := range h {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

func TestOfferAudit(t *testing.T) {
	// The server held 1, 2, 3, 4; the fetcher holds 2; 1 and 3 are offered,
	// so 4 is missed. The answer arrives in two writes.
	c := &counters{}
	a := &offerAudit{c: c, before: []int{1, 2, 3, 4}, fetcher: held{2: true}}
	s := &countingStream{Stream: fakeStream{}, n: &c.filter, tap: a}
	b := offerFrame(t, 1, 3)
	for _, part := range [][]byte{b[:3], b[3:], offerFrame(t, 4)} {
		if _, err := s.Write(part); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.filter.Load(); got != int64(len(b)+len(offerFrame(t, 4))) {
		t.Errorf("counted %d bytes", got)
	}
	if c.sessions.Load() != 1 || c.offered.Load() != 2 || c.missed.Load() != 1 {
		t.Errorf("sessions %d offered %d missed %d, want 1 2 1", c.sessions.Load(), c.offered.Load(), c.missed.Load())
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

func BenchmarkParseAnswer(b *testing.B) {
	idx := make([]uint32, 4096)
	for i := range idx {
		idx[i] = uint32(2 * i)
	}
	f := offerFrame(b, idx...)
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		if _, ok, err := ParseAnswer(f, 1<<20); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(idx)), "ns/index")
}
