package peer

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/sched"
)

// TestEndgameFetch: with WithEndgame, a fetch from an honest seed and a
// mute one (it reads wants and sends nothing, for longer than the endgame
// waits) ends with the file intact, and asks for no block more than twice.
func TestEndgameFetch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, tk, src := seedFile(t, dir, 512<<10, 16<<10)
	mute := mutePeer(ctx, t, src)
	tk.Peers = append([]AddrInfo{mute.AddrInfo()}, tk.Peers...)
	fetcher := newTestPeer(t, WithStallTimeout(5*time.Second))
	out := filepath.Join(dir, "out")
	sum, err := fetcher.Fetch(ctx, tk, out, WithEndgame())
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
	if sum.Fetched != sum.Blocks || sum.Redundant > sched.EndgameBlocks {
		t.Errorf("summary %+v", sum)
	}
}
