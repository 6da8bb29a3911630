package swarm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/swarm/bans"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// FetchServed is the one fetch of every method: it runs a fetch of the
// served content root from srcs and sums it up.
func (p *Node) FetchServed(ctx context.Context, root chunker.ID, srcs []lpeer.ID, fc FetchConfig, start time.Time) (*Summary, error) {
	c := p.lib.Lookup(root[:])
	if c == nil {
		return nil, fmt.Errorf("peer: content %s is not served: %w", root, wire.ErrUnknownRoot)
	}
	t, err := p.newTarget(c, fc.Method)
	if err != nil {
		return nil, err
	}
	if fc.Stripes != nil && TreesOf(c) == nil {
		if err := p.Push(root, *fc.Stripes); err != nil {
			return nil, err
		}
	}
	if fc.Stripes == nil && !fc.NoJoin && TreesOf(c) == nil && serve.IsBlockMethod(fc.Method) && len(srcs)+len(fc.JoinAt) > 0 {
		// The peers named to join at, then the sources named first (a
		// ticket's seed).
		first := slices.Clone(fc.JoinAt)
		for _, id := range append(slices.Clone(fc.Sources), srcs...) {
			if !slices.Contains(first, id) {
				first = append(first, id)
			}
		}
		p.goroutine(func() { p.joinTrees(c, first, fc.JoinNear) })
	}
	// Its streams count their bytes in the counter of ctx, where those of
	// the manifest's request are (a new one when there is none).
	cnt := wire.CounterOf(ctx)
	if cnt == nil {
		cnt = new(wire.Counter)
		ctx = wire.WithCounter(ctx, cnt)
	}
	f := newFetch(p, c, t, fc, cnt)
	if !c.SetFetch(f) {
		return nil, fmt.Errorf("peer: content %s is being fetched already", root)
	}
	if fc.Started != nil {
		fc.Started()
	}
	ids, until := f.bans.Load()
	for _, id := range ids {
		u := p.guard.BanUntil(id, until[id])
		p.log.Info("peer banned by an earlier fetch", "peer", id, "until", u)
		f.event(FetchEvent{Kind: FetchPeerStillBanned, Peer: id, Block: -1, Until: u})
	}
	sum, err := f.run(ctx, srcs)
	c.ClearFetch(f)
	bans.Remove(c.Store, p.log)
	sum.Out = c.Store.Dir()
	if fp := c.Store.FilePath(); fp != "" {
		sum.Out = fp
	}
	sum.Files, sum.FileCount = outputFiles(c.Store)
	sum.Seconds = p.clk.Since(start).Seconds()
	decode, terr := t.Finish()
	sum.DecodeSeconds = decode.Seconds()
	if err == nil {
		err = terr
	}
	if serr := c.Store.Sync(); serr != nil && err == nil && !errors.Is(serr, chunker.ErrClosed) {
		err = fmt.Errorf("peer: sync %s: %w", c.Store.Dir(), serr)
	}
	return sum, err
}

// FinishedSummary is the summary of a fetch that found its output complete
// (no bytes on the network).
func (p *Node) FinishedSummary(st *chunker.Store, fc FetchConfig, start time.Time) *Summary {
	m := st.Manifest()
	files, n := outputFiles(st)
	out := st.Dir()
	if fp := st.FilePath(); fp != "" {
		out = fp
	}
	return &Summary{Files: files, FileCount: n, Root: m.ID().String(), Method: fc.Method.String(), Out: out, Blocks: m.BlockCount(), Bytes: m.TotalSize(),
		Resumed: m.BlockCount(), Peers: []PeerShare{}, Seconds: p.clk.Since(start).Seconds()}
}

// newTarget returns the target of a fetch of c with method m: the blocks of
// its store with a block method, the content's other units otherwise.
func (p *Node) newTarget(c *serve.Content, m reconcile.Method) (serve.Target, error) {
	if serve.IsBlockMethod(m) {
		return serve.NewBlockTarget(c, m), nil
	}
	alt := c.AltSet()
	if alt == nil || !alt.Responder().Serves(m) {
		return nil, fmt.Errorf("peer: content %s is not served with method %v: %w", c.Man.ID(), m, reconcile.ErrMethod)
	}
	return alt.NewTarget(p.ctx, c)
}
