package flood_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/reconcile-p2p/reconcile/internal/flood"
)

// TestSpreadLoopbackSource: with Config.SpreadLoopback, the target sees
// identity i's connections come from flood.LoopbackSource(i), not from
// 127.0.0.1, and so do the redials after the target closed them (libp2p's
// TCP transport dials from the port it listens on, SO_REUSEPORT). The
// attack is one the target bans late (silent-reconcile): a banned identity's
// redials from its own address are refused before they connect.
func TestSpreadLoopbackSource(t *testing.T) {
	s, _, m, _ := seed(t, 1<<20, 64<<10)
	const identities = 4
	want := map[string]bool{}
	for i := range identities {
		want[flood.LoopbackSource(i)] = true
	}
	var mu sync.Mutex
	seen := map[string]int{} // remote IP: connections
	conns := 0
	redialled := make(chan struct{})
	s.Host().Network().Notify(&network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		ip, err := manet.ToIP(c.RemoteMultiaddr())
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("remote address %v: %v", c.RemoteMultiaddr(), err)
			return
		}
		seen[ip.String()]++
		conns++
		if conns == 2*identities {
			close(redialled)
		}
		if conns <= identities {
			// Close the first connection of each identity, as a target
			// that closes a banned peer's connection would: the redial
			// must come from the same address.
			go func() {
				time.Sleep(200 * time.Millisecond)
				c.Close()
			}()
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	actx, stop := context.WithCancel(ctx)
	var st flood.Stats
	done := make(chan error, 1)
	go func() {
		done <- flood.Run(actx, flood.Config{Target: s.AddrInfo(), Manifest: m, Identities: identities, Streams: 2,
			Attacks: []flood.Attack{flood.SilentReconcile}, SpreadLoopback: true}, &st)
	}()
	select {
	case <-redialled:
	case <-ctx.Done():
		t.Error("the identities did not redial after their connections were closed")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for ip, n := range seen {
		if !want[ip] {
			t.Errorf("%d connections from %s, want only %v", n, ip, want)
		}
	}
	if len(seen) != identities {
		t.Errorf("connections from %d addresses (%v), want %d", len(seen), seen, identities)
	}
	t.Logf("connections by source address: %v; attackers: %d dials, %d dial errors, %d streams, %d refused, %d junk bytes",
		seen, st.Dials.Load(), st.DialErrors.Load(), st.Streams.Load(), st.Refused.Load(), st.JunkBytes.Load())
}
