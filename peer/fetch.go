package peer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/swarm"
	"github.com/reconcile-p2p/reconcile/peer/swarm/bans"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Fetch downloads the content of ticket t into the folder out, from the
// ticket's peers, the WithPeers and WithSources peers and the peers they
// name, reconciling with each (complete reconciliation by default) so that
// each sends only blocks this peer lacks, never asking two peers for the same
// block unless one fails or stalls. Every block is verified before it is
// stored; blocks are served to other peers while the fetch runs and
// afterwards, until Close or Unserve. If out already holds a store of the
// same content, the fetch resumes from its verified blocks; if that store is
// complete, Fetch serves it and returns without any network work. A fetch
// that reaches none of the ticket's and WithPeers peers, and holds no
// manifest of the content yet, looks the root up in the DHT and on the LAN
// (when the service runs either) for up to 30 s, as FetchRoot does, and
// fetches from the providers it finds: fetchers that went on seeding after
// the ticket's seed left.
//
// Outputs are never half-true. One fetch at a time writes to out (a second
// one fails at once with chunker.ErrLocked, naming the first). Until the
// content is complete its files live in the store's state folder; then each
// moves to its final name in one rename (chunker.Store.Publish). What is at
// the final names meanwhile, such as an older version of the content, stays
// as it was, and every block it shares with the content is taken from it
// rather than downloaded (also from the other contents fetched into an
// output folder that share a block with it, such as a version whose top
// folder was named otherwise, and from the WithReuse paths). The blocks an edit
// fell in are asked of the ticket's and WithPeers peers as deltas against
// the older bytes that stood there (ProtoDelta, package peer/delta; see
// WithoutDeltas), and the rest are fetched. With WithDelete the files the
// new version lacks go once it is in place.
//
// Errors: ErrManifestMismatch if out holds an unfinished download of other
// content or a peer's manifest does not match the root; ErrNoPeers when no
// peer can be reached or the peers left lack blocks; store errors (such as a
// full disk) as they come. On error, every verified block stays in out's
// state, and the same call resumes.
func (p *Service) Fetch(ctx context.Context, t Ticket, out string, opts ...FetchOption) (*Summary, error) {
	return p.fetch(ctx, t, out, true, opts)
}

