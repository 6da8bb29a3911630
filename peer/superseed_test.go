package peer

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/multiformats/go-multiaddr"
)

// TestSuperSeedSwarm: three fetchers of a super-seed, each told of the
// others, end byte-identical, and get part of the file from each other: the
// seed offers each only a few blocks at a time, the first copies first.
func TestSuperSeedSwarm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	src := writeRandomFile(t, dir, "data.bin", 1<<20, 7)
	seed := newTestPeer(t, WithServeRate(1<<20))
	tk, err := seed.Seed(ctx, src, WithBlockSize(16<<10), WithSuperSeeding())
	if err != nil {
		t.Fatal(err)
	}
	fetchers := []*Peer{newTestPeer(t), newTestPeer(t), newTestPeer(t)}
	type result struct {
		sum *Summary
		err error
	}
	res := make(chan result, len(fetchers))
	for j, p := range fetchers {
		var others []multiaddr.Multiaddr
		for k, q := range fetchers {
			if k != j {
				others = append(others, q.Addrs()...)
			}
		}
		go func() {
			s, err := p.Fetch(ctx, tk, filepath.Join(dir, fmt.Sprint("out", j)), WithPeers(others...))
			res <- result{s, err}
		}()
	}
	fromPeers := 0
	for range fetchers {
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		for _, ps := range r.sum.Peers {
			if ps.Peer != seed.ID().String() {
				fromPeers += ps.Blocks
			}
		}
	}
	for j := range fetchers {
		sameFile(t, src, filepath.Join(dir, fmt.Sprint("out", j), "data.bin"))
	}
	if fromPeers == 0 {
		t.Errorf("the fetchers sent each other no block")
	}
	var served int64
	for _, n := range seed.ServedBytes(tk.Root) {
		served += n
	}
	copies := float64(served) / (1 << 20)
	t.Logf("the seed sent %.2f copies; the fetchers sent each other %d blocks", copies, fromPeers)
	if copies > 1.2 {
		t.Errorf("the seed sent %.2f copies of the file to 3 fetchers that trade, want at most 1.2", copies)
	}
}
