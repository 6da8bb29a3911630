package peer

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/reconcile-p2p/reconcile/peer/admit"
	"github.com/reconcile-p2p/reconcile/peer/serve"
)

// TestBanExpires: on a service whose clock is a fake one, a banned peer's
// streams are refused for banFor, and admitted again once the clock has
// moved past the ban, without the test sleeping. Abuse points decay with
// the same clock: strikes far apart never add up to a ban.
func TestBanExpires(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := clockwork.NewFakeClock()
	seed := newTestPeer(t, WithClock(fc))
	mallory := connectedPeer(ctx, t, seed)
	id := mallory.ID()
	until := seed.guard.Ban(id)
	if want := fc.Now().Add(serve.BanFor); !until.Equal(want) {
		t.Fatalf("banned until %v, want %v (banFor on the service's clock)", until, want)
	}
	open := func() error {
		s, err := mallory.Host().NewStream(ctx, seed.ID(), ProtoPeers)
		if err != nil {
			return err
		}
		defer s.Close()
		// A refused stream is reset by the service's handler (or, on a host
		// New built, by its resource manager before negotiation).
		s.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := s.Write([]byte{0}); err != nil {
			return err
		}
		_, err = s.Read(make([]byte, 1))
		return err
	}
	if !seed.guard.IsBanned(id) {
		t.Fatal("not banned after ban")
	}
	if err := open(); err == nil {
		t.Fatal("a banned peer's stream was answered")
	}
	fc.Advance(serve.BanFor - time.Second)
	if !seed.guard.IsBanned(id) {
		t.Fatal("the ban ended a second early")
	}
	fc.Advance(time.Second)
	if seed.guard.IsBanned(id) {
		t.Fatal("still banned once the clock passed the ban")
	}

	// Strikes: three malformed frames at once ban; three an hour apart
	// do not (the score halves every minute).
	other := connectedPeer(ctx, t, seed)
	conn := seed.Host().Network().ConnsToPeer(other.ID())[0]
	for range 3 {
		seed.guard.Strike(conn, admit.StrikeMalformed, "test")
		fc.Advance(time.Hour)
	}
	if seed.guard.IsBanned(other.ID()) {
		t.Fatal("strikes an hour apart added up to a ban")
	}
	for range 3 {
		seed.guard.Strike(conn, admit.StrikeMalformed, "test")
	}
	if !seed.guard.IsBanned(other.ID()) {
		t.Fatal("three malformed frames at once: not banned")
	}
}
