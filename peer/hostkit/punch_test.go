package hostkit

import (
	"testing"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
)

// TestPunchLog: the events of a hole punch are summed up per peer and
// worded with the transports tried and the error.
func TestPunchLog(t *testing.T) {
	var l punchLog
	id, _ := lpeer.Decode("12D3KooWNEg2yymzcQLMuoKt88DmN2GWu1AU5gVHCTYP2h2SFMDy")
	l.Trace(&holepunch.Event{Remote: id, Evt: &holepunch.StartHolePunchEvt{RemoteAddrs: []string{"/ip4/198.18.0.20/tcp/43033", "/ip4/198.18.0.20/udp/43033/quic-v1", "/ip4/198.18.0.21/tcp/1"}}})
	for a := 1; a <= 3; a++ {
		l.Trace(&holepunch.Event{Remote: id, Evt: &holepunch.HolePunchAttemptEvt{Attempt: a}})
	}
	l.Trace(&holepunch.Event{Remote: id, Evt: &holepunch.EndHolePunchEvt{Error: "dial tcp4 198.18.0.20:43033: connect: connection refused\n"}})
	h := &Host{punches: &l}
	p, ok := h.Punch(id)
	want := "hole punch over tcp and quic failed after 3 attempts: dial tcp4 198.18.0.20:43033: connect: connection refused"
	if !ok || p.String() != want {
		t.Fatalf("Punch = %+v %v, %q; want %q", p, ok, p.String(), want)
	}
	l.Trace(&holepunch.Event{Remote: id, Evt: &holepunch.StartHolePunchEvt{RemoteAddrs: []string{"/ip4/198.18.0.20/udp/1/quic-v1"}}})
	l.Trace(&holepunch.Event{Remote: id, Evt: &holepunch.EndHolePunchEvt{Success: true}})
	if p, _ := h.Punch(id); p.String() != "hole punch over quic succeeded" {
		t.Fatalf("after a new punch: %q", p.String())
	}
	if _, ok := (&Host{}).Punch(id); ok {
		t.Fatal("a host without a punch log knows a punch")
	}
}