// fetch is Fetch; lookup says whether a fetch that reaches none of its
// peers looks up other providers of the content (FetchRoot has looked
// already).
func (p *Service) fetch(ctx context.Context, t Ticket, out string, lookup bool, opts []FetchOption) (*Summary, error) {
	fc, err := newFetchConfig(opts)
	if err != nil {
		return nil, err
	}
	start := p.clk.Now()
	fileMode := fc.OutFile && !isDir(out) && !strings.HasSuffix(out, "/") && !strings.HasSuffix(out, string(filepath.Separator))
	lock, err := p.lockOutput(out, fileMode)
	if err != nil {
		return nil, err
	}
	// Released at the end; a state folder that holds nothing but the lock
	// (a fetch that failed before it stored anything) goes with it.
	defer func() { lock.Abandon() }() // the folder's, if out turns out to be one
	st, older, basis, err := p.cl.openOutput(ctx, out, t.Root, fileMode, fc.Check)
	fc.Older = older
	if err != nil {
		return nil, err
	}
	if st != nil && st.Complete() {
		if _, err := st.Publish(chunker.PublishOptions{Delete: fc.Delete}); err != nil {
			st.Close()
			return nil, fmt.Errorf("peer: %w", err)
		}
		if err := p.addContent(st, nil, false); err != nil {
			st.Close()
			return nil, err
		}
		bans.Remove(st, p.log)
		return p.nd.FinishedSummary(st, fc, start), nil
	}
	var olderMans []*chunker.Manifest // a folder's other contents (older versions)
	if !fileMode {
		olderMans = stateManifests(out, older, p.cfg.Limits.MaxManifestBytes)
	}
	// The fetch's streams, the manifest's first, count their bytes in one
	// counter (Summary.WireBytesReceived).
	ctx = wire.WithCounter(ctx, new(wire.Counter))
	// When the ticket's peers are gone (none reached, or none sends the
	// manifest), others may hold the content: the fetchers that went on
	// seeding it. They are looked up once, while the ticket's peers are
	// dialled again.
	lookup = lookup && st == nil && p.discoveryOf() != nil
	late := newLateSources(p.lib, t.Root)
	srcs := p.cl.connectAll(ctx, t.Peers, fc.Peers, fc.Sources, dialHooks{events: fc.Events, late: late.add, early: lookup})
	looked := false
	lookMore := func() []lpeer.ID {
		if !lookup || looked {
			return nil
		}
		looked = true
		more := p.providerSources(ctx, t.Root, fc, late)
		srcs = uniqueIDs(append(srcs, more...))
		return more
	}
	if len(srcs) == 0 {
		lookMore()
	}
	srcs = late.take(srcs) // the ticket's peers reached meanwhile
	if len(srcs) == 0 && (st == nil || !serve.IsBlockMethod(fc.Method)) {
		if st != nil {
			st.Close()
		}
		err := fmt.Errorf("%w: could not connect to %s", ErrNoPeers, anyOf(len(t.Peers)+len(fc.Peers)+len(fc.Sources)))
		if looked {
			err = fmt.Errorf("%w, nor to a provider found in the DHT or on the LAN", err)
		}
		return nil, err
	}
	var m *chunker.Manifest
	if st != nil {
		m = st.Manifest()
	} else {
		if basis == nil && len(olderMans) > 0 {
			// A folder's older stores stay until the new one is published.
			basis = olderMans[0]
		}
		m, err = p.nd.FetchManifest(ctx, t.Root, srcs, basis)
		if errors.Is(err, ErrNoPeers) {
			if more := lookMore(); len(more) > 0 {
				m, err = p.nd.FetchManifest(ctx, t.Root, more, basis)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	// A method that fetches other units than the blocks gets what it needs
	// to check them first (the header of the content's altUnits).
	var alt serve.AltUnits
	if !serve.IsBlockMethod(fc.Method) {
		if alt, err = p.cl.fetchAlt(ctx, fc.Method, t.Root, srcs, m); err != nil {
			if st != nil {
				st.Close()
			}
			return nil, err
		}
	}
	if st == nil {
		sopts := []chunker.StoreOption{p.cfg.syncOption(), chunker.WithStaging()}
		if fileMode {
			st, err = chunker.CreateFileStore(ctx, out, m, sopts...)
			if errors.Is(err, chunker.ErrNotFile) {
				// The content is a folder: out is its output folder, whose
				// lock this fetch takes instead of the file's (that state
				// folder goes).
				if lock, err = p.relockFolder(out, lock); err != nil {
					return nil, err
				}
				fileMode = false
			}
		}
		if !fileMode {
			st, err = chunker.CreateStore(ctx, out, m, sopts...)
		}
		if err != nil {
			return nil, fmt.Errorf("peer: create %s: %w", out, err)
		}
	}
	// The blocks local files hold: the older version at the final names
	// first, then the other contents fetched into the output folder (an
	// older version whose top folder or file had another name), then the
	// WithReuse paths.
	reused, err := st.Reuse(ctx, reusePaths(st, m, olderMans, fc.Reuse), fc.ReuseProgress)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("peer: %w", err)
	}
	// The runs an edit fell in, as deltas against the older bytes there.
	srcs = late.take(srcs)
	var ds swarm.DeltaStats
	if len(reused.Bases) > 0 && serve.IsBlockMethod(fc.Method) && !fc.NoDeltas {
		if ds, err = p.nd.FetchDeltas(ctx, st, reused.Bases, srcs); err != nil {
			st.Close()
			return nil, fmt.Errorf("peer: %w", err)
		}
	}
	if err := p.addContent(st, alt, false); err != nil {
		st.Close()
		return nil, err
	}
	fc.Started = late.started
	sum, err := p.nd.FetchServed(ctx, m.ID(), late.take(srcs), fc, start)
	if sum != nil {
		sum.ReusedBlocks, sum.ReusedBytes = reused.Blocks, reused.Bytes
		sum.DeltaBlocks, sum.DeltaBytes = ds.Blocks, ds.Bytes
		sum.Rejected += ds.Rejected
		sum.Resumed = max(sum.Resumed-reused.Blocks-ds.Blocks, 0)
	}
	if err != nil {
		return sum, err
	}
	if _, err := st.Publish(chunker.PublishOptions{Delete: fc.Delete}); err != nil {
		return sum, fmt.Errorf("peer: %w", err)
	}
	return sum, nil
}

// stateManifests returns the manifests of the contents ids whose stores
// the output folder out holds, those it can read.
func stateManifests(out string, ids []chunker.ID, limit int) []*chunker.Manifest {
	var ms []*chunker.Manifest
	for _, id := range ids {
		if m, err := chunker.StateManifest(filepath.Join(out, chunker.MetaDir, id.String()), limit); err == nil {
			ms = append(ms, m)
		}
	}
	return ms
}

// reusePaths lists the local files and folders a fetch of m into st takes
// blocks from: what stands at m's final name (an older version), the final
// names of the other contents the output folder holds that share a block
// with m (older is their manifests: a version whose top folder or file was
// named otherwise, such as data-v1 for data-v2; unrelated contents are not
// read), then the paths the user named.
func reusePaths(st *chunker.Store, m *chunker.Manifest, older []*chunker.Manifest, named []string) []string {
	paths := []string{st.FinalPath(m.Top())}
	var hashes map[[chunker.HashSize]byte]struct{}
	for _, om := range older {
		p := st.FinalPath(om.Top())
		if om.Top() == "" || slices.Contains(paths, p) {
			continue
		}
		if hashes == nil {
			hashes = make(map[[chunker.HashSize]byte]struct{}, m.BlockCount())
			for i := range m.BlockCount() {
				hashes[m.BlockHash(i)] = struct{}{}
			}
		}
		for i := range om.BlockCount() {
			if _, ok := hashes[om.BlockHash(i)]; ok {
				paths = append(paths, p)
				break
			}
		}
	}
	return append(paths, named...)
}

// lockOutput takes the lock of the output out (a single file's when file),
// for this fetch alone.
func (p *Service) lockOutput(out string, file bool) (*chunker.OutputLock, error) {
	lock, err := chunker.LockOutput(out, file, p.lockOwner())
	if errors.Is(err, chunker.ErrLocked) {
		return nil, fmt.Errorf("peer: %w (wait for that fetch to end, or stop it)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	return lock, nil
}

// relockFolder takes the lock of the output folder out and abandons the
// single file's lock held, where the content turned out to be a folder.
func (p *Service) relockFolder(out string, held *chunker.OutputLock) (*chunker.OutputLock, error) {
	lock, err := p.lockOutput(out, false)
	if err != nil {
		return held, err
	}
	if err := held.Abandon(); err != nil {
		p.log.Info("could not remove the single file's lock", "out", out, "err", err)
	}
	return lock, nil
}

// lockOwner is the line an output's lock shows to a second fetch.
func (p *Service) lockOwner() string {
	return fmt.Sprintf("%s (pid %d), since %s", filepath.Base(os.Args[0]), os.Getpid(), p.clk.Now().Format("15:04:05"))
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
	ctx = wire.WithCounter(ctx, new(wire.Counter)) // as Fetch's
	late := newLateSources(p.lib, root)
	srcs := p.cl.connectAll(ctx, nil, fc.Peers, fc.Sources, dialHooks{events: fc.Events, late: late.add})
	if !serve.IsBlockMethod(fc.Method) && c.AltSet() == nil {
		alt, err := p.cl.fetchAlt(ctx, fc.Method, root, srcs, c.Man)
		if err != nil {
			return nil, err
		}
		c.SetAlt(alt)
	}
	fc.Started = late.started
	return p.nd.FetchServed(ctx, root, late.take(srcs), fc, start)
}

// openOutput opens the store in out for root, or returns nil if out holds
// none yet. The state of a single file that holds another content's
// finished download (an older version) is dropped: the file stays, for the
// new version to take blocks from. So is the state of a finished download
// whose files were removed or changed since: a staged download starts
// again from what they still hold. The state of an unfinished download of
// other content at a single file is ErrManifestMismatch.
//
// It also returns the roots of the other contents whose stores out holds
// (at most maxOlder): for a single file, the older version it replaces,
// whose manifest it returns too (read before its state is dropped), for the
// new manifest to come as a delta against it.
func (p *client) openOutput(ctx context.Context, out string, root chunker.ID, fileMode bool, check func(done, total int)) (*chunker.Store, []chunker.ID, *chunker.Manifest, error) {
	const maxOlder = 4
	limit := p.cfg.Limits.MaxManifestBytes
	state := filepath.Join(out, chunker.MetaDir, root.String())
	var older []chunker.ID
	if fileMode {
		state = out + chunker.MetaDir
		if m, err := chunker.StateManifest(state, limit); err == nil && m.ID() != root {
			id := m.ID()
			older = []chunker.ID{id}
			if chunker.StateStaged(state) {
				return nil, older, nil, fmt.Errorf("%w: %s holds an unfinished download of %s, the ticket is for %s (finish that fetch, or remove %s to drop it)", ErrManifestMismatch, out, id, root, state)
			}
			if err := chunker.DropState(state); err != nil {
				return nil, older, nil, fmt.Errorf("peer: %w", err)
			}
			return nil, older, m, nil
		}
	} else if ids, err := chunker.ListStores(out); err == nil {
		ids = slices.DeleteFunc(ids, func(id chunker.ID) bool { return id == root })
		older = ids[:min(len(ids), maxOlder)]
	}
	sopts := []chunker.StoreOption{p.cfg.syncOption(), chunker.WithMaxManifestBytes(limit), chunker.WithoutRepair()}
	if !fileMode {
		sopts = append(sopts, chunker.WithID(root))
	}
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
		return st, older, nil, nil
	case errors.Is(err, chunker.ErrNotFound):
		return nil, older, nil, nil
	case errors.Is(err, chunker.ErrDamaged):
		p.log.Info("the output's files changed since it was fetched: fetching again, taking what they hold", "out", out, "err", err)
		if _, serr := os.Stat(state); serr != nil {
			state = filepath.Join(out, chunker.MetaDir) // a store of the first layout
		}
		if err := chunker.DropState(state); err != nil {
			return nil, older, nil, fmt.Errorf("peer: %w", err)
		}
		return nil, older, nil, nil
	default:
		return nil, older, nil, fmt.Errorf("peer: open %s: %w", out, err)
	}
}

// isDir reports whether path is an existing folder.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
