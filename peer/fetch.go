package peer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// Fetch downloads the content of ticket t into the folder out, from the
// ticket's peers, the WithPeers and WithSources peers and the peers they
// name, reconciling with each (complete reconciliation by default) so that
// each sends only blocks this peer lacks, never asking two peers for the same
// block unless one fails or stalls. Every block is verified before it is
// stored; blocks are served to other peers while the fetch runs and
// afterwards, until Close or Unserve. If out already holds a store of the
// same content, the fetch resumes from its verified blocks; if that store is
// complete, Fetch serves it and returns without any network work.
//
// Errors: ErrManifestMismatch if out holds other content or a peer's
// manifest does not match the root; ErrNoPeers when no peer can be reached
// or the peers left lack blocks; store errors (such as a full disk) as they
// come. On error, every verified block stays in out.
func (p *Service) Fetch(ctx context.Context, t Ticket, out string, opts ...FetchOption) (*Summary, error) {
	fc, err := newFetchConfig(opts)
	if err != nil {
		return nil, err
	}
	start := p.clk.Now()
	fileMode := fc.outFile && !isDir(out)
	st, err := p.cl.openOutput(ctx, out, t.Root, fileMode, fc.check)
	if err != nil {
		return nil, err
	}
	if st != nil && st.Complete() {
		if err := p.addContent(st, nil, false); err != nil {
			st.Close()
			return nil, err
		}
		removeBanFile(st, p.log)
		return p.cl.finishedSummary(st, fc, start), nil
	}
	srcs := p.cl.connectAll(ctx, t.Peers, fc.peers, fc.sources)
	if len(srcs) == 0 && (st == nil || !serve.IsBlockMethod(fc.method)) {
		if st != nil {
			st.Close()
		}
		return nil, fmt.Errorf("%w: could not connect to %s", ErrNoPeers, anyOf(len(t.Peers)+len(fc.peers)+len(fc.sources)))
	}
	var m *chunker.Manifest
	if st != nil {
		m = st.Manifest()
	} else if m, err = p.cl.fetchManifest(ctx, t.Root, srcs); err != nil {
		return nil, err
	}
	// A method that fetches other units than the blocks gets what it needs
	// to check them first (the header of the content's altUnits).
	var alt serve.AltUnits
	if !serve.IsBlockMethod(fc.method) {
		if alt, err = p.cl.fetchAlt(ctx, fc.method, t.Root, srcs, m); err != nil {
			if st != nil {
				st.Close()
			}
			return nil, err
		}
	}
	if st == nil {
		if fileMode {
			st, err = chunker.CreateFileStore(ctx, out, m, p.cfg.syncOption())
		}
		if !fileMode || errors.Is(err, chunker.ErrNotFile) {
			st, err = chunker.CreateStore(ctx, out, m, p.cfg.syncOption())
		}
		if err != nil {
			return nil, fmt.Errorf("peer: create %s: %w", out, err)
		}
	}
	if err := p.addContent(st, alt, false); err != nil {
		st.Close()
		return nil, err
	}
	return p.cl.fetchServed(ctx, m.ID(), srcs, fc, start)
}

// FetchServed downloads the blocks a served content lacks (one added with
// Serve, or left by an earlier fetch) from the WithPeers and WithSources
// peers, every peer that reconciles with this one meanwhile and the peers
// they name, as Fetch does, into the content's own store. With
// WithMethod(reconcile.Byers) the content's coded blocks are used (given to
// Serve with WithCoded), or fetched from the sources' coded header.
func (p *Service) FetchServed(ctx context.Context, root chunker.ID, opts ...FetchOption) (*Summary, error) {
	fc, err := newFetchConfig(opts)
	if err != nil {
		return nil, err
	}
	start := p.clk.Now()
	c := p.lib.Lookup(root[:])
	if c == nil {
		return nil, fmt.Errorf("peer: content %s is not served: %w", root, ErrUnknownRoot)
	}
	srcs := p.cl.connectAll(ctx, nil, fc.peers, fc.sources)
	if !serve.IsBlockMethod(fc.method) && c.AltSet() == nil {
		alt, err := p.cl.fetchAlt(ctx, fc.method, root, srcs, c.Man)
		if err != nil {
			return nil, err
		}
		c.SetAlt(alt)
	}
	return p.cl.fetchServed(ctx, root, srcs, fc, start)
}

