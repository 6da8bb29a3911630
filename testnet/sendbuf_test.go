package testnet

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
)

// gateStream is a network.Stream whose writes wait for the gate to open, as
// a mock stream's wait for the other side to read; it records what was
// written and whether it was closed or reset.
type gateStream struct {
	network.Stream
	gate   chan struct{}
	mu     sync.Mutex
	got    []byte
	closed chan struct{}
	reset  bool
}

func (s *gateStream) Write(b []byte) (int, error) {
	<-s.gate
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, b...)
	return len(b), nil
}

func (s *gateStream) Close() error { close(s.closed); return nil }

func (s *gateStream) Reset() error {
	s.mu.Lock()
	s.reset = true
	s.mu.Unlock()
	return nil
}

// TestSendBuffered: writes return while the stream cannot take them, go out
// in order, and Close closes the stream after the last; after Reset writes
// fail.
func TestSendBuffered(t *testing.T) {
	gs := &gateStream{gate: make(chan struct{}), closed: make(chan struct{})}
	b := newSendBuffered(gs)
	var want []byte
	for i := range 5 {
		p := []byte{byte(i), byte(i)}
		if n, err := b.Write(p); n != 2 || err != nil {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
		p[0] = 99 // the caller may reuse its buffer
		want = append(want, byte(i), byte(i))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	close(gs.gate)
	<-gs.closed
	gs.mu.Lock()
	got := gs.got
	gs.mu.Unlock()
	if !bytes.Equal(got, want) {
		t.Errorf("written %v, want %v", got, want)
	}
	if _, err := b.Write([]byte{1}); err == nil {
		t.Errorf("write after close succeeded")
	}

	gs2 := &gateStream{gate: make(chan struct{}), closed: make(chan struct{})}
	close(gs2.gate)
	b2 := newSendBuffered(gs2)
	if err := b2.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Write([]byte{1}); !errors.Is(err, network.ErrReset) || !gs2.reset {
		t.Errorf("write after reset: %v (reset %v)", err, gs2.reset)
	}
}
