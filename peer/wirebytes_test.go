package peer

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
)

// TestWireBytes: a fetch counts the bytes of its streams: at least the
// blocks it lacked and the reconciliation it received, at most a few
// percent more (framing, manifest, requests); what it sends (hello, filter,
// wants, haves) is much smaller. A fetch of an output complete already
// puts nothing on the network and reports 0.
func TestWireBytes(t *testing.T) {
	const size, block = 2<<20 + 123, 16 << 10
	tests := []struct {
		name string
		held func(i int) bool // the blocks in the output before the fetch (nil: none)
	}{
		{name: "fresh"},
		{name: "half held", held: func(i int) bool { return i%2 == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dir := t.TempDir()
			seed, tk, src := seedFile(t, dir, size, block)
			m := seed.lib.Lookup(tk.Root[:]).Man
			out := filepath.Join(dir, "out")
			missing := m.TotalSize()
			if tt.held != nil {
				prefill(t, src, m, out, tt.held)
				for i := range m.BlockCount() {
					if tt.held(i) {
						missing -= int64(m.BlockLen(i))
					}
				}
			}
			sum, err := newTestPeer(t).Fetch(ctx, tk, out)
			if err != nil {
				t.Fatal(err)
			}
			sameFile(t, src, filepath.Join(out, "data.bin"))
			recv, sent := sum.WireBytesReceived, sum.WireBytesSent
			t.Logf("%d bytes missing: %d received (%d of blocks, %d of filters), %d sent (%d of filters)",
				missing, recv, sum.Received, sum.FilterBytes-sum.FilterSent, sent, sum.FilterSent)
			if most := missing + missing/20 + 64<<10; recv < missing || recv > most {
				t.Errorf("%d bytes received for %d missing; want %d to %d", recv, missing, missing, most)
			}
			if recv < sum.Received+sum.FilterBytes-sum.FilterSent {
				t.Errorf("%d bytes received, fewer than the blocks' %d and the filters' %d", recv, sum.Received, sum.FilterBytes-sum.FilterSent)
			}
			if sent < max(1, sum.FilterSent) || sent > missing/32 {
				t.Errorf("%d bytes sent; want at least the filters' %d (and 1), at most %d", sent, sum.FilterSent, missing/32)
			}
			again, err := newTestPeer(t).Fetch(ctx, tk, out)
			if err != nil {
				t.Fatal(err)
			}
			if again.Fetched != 0 || again.WireBytesReceived != 0 || again.WireBytesSent != 0 {
				t.Errorf("the fetch of a complete output fetched %d blocks in %d bytes received, %d sent; want none", again.Fetched, again.WireBytesReceived, again.WireBytesSent)
			}
		})
	}
}

// TestWireBytesPushed: the blocks pushed down the stripe trees
// (Service.Push) count in the fetch that takes them in, as fetched ones do.
func TestWireBytesPushed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 1<<20, 1)
	a := w.peers[0]
	// Two stripes, seed -> a; a fetches nothing its parent is to push.
	if err := a.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{w.seed.ID(), w.seed.ID()}, RepairAfter: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	s := w.fetchFromSeed(ctx, t, a, Stripes{Parents: make([]lpeer.ID, 2), Children: [][]lpeer.ID{{a.ID()}, {a.ID()}}})
	if s.Pushed != s.Blocks {
		t.Fatalf("%d of %d blocks pushed, want all", s.Pushed, s.Blocks)
	}
	if most := s.Received + s.Received/20 + 64<<10; s.WireBytesReceived < s.Received || s.WireBytesReceived > most {
		t.Errorf("%d bytes of streams received for %d bytes of pushed blocks; want %d to %d", s.WireBytesReceived, s.Received, s.Received, most)
	}
}
