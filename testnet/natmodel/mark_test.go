package natmodel

import (
	"testing"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/peer/hostkit"
)

// Package peer sees a marked connection as relayed through the relay
// named, and the others as direct.
func TestMarkNetwork(t *testing.T) {
	mn := mocknet.New()
	defer mn.Close()
	var ids []lpeer.ID
	for range 4 {
		h, err := mn.GenPeer()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, h.ID())
	}
	if err := mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	if err := mn.ConnectAllButSelf(); err != nil {
		t.Fatal(err)
	}
	relay := ids[3]
	self := mn.Host(ids[0]).Network()
	marked := MarkNetwork(self, func(p lpeer.ID) ma.Multiaddr {
		if p == ids[1] {
			return CircuitAddr(relay, 0)
		}
		return nil
	})
	for _, tc := range []struct {
		id          lpeer.ID
		path, relay string
		limited     bool
	}{
		{ids[1], hostkit.PathRelayed, relay.String(), true},
		{ids[2], hostkit.PathDirect, "", false},
	} {
		if got := hostkit.PathOf(marked, tc.id); got != tc.path {
			t.Errorf("path to %s: %q, want %q", tc.id, got, tc.path)
		}
		if _, r := hostkit.Route(marked, tc.id); r != tc.relay {
			t.Errorf("relay to %s: %q, want %q", tc.id, r, tc.relay)
		}
		for _, c := range marked.ConnsToPeer(tc.id) {
			if c.Stat().Limited != tc.limited {
				t.Errorf("conn to %s limited %v, want %v", tc.id, c.Stat().Limited, tc.limited)
			}
		}
	}
	relayed := 0
	for _, c := range marked.Conns() {
		if hostkit.IsRelayed(c.RemoteMultiaddr()) {
			relayed++
		}
	}
	if relayed != len(self.ConnsToPeer(ids[1])) || relayed == 0 {
		t.Errorf("%d of Conns relayed, want those to %s", relayed, ids[1])
	}
	// The network below is unchanged.
	if hostkit.PathOf(self, ids[1]) != hostkit.PathDirect {
		t.Error("MarkNetwork changed the network below")
	}
}
