package testnet

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/testnet/update"
)

// content is the run's file: the bytes and the manifest the seed serves
// and, in the update scenario (Config.Update), version 1, which every
// fetcher holds from the start.
type content struct {
	data []byte
	m    *chunker.Manifest
	// old and oldData are version 1's manifest and bytes, delta what the
	// file shares with it (update scenario only: old is nil otherwise).
	old     *chunker.Manifest
	oldData []byte
	delta   update.Delta
}

// makeContent draws the run's file from cfg.Seed and cuts it by cfg's rule;
// with cfg.Update that file is version 1, and the content version 2
// (update.Edit).
func makeContent(ctx context.Context, cfg Config) (*content, error) {
	data := make([]byte, cfg.Size)
	cha := rand.NewChaCha8(seed32(cfg.Seed))
	_, _ = cha.Read(data)
	c := &content{data: data}
	bs, opts := cfg.BlockSize, []chunker.ChunkOption(nil)
	if !cfg.Chunking.IsZero() {
		bs, opts = 0, []chunker.ChunkOption{chunker.WithChunking(cfg.Chunking)}
	}
	var err error
	if cfg.Update > 0 {
		if c.old, err = chunker.ChunkReader(ctx, fileName, 0o644, bytes.NewReader(data), bs, opts...); err != nil {
			return nil, fmt.Errorf("testnet: chunk version 1: %w", err)
		}
		c.oldData, c.data = data, update.Edit(data, cfg.Update, cfg.UpdatePlaces, cfg.Seed)
	}
	if c.m, err = chunker.ChunkReader(ctx, fileName, 0o644, bytes.NewReader(c.data), bs, opts...); err != nil {
		return nil, fmt.Errorf("testnet: chunk: %w", err)
	}
	if c.old != nil {
		c.delta = update.Compare(c.old, c.m)
	}
	return c, nil
}

// moved returns the bytes and the blocks each fetcher lacks at the start:
// the whole file, or in the update scenario the new blocks.
func (c *content) moved() (int64, int) {
	if c.old != nil {
		return c.delta.NewBytes, c.delta.NewBlocks
	}
	return c.m.TotalSize(), c.m.BlockCount()
}

// unitBytes is the bytes of a block of the file: the block size, or the
// average of content-defined blocks.
func (c *content) unitBytes() int {
	if c.m.ContentDefined() {
		return c.m.AvgBlockLen()
	}
	return c.m.BlockSize()
}

// seedOption is the seed's rule for cutting the file, the run's.
func (c *content) seedOption() peer.SeedOption {
	if c.m.ContentDefined() {
		return peer.WithContentDefined(c.m.Chunking())
	}
	return peer.WithBlockSize(c.m.BlockSize())
}

// newStore makes a fetcher's store in dir: an empty one, or in the update
// scenario version 2's staged beside version 1 (update.Older), the blocks
// it took from version 1 noted in fig.
func (c *content) newStore(ctx context.Context, dir string, fig *update.Figures) (*chunker.Store, error) {
	if c.old == nil {
		s, err := chunker.CreateStore(ctx, dir, c.m, chunker.WithSyncEvery(1<<30))
		if err != nil {
			return nil, fmt.Errorf("testnet: store: %w", err)
		}
		return s, nil
	}
	s, st, err := update.Older(ctx, dir, c.old, c.oldData, c.m, chunker.WithSyncEvery(1<<30))
	if err != nil {
		return nil, fmt.Errorf("testnet: store: %w", err)
	}
	fig.AddReused(st.Blocks)
	return s, nil
}

// publish moves version 2 to its final name, over version 1's file, in
// the folder of every node checked whose store is complete and staged (the
// update scenario), as package peer's Fetch does once it has every block,
// noting the first failures in res.Errors.
func publish(res *Result, nodes []*node, checked []int) {
	for _, i := range checked {
		s := nodes[i].store
		if s == nil || !s.Staged() || !s.Complete() {
			continue
		}
		if _, err := s.Publish(chunker.PublishOptions{}); err != nil && len(res.Errors) < 10 {
			res.Errors = append(res.Errors, fmt.Sprintf("node %d: publish: %v", i, err))
		}
	}
}

// pathBound sets the update figures' bounds with latency (update.Figures'
// PathBoundMedianS, PathBoundMaxS): for each fetcher, the new bytes over
// the seed's upload plus the least latency of a path from the seed, or T*
// when larger. It returns the largest (0 when the run is no update or has
// no seed). It needs T* (res.TStarS) and the seed's upload.
func pathBound(res *Result, ov overlay, seed int) float64 {
	u := res.Update
	if u == nil || seed < 0 {
		return 0
	}
	first := 0.0
	if res.SeedUpBps > 0 {
		first = float64(u.NewBytes) / res.SeedUpBps
	}
	var b []float64
	for i, d := range ov.delays(seed) {
		if i != seed && d != math.MaxInt64 {
			b = append(b, max(res.TStarS, first+d.Seconds()))
		}
	}
	sort.Float64s(b)
	u.PathBoundMedianS, u.PathBoundMaxS = quantile(b, 0.5), quantile(b, 1)
	return u.PathBoundMaxS
}