// fetchServed is the one fetch of every method: it runs a fetch of the
// served content root from srcs and sums it up.
func (p *client) fetchServed(ctx context.Context, root chunker.ID, srcs []lpeer.ID, fc fetchConfig, start time.Time) (*Summary, error) {
	c := p.lib.Lookup(root[:])
	if c == nil {
		return nil, fmt.Errorf("peer: content %s is not served: %w", root, ErrUnknownRoot)
	}
	t, err := p.newTarget(c, fc.method)
	if err != nil {
		return nil, err
	}
	if fc.stripes != nil && treesOf(c) == nil {
		if err := p.Push(root, *fc.stripes); err != nil {
			return nil, err
		}
	}
	f := newFetch(p.Service, c, t, fc)
	if !c.SetFetch(f) {
		return nil, fmt.Errorf("peer: content %s is being fetched already", root)
	}
	ids, until := f.bans.load()
	for _, id := range ids {
		u := p.guard.BanUntil(id, until[id])
		p.log.Info("peer banned by an earlier fetch", "peer", id, "until", u)
		f.event(FetchEvent{Kind: FetchPeerStillBanned, Peer: id, Block: -1, Until: u})
	}
	sum, err := f.run(ctx, srcs)
	c.ClearFetch(f)
	removeBanFile(c.Store, p.log)
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

// openOutput opens the store in out for root, or returns nil if out holds
// none yet. A store of other content is ErrManifestMismatch.
func (p *client) openOutput(ctx context.Context, out string, root chunker.ID, fileMode bool, check func(done, total int)) (*chunker.Store, error) {
	sopts := []chunker.StoreOption{chunker.WithID(root), p.cfg.syncOption(), chunker.WithMaxManifestBytes(p.cfg.Limits.MaxManifestBytes)}
	if p.cfg.syncEvery != 1 {
		// Blocks stored after the last group fsync have no record yet after a
		// crash; re-hashing the output finds those whose bytes made it to
		// disk, so they are not downloaded again.
		sopts = append(sopts, chunker.WithVerify())
		if check != nil {
			sopts = append(sopts, chunker.WithCheckProgress(check))
		}
	}
	var st *chunker.Store
	var err error
	if fileMode {
		st, err = chunker.OpenFileStore(ctx, out, sopts...)
	} else {
		st, err = chunker.OpenStore(ctx, out, sopts...)
	}
	switch {
	case err == nil:
		if st.Manifest().ID() != root {
			st.Close()
			return nil, fmt.Errorf("%w: %s holds content %s, the ticket is for %s", ErrManifestMismatch, out, st.Manifest().ID(), root)
		}
		return st, nil
	case errors.Is(err, chunker.ErrNotFound):
		return nil, nil
	default:
		return nil, fmt.Errorf("peer: open %s: %w", out, err)
	}
}

// finishedSummary is the summary of a fetch that found its output complete.
func (p *client) finishedSummary(st *chunker.Store, fc fetchConfig, start time.Time) *Summary {
	m := st.Manifest()
	files, n := outputFiles(st)
	out := st.Dir()
	if fp := st.FilePath(); fp != "" {
		out = fp
	}
	return &Summary{Files: files, FileCount: n, Root: m.ID().String(), Method: fc.method.String(), Out: out, Blocks: m.BlockCount(), Bytes: m.TotalSize(),
		Resumed: m.BlockCount(), Peers: []PeerShare{}, Seconds: p.clk.Since(start).Seconds()}
}

// isDir reports whether path is an existing folder.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// newTarget returns the target of a fetch of c with method m: the blocks of
// its store with a block method, the content's other units otherwise.
func (p *client) newTarget(c *serve.Content, m reconcile.Method) (serve.Target, error) {
	if serve.IsBlockMethod(m) {
		return serve.NewBlockTarget(c, m), nil
	}
	alt := c.AltSet()
	if alt == nil || !alt.Responder().Serves(m) {
		return nil, fmt.Errorf("peer: content %s is not served with method %v: %w", c.Man.ID(), m, reconcile.ErrMethod)
	}
	return alt.NewTarget(p.ctx, c)
}
