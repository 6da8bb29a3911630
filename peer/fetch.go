package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// Progress is a snapshot of a running fetch, given to the progress callback.
type Progress struct {
	// Blocks and TotalBlocks count verified blocks held and blocks of the content.
	Blocks, TotalBlocks int
	// Bytes and TotalBytes are the sizes of those blocks.
	Bytes, TotalBytes int64
	// Received is the block bytes received in this run (including rejected ones).
	Received int64
	// Peers is the number of peers the fetch downloads from.
	Peers int
}

// PeerShare is what one peer contributed to a fetch.
type PeerShare struct {
	// Peer is the remote peer id.
	Peer string `json:"peer"`
	// Blocks and Bytes are the verified blocks it sent and their size.
	Blocks int   `json:"blocks"`
	Bytes  int64 `json:"bytes"`
	// Offered is the number of blocks its reconciliation answers offered.
	Offered int `json:"offered"`
	// FilterBytes is the reconciliation traffic with it (both directions).
	FilterBytes int64 `json:"filter_bytes"`
	// Rounds is the number of reconciliation exchanges with it.
	Rounds int `json:"rounds"`
	// RoundTrips counts the round trips of those exchanges: one each for
	// complete, ccbf, bitfield and byers; iblt adds one per batch of cells the
	// peer asked for.
	RoundTrips int `json:"round_trips"`
	// Rejected counts its blocks that failed verification.
	Rejected int `json:"rejected"`
	// Dropped says why the peer was dropped, empty if it was not.
	Dropped string `json:"dropped,omitempty"`
}

// Summary is the outcome of a fetch.
type Summary struct {
	// Root is the content's root id.
	Root string `json:"root"`
	// Method is the reconciliation method used.
	Method string `json:"method"`
	// Out is the output folder (the store).
	Out string `json:"out"`
	// Blocks and Bytes are the block count and size of the content.
	Blocks int   `json:"blocks"`
	Bytes  int64 `json:"bytes"`
	// Resumed counts the verified blocks held when the fetch started.
	Resumed int `json:"resumed_blocks"`
	// Fetched counts the blocks downloaded, verified and stored by this fetch.
	Fetched int `json:"fetched_blocks"`
	// Received is the block payload received (fetched, redundant and rejected).
	Received int64 `json:"bytes_received"`
	// Redundant counts blocks received that were already held.
	Redundant int `json:"redundant_blocks"`
	// Rejected counts blocks that failed verification.
	Rejected int `json:"rejected_blocks"`
	// FalseOffers counts offered blocks the fetcher already held (filter false
	// positives; they are not downloaded).
	FalseOffers int `json:"false_offers"`
	// FilterBytes is the reconciliation traffic (both directions, all peers).
	FilterBytes int64 `json:"filter_bytes"`
	// FilterSent is the part of FilterBytes this side sent: its filters,
	// bitfields or IBLT cells (the rest is the peers' offers and requests).
	FilterSent int64 `json:"filter_sent_bytes"`
	// Cells counts the IBLT cells sent (iblt only).
	Cells int `json:"iblt_cells,omitempty"`
	// Seconds is the wall time of the fetch.
	Seconds float64 `json:"seconds"`
	// DecodeSeconds is the time spent erasure-decoding (Byers only).
	DecodeSeconds float64 `json:"decode_seconds,omitempty"`
	// Peers is each peer's share, largest first.
	Peers []PeerShare `json:"peers"`
}

// FetchOption configures Fetch.
type FetchOption func(*fetchConfig) error

type fetchConfig struct {
	progress func(Progress)
	peers    []ma.Multiaddr
	method   reconcile.Method
	noPeer   time.Duration
}

// WithProgress sets a callback called after every stored block (calls are
// serialized; keep it quick).
func WithProgress(fn func(Progress)) FetchOption {
	return func(c *fetchConfig) error { c.progress = fn; return nil }
}

// WithPeers adds peers to fetch from, as full multiaddrs ending in /p2p/ID.
func WithPeers(addrs ...ma.Multiaddr) FetchOption {
	return func(c *fetchConfig) error { c.peers = append(c.peers, addrs...); return nil }
}

// WithMethod sets the reconciliation method. reconcile.Complete (the
// default), reconcile.CCBF, reconcile.Bitfield and reconcile.IBLT download the
// blocks of the content and every peer serves them all (the server takes the
// method from the fetcher's first message); reconcile.Byers downloads coded
// blocks instead (the seed must serve them, see WithByers).
func WithMethod(m reconcile.Method) FetchOption {
	return func(c *fetchConfig) error {
		if !m.Valid() {
			return fmt.Errorf("peer: method %v: %w", m, reconcile.ErrMethod)
		}
		c.method = m
		return nil
	}
}

// WithNoPeerTimeout sets how long a fetch goes on with no peer left to
// download from, or with peers that have none of the missing blocks, before
// it fails with ErrNoPeers. Default 10 s.
func WithNoPeerTimeout(d time.Duration) FetchOption {
	return func(c *fetchConfig) error {
		if d <= 0 {
			return errors.New("peer: WithNoPeerTimeout: duration must be positive")
		}
		c.noPeer = d
		return nil
	}
}

// Fetch downloads the content of ticket t into the folder out, from the
// ticket's peers, the WithPeers peers and the peers they name, reconciling
// with each (complete reconciliation by default) so that each sends only
// blocks this peer lacks, never asking two peers for the same block unless one
// fails or stalls. Every block is verified before it is stored; blocks are
// served to other peers while the fetch runs and afterwards, until Close or
// Unserve. If out already holds a store of the same content, the fetch resumes
// from its verified blocks.
//
// Errors: ErrManifestMismatch if out holds
// other content or a peer's manifest does not match the root; ErrNoPeers when
// no peer can be reached or the peers left lack blocks; store errors (such as a
// full disk) as they come. On error, every verified block stays in out.
func (p *Peer) Fetch(ctx context.Context, t Ticket, out string, opts ...FetchOption) (*Summary, error) {
	fc := fetchConfig{method: reconcile.Complete, noPeer: 10 * time.Second}
	for _, o := range opts {
		if err := o(&fc); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if fc.method == reconcile.Byers {
		return p.fetchByers(ctx, t, out, fc, start)
	}
	sopts := []chunker.StoreOption{chunker.WithSyncEvery(p.cfg.syncEvery), chunker.WithMaxManifestBytes(p.cfg.limits.MaxManifestBytes)}
	if p.cfg.syncEvery > 1 {
		// Blocks stored after the last group fsync have no record yet after a
		// crash; re-hashing the output finds those whose bytes made it to
		// disk, so they are not downloaded again.
		sopts = append(sopts, chunker.WithVerify())
	}
	store, err := chunker.OpenStore(ctx, out, sopts...)
	switch {
	case err == nil:
		if store.Manifest().ID() != t.Root {
			store.Close()
			return nil, fmt.Errorf("%w: %s holds content %s, the ticket is for %s", ErrManifestMismatch, out, store.Manifest().ID(), t.Root)
		}
	case errors.Is(err, chunker.ErrNotFound):
	default:
		return nil, fmt.Errorf("peer: open %s: %w", out, err)
	}
	srcs := p.connectAll(ctx, t.Peers, fc.peers)
	if store == nil {
		if len(srcs) == 0 {
			return nil, fmt.Errorf("%w: could not connect to %s", ErrNoPeers, anyOf(len(t.Peers)+len(fc.peers)))
		}
		m, err := p.fetchManifest(ctx, t.Root, srcs, false)
		if err != nil {
			return nil, err
		}
		store, err = chunker.CreateStore(ctx, out, m, chunker.WithSyncEvery(p.cfg.syncEvery))
		if err != nil {
			return nil, fmt.Errorf("peer: create %s: %w", out, err)
		}
	}
	c, err := newContent(store.Manifest(), store)
	if err != nil {
		store.Close()
		return nil, err
	}
	if err := p.add(c); err != nil {
		store.Close()
		return nil, err
	}
	f := newFetch(p, c, blockTarget{c, fc.method}, fc)
	sum, err := f.run(ctx, srcs)
	sum.Out = out
	sum.Seconds = time.Since(start).Seconds()
	if serr := store.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("peer: sync %s: %w", out, serr)
	}
	return sum, err
}

// connectAll dials the given peers in parallel and returns those reached.
func (p *Peer) connectAll(ctx context.Context, infos []lpeer.AddrInfo, extra []ma.Multiaddr) []lpeer.ID {
	all := append([]lpeer.AddrInfo(nil), infos...)
	for _, a := range extra {
		ai, err := lpeer.AddrInfoFromP2pAddr(a)
		if err != nil {
			p.log.Warn("skip peer address", "addr", a, "err", err)
			continue
		}
		all = append(all, *ai)
	}
	var mu sync.Mutex
	var ok []lpeer.ID
	var wg sync.WaitGroup
	for _, ai := range all {
		if ai.ID == p.h.ID() || p.isBanned(ai.ID) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			if err := p.h.Connect(cctx, ai); err != nil {
				p.log.Info("peer unreachable", "peer", ai.ID, "err", err)
				return
			}
			mu.Lock()
			ok = append(ok, ai.ID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(ok, func(i, j int) bool { return ok[i] < ok[j] })
	return dedup(ok)
}

func dedup(ids []lpeer.ID) []lpeer.ID {
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}

// request opens a stream of proto to id for root and sends the hello.
func (p *Peer) request(ctx context.Context, id lpeer.ID, proto string, root chunker.ID, coded bool) (*clientStream, error) {
	if p.isBanned(id) {
		return nil, fmt.Errorf("%w: %s misbehaved earlier", ErrUnknownRoot, id)
	}
	s, err := p.h.NewStream(network.WithAllowLimitedConn(ctx, "reconcile"), id, protocolID(proto))
	if err != nil {
		return nil, err
	}
	cs := &clientStream{s: s, fr: newFrameReader(s, 0), bw: bufio.NewWriterSize(s, streamBuf), idle: p.cfg.streamIdle}
	cs.stop = context.AfterFunc(ctx, func() { s.Reset() })
	if err := cs.send(hello{Root: root[:], Coded: coded}.append(nil)); err != nil {
		cs.reset()
		return nil, err
	}
	return cs, nil
}

// fetchManifest gets the manifest (or the coded hashes) of root from the
// first of srcs that has it and checks it against the root.
func (p *Peer) fetchManifest(ctx context.Context, root chunker.ID, srcs []lpeer.ID, coded bool) (*chunker.Manifest, error) {
	var errs []error
	for _, id := range srcs {
		m, err := p.fetchManifestFrom(ctx, root, id)
		if err == nil {
			return m, nil
		}
		if errors.Is(err, ErrManifestMismatch) {
			p.log.Warn("peer sent a manifest that does not match the ticket", "peer", id)
		}
		errs = append(errs, fmt.Errorf("%s: %w", id, err))
	}
	for _, e := range errs {
		if errors.Is(e, ErrManifestMismatch) {
			return nil, fmt.Errorf("%w: %w", ErrManifestMismatch, errors.Join(errs...))
		}
	}
	return nil, fmt.Errorf("%w: no peer sent the manifest: %w", ErrNoPeers, errors.Join(errs...))
}

// askManifest sends a manifest request (for the coded blocks' header when
// coded) to id and returns the body of the answer, of at most max bytes.
func (p *Peer) askManifest(ctx context.Context, root chunker.ID, id lpeer.ID, coded bool, max int) ([]byte, error) {
	cs, err := p.request(ctx, id, string(ProtoManifest), root, coded)
	if err != nil {
		return nil, err
	}
	defer cs.close()
	if err := cs.flush(); err != nil {
		return nil, err
	}
	f, err := cs.next(1 + max)
	if err != nil {
		cs.reset()
		return nil, err
	}
	body, err := decodeTyped(f, msgManifest)
	if err != nil {
		cs.reset()
		return nil, err
	}
	return body, nil
}

func (p *Peer) fetchManifestFrom(ctx context.Context, root chunker.ID, id lpeer.ID) (*chunker.Manifest, error) {
	body, err := p.askManifest(ctx, root, id, false, p.cfg.limits.MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	m, err := chunker.DecodeManifestID(body, root, p.cfg.limits.MaxManifestBytes)
	if err != nil {
		if errors.Is(err, chunker.ErrManifestMismatch) {
			return nil, fmt.Errorf("%w: %w", ErrManifestMismatch, err)
		}
		return nil, fmt.Errorf("%w: manifest: %w", ErrMalformed, err)
	}
	return m, nil
}

// fetch is the state of one running fetch of complete blocks.
type fetch struct {
	p   *Peer
	c   *content
	t   target
	fc  fetchConfig
	ctx context.Context
	// cancel ends the fetch; its cause is the fetch's error (nil cause: done).
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
	done   chan struct{}
	// doneOnce closes done when the last block is stored.
	doneOnce sync.Once

	mu       sync.Mutex
	claimed  map[int]lpeer.ID
	sources  map[lpeer.ID]*source
	banned   map[lpeer.ID]string
	shares   map[lpeer.ID]*PeerShare
	release  uint64        // bumped when a claimed block is released
	wake     chan struct{} // closed and replaced on release or new blocks
	active   int           // sources with a running worker
	lastLive time.Time
	// lastProgress is the last time a block was stored or in flight.
	lastProgress time.Time
	sum          Summary
	received     int64
	resumed      int

	progMu sync.Mutex

	writes    chan writeJob
	writersWG sync.WaitGroup
	bufs      sync.Pool
}

// fetchMemory bounds the bytes of the blocks one fetch holds at once (in
// flight, queued for the writers or being written), over all its peers.
const fetchMemory = 64 << 20

// maxFetchWriters bounds the goroutines that verify and store received
// blocks. Each PutBlock returns only once its block is fsynced and recorded;
// the store groups the fsyncs of concurrent calls, so more writers mean
// larger groups and fewer fsyncs per block. Writers hold at most 64 MiB of
// blocks (4 writers at least).
const maxFetchWriters = 32

// source is one remote peer a fetch downloads from.
type source struct {
	id       lpeer.ID
	queue    []int // offered blocks not yet tried
	deferred []int // offered blocks claimed by other peers when tried
	seen     uint64
	share    *PeerShare // in fetch.shares
	failures int
	err      error         // set by a writer when the source sent a bad block
	cs       *clientStream // the current blocks stream, to abort it
}

func newFetch(p *Peer, c *content, t target, fc fetchConfig) *fetch {
	return &fetch{
		p: p, c: c, t: t, fc: fc,
		done:    make(chan struct{}),
		claimed: make(map[int]lpeer.ID),
		sources: make(map[lpeer.ID]*source),
		banned:  make(map[lpeer.ID]string),
		shares:  make(map[lpeer.ID]*PeerShare),
		wake:    make(chan struct{}),
	}
}

// run downloads until the store is complete, the context ends or no peer is left.
func (f *fetch) run(ctx context.Context, srcs []lpeer.ID) (*Summary, error) {
	m := f.c.man
	f.sum = Summary{Root: m.ID().String(), Method: f.t.method().String(), Blocks: m.BlockCount(), Bytes: m.TotalSize()}
	f.resumed = f.c.store.HeldCount()
	f.sum.Resumed = f.resumed
	if f.c.store.Complete() {
		return f.summary(), nil
	}
	var cancel context.CancelCauseFunc
	f.ctx, cancel = context.WithCancelCause(ctx)
	f.cancel = cancel
	stop := context.AfterFunc(f.p.ctx, func() { cancel(ErrClosed) })
	defer stop()
	f.lastLive = time.Now()
	f.lastProgress = time.Now()
	// Received blocks wait for the writers in a queue bounded to about 64 MiB.
	f.writes = make(chan writeJob, min(64, max(2, (64<<20)/f.t.unitSize())))
	for range min(maxFetchWriters, max(4, (64<<20)/f.t.unitSize())) {
		f.writersWG.Add(1)
		go f.writer()
	}
	f.c.setFetch(f)
	defer f.c.setFetch(nil)
	for _, id := range srcs {
		f.addSource(id)
	}
	f.wg.Add(1)
	go f.discover()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var err error
loop:
	for {
		select {
		case <-f.done:
			break loop
		case <-f.ctx.Done():
			err = context.Cause(f.ctx)
			break loop
		case <-tick.C:
			f.mu.Lock()
			if f.active > 0 {
				f.lastLive = time.Now()
			}
			if len(f.claimed) > 0 {
				f.lastProgress = time.Now()
			}
			idle, stuck, active := time.Since(f.lastLive), time.Since(f.lastProgress), f.active
			f.mu.Unlock()
			missing := m.BlockCount() - f.c.store.HeldCount()
			if idle > f.fc.noPeer {
				err = fmt.Errorf("%w: %d of %d blocks missing", ErrNoPeers, missing, m.BlockCount())
				break loop
			}
			if stuck > f.fc.noPeer {
				err = fmt.Errorf("%w: %d of %d blocks missing, and no peer reached has them (%d connected)", ErrNoPeers, missing, m.BlockCount(), active)
				break loop
			}
		}
	}
	cancel(nil)
	f.wg.Wait()
	close(f.writes)
	f.writersWG.Wait()
	if f.c.store.Complete() {
		err = nil
	}
	return f.summary(), err
}

func (f *fetch) summary() *Summary {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sum
	s.Received = f.received
	s.Fetched = f.c.store.HeldCount() - f.resumed
	s.Peers = make([]PeerShare, 0, len(f.shares))
	for _, sh := range f.shares {
		s.Peers = append(s.Peers, *sh)
	}
	sort.Slice(s.Peers, func(i, j int) bool {
		if s.Peers[i].Bytes != s.Peers[j].Bytes {
			return s.Peers[i].Bytes > s.Peers[j].Bytes
		}
		return s.Peers[i].Peer < s.Peers[j].Peer
	})
	return &s
}

// addSource starts downloading from id unless it is known, banned or the
// source limit is reached.
func (f *fetch) addSource(id lpeer.ID) {
	if id == f.p.h.ID() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx == nil || f.ctx.Err() != nil {
		return
	}
	if _, ok := f.sources[id]; ok {
		return
	}
	if _, ok := f.banned[id]; ok {
		return
	}
	if f.active >= f.p.cfg.maxSources || f.p.isBanned(id) {
		return
	}
	sh := f.shares[id]
	if sh == nil {
		sh = &PeerShare{Peer: id.String()}
		f.shares[id] = sh
	}
	src := &source{id: id, share: sh}
	f.sources[id] = src
	f.active++
	f.wg.Add(1)
	go f.work(src)
}

// work reconciles with one source and downloads what it offers, again and
// again as both sides gain blocks, until the fetch ends or the source fails.
func (f *fetch) work(src *source) {
	defer f.wg.Done()
	// Keep the connection manager from trimming a connection we fetch over.
	tag := "reconcile-fetch-" + f.c.man.ID().String()[:16]
	f.p.h.ConnManager().Protect(src.id, tag)
	defer f.p.h.ConnManager().Unprotect(src.id, tag)
	defer func() {
		f.mu.Lock()
		f.active--
		delete(f.sources, src.id)
		f.mu.Unlock()
		f.notify()
	}()
	wait := 50 * time.Millisecond
	for f.ctx.Err() == nil {
		offered, err := f.reconcileWith(src)
		if err == nil {
			err = f.download(src, offered)
		}
		if f.ctx.Err() != nil {
			return
		}
		switch {
		case err == nil:
			src.failures = 0
		case errors.Is(err, ErrBadBlock) || errors.Is(err, ErrMalformed) || errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrManifestMismatch):
			f.drop(src, err)
			return
		case errors.Is(err, ErrUnknownRoot):
			// Not (yet) serving the content: it may start to, and come back
			// through discovery or by reconciling with us.
			return
		default:
			src.failures++
			f.p.log.Info("peer failed", "peer", src.id, "failures", src.failures, "err", err)
			if src.failures >= 3 {
				f.dropQuietly(src, "unreachable: "+err.Error())
				return
			}
		}
		// Wait for blocks released by others, or re-reconcile after a while:
		// the source may have gained blocks meanwhile.
		f.mu.Lock()
		w := f.wake
		claimable := f.hasClaimable(src)
		f.mu.Unlock()
		if claimable && err == nil {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return
		case <-w:
			t.Stop()
		case <-t.C:
			wait = min(2*wait, time.Second)
		}
	}
}

// hasClaimable reports whether src has offered blocks another peer released.
// f.mu is held.
func (f *fetch) hasClaimable(src *source) bool {
	if src.seen == f.release {
		return false
	}
	for _, i := range src.deferred {
		if _, c := f.claimed[i]; !c && !f.t.has(i) {
			return true
		}
	}
	return false
}

// drop bans a misbehaving source and closes its connections.
func (f *fetch) drop(src *source, err error) {
	f.mu.Lock()
	_, already := f.banned[src.id]
	if !already {
		src.share.Dropped = err.Error()
		f.banned[src.id] = err.Error()
	}
	f.mu.Unlock()
	if already {
		return
	}
	f.p.log.Warn("dropping peer", "peer", src.id, "err", err)
	f.c.forget(src.id)
	f.p.ban(src.id)
}

func (f *fetch) dropQuietly(src *source, why string) {
	f.mu.Lock()
	src.share.Dropped = why
	f.banned[src.id] = why
	f.mu.Unlock()
}

// notify wakes the workers waiting for released blocks.
func (f *fetch) notify() {
	f.mu.Lock()
	f.release++
	close(f.wake)
	f.wake = make(chan struct{})
	f.mu.Unlock()
}

// reconcileWith runs one reconciliation session with src and returns the
// offered blocks the fetcher still lacks.
func (f *fetch) reconcileWith(src *source) ([]int, error) {
	ctx, cancel := context.WithTimeout(f.ctx, 4*f.p.cfg.streamIdle)
	defer cancel()
	cs, err := f.p.request(ctx, src.id, string(ProtoReconcile), f.c.man.ID(), f.t.coded())
	if err != nil {
		return nil, err
	}
	s, trips, err := f.p.pullSession(cs, f.t.responder(), f.t.method(), f.t.held())
	if err != nil {
		cs.reset()
		return nil, err
	}
	cs.close()
	o := s.Outcome()
	var lacking []int
	for _, i := range s.Wanted() {
		if !f.t.has(i) {
			lacking = append(lacking, i)
		}
	}
	f.mu.Lock()
	src.share.Rounds++
	src.share.RoundTrips += trips
	f.sum.Cells += o.Cells
	for _, n := range o.WireSent {
		f.sum.FilterSent += int64(n)
	}
	src.share.Offered += o.Received
	src.share.FilterBytes += int64(o.WireBytes())
	f.sum.FilterBytes += int64(o.WireBytes())
	f.sum.FalseOffers += o.Redundant
	f.mu.Unlock()
	// Start at a random place so that peers offering the same blocks do not
	// contend for them in the same order.
	if n := len(lacking); n > 1 {
		r := rand.IntN(n)
		lacking = append(lacking[r:], lacking[:r]...)
	}
	return lacking, nil
}

// claim picks up to n offered blocks of src that nobody holds or fetches.
// f.mu is held.
func (f *fetch) claim(src *source, n int) []int {
	// Claimed blocks are in flight, queued or being stored: their count
	// bounds the memory the fetch holds in blocks, whatever the peers.
	n = min(n, max(2, fetchMemory/f.t.unitSize())-len(f.claimed))
	if len(src.queue) == 0 && src.seen != f.release {
		src.queue, src.deferred = src.deferred, nil
		src.seen = f.release
	}
	var out []int
	for n > 0 && len(src.queue) > 0 {
		i := src.queue[0]
		src.queue = src.queue[1:]
		if f.t.has(i) {
			continue
		}
		if _, c := f.claimed[i]; c {
			src.deferred = append(src.deferred, i)
			continue
		}
		f.claimed[i] = src.id
		out = append(out, i)
		n--
	}
	return out
}

// unclaim releases blocks of src that did not arrive, for others to fetch.
func (f *fetch) unclaim(src *source, idx map[int]struct{}) {
	if len(idx) == 0 {
		return
	}
	f.mu.Lock()
	for i := range idx {
		if f.claimed[i] == src.id {
			delete(f.claimed, i)
		}
		src.deferred = append(src.deferred, i)
	}
	f.mu.Unlock()
	f.notify()
}

// download fetches the offered blocks from src over one blocks stream,
// keeping up to the window requested, until src has nothing left to give.
func (f *fetch) download(src *source, offered []int) (err error) {
	f.mu.Lock()
	src.queue = offered
	src.deferred = nil
	src.seen = f.release
	f.mu.Unlock()
	window := f.p.cfg.window
	inflight := make(map[int]struct{}, window)
	defer func() { f.unclaim(src, inflight) }()
	var cs *clientStream
	defer func() {
		if cs == nil {
			return
		}
		f.mu.Lock()
		src.cs = nil
		f.mu.Unlock()
		if err != nil {
			cs.reset()
		} else {
			cs.close()
		}
	}()
	limit := f.t.count()
	var want []byte
	for {
		if f.ctx.Err() != nil {
			return nil
		}
		// Top up the window once half of it has arrived, so that wants go
		// out in batches rather than one small message per block.
		var batch []int
		if len(inflight) <= window/2 {
			f.mu.Lock()
			batch = f.claim(src, window-len(inflight))
			f.mu.Unlock()
		}
		for _, i := range batch {
			inflight[i] = struct{}{}
		}
		if len(batch) > 0 {
			if cs == nil {
				cs, err = f.p.request(f.ctx, src.id, string(ProtoBlocks), f.c.man.ID(), f.t.coded())
				if err != nil {
					return err
				}
				f.mu.Lock()
				src.cs = cs
				f.mu.Unlock()
			}
			sort.Ints(batch)
			want = appendWant(want[:0], batch)
			if err := cs.send(want); err != nil {
				return err
			}
			if err := cs.flush(); err != nil {
				return err
			}
		}
		if len(inflight) == 0 {
			return nil
		}
		// Read the frame straight into a buffer the writers will own.
		fr, err := cs.nextInto(f.getBuf, f.t.unitSize()+1+binaryMaxVarint, f.p.cfg.stallTimeout)
		if err != nil {
			if ferr := f.failed(src); ferr != nil {
				return ferr
			}
			return fmt.Errorf("waiting for %d blocks: %w", len(inflight), err)
		}
		i, data, ok, err := decodeBlock(fr, limit)
		if err != nil {
			return err
		}
		if _, asked := inflight[i]; !asked {
			return fmt.Errorf("%w: block %d was not requested", ErrMalformed, i)
		}
		delete(inflight, i)
		if !ok {
			// The source lacks a block it offered: others may have it, this
			// source is not asked again until it reconciles again.
			f.putBuf(fr)
			f.mu.Lock()
			if f.claimed[i] == src.id {
				delete(f.claimed, i)
			}
			f.mu.Unlock()
			f.notify()
			continue
		}
		// Hand the block to the writers (verification and fsync run there,
		// so the stream keeps moving) and read on.
		select {
		case f.writes <- writeJob{src: src, i: i, data: data, buf: fr}:
		case <-f.ctx.Done():
			f.putBuf(fr)
			return nil
		}
		if err := f.failed(src); err != nil {
			return err
		}
	}
}

// writeJob is a received block on its way to the store.
type writeJob struct {
	src  *source
	i    int
	data []byte
	buf  []byte // the frame data lies in, returned to the pool after
}

// writer stores received blocks until writes is closed. Several writers run,
// so block verification and fsyncs overlap (the store groups concurrent
// fsyncs) and the network is never idle waiting for the disk.
func (f *fetch) writer() {
	defer f.writersWG.Done()
	for job := range f.writes {
		err := f.store(job.src, job.i, job.data)
		f.putBuf(job.buf)
		if errors.Is(err, ErrBadBlock) {
			f.fail(job.src, err)
		}
	}
}

// fail marks src as failed with err and aborts its blocks stream, so that its
// worker drops it.
func (f *fetch) fail(src *source, err error) {
	f.mu.Lock()
	if src.err == nil {
		src.err = err
	}
	cs := src.cs
	f.mu.Unlock()
	if cs != nil {
		cs.s.Reset()
	}
	f.drop(src, err)
}

// failed returns the error src was marked with, if any.
func (f *fetch) failed(src *source) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return src.err
}

func (f *fetch) getBuf() []byte {
	if b, ok := f.bufs.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, 0, f.t.unitSize()+1+binaryMaxVarint)
}

func (f *fetch) putBuf(b []byte) {
	if cap(b) >= f.t.unitSize()+1+binaryMaxVarint {
		f.bufs.Put(&b)
	}
}

// store verifies and stores block i received from src.
func (f *fetch) store(src *source, i int, data []byte) error {
	f.mu.Lock()
	f.received += int64(len(data))
	f.mu.Unlock()
	if f.t.has(i) {
		f.mu.Lock()
		f.sum.Redundant++
		delete(f.claimed, i)
		f.mu.Unlock()
		return nil
	}
	err := f.t.put(i, data)
	f.mu.Lock()
	delete(f.claimed, i)
	if err != nil {
		if errors.Is(err, ErrBadBlock) {
			f.sum.Rejected++
			src.share.Rejected++
			f.mu.Unlock()
			f.notify()
			return fmt.Errorf("block %d from %s: %w", i, src.id, err)
		}
		f.mu.Unlock()
		f.notify()
		// The disk failed (full, read-only, ...): the whole fetch stops; every
		// block stored so far stays verified in the store.
		err = fmt.Errorf("peer: store block %d: %w", i, err)
		f.cancel(err)
		return err
	}
	src.share.Blocks++
	src.share.Bytes += int64(len(data))
	f.lastProgress = time.Now()
	held := f.c.store.HeldCount()
	var prog Progress
	if f.fc.progress != nil {
		prog = Progress{Blocks: held, TotalBlocks: f.c.man.BlockCount(), Received: f.received, Peers: f.active, TotalBytes: f.c.man.TotalSize()}
	}
	f.mu.Unlock()
	if f.fc.progress != nil {
		prog.Bytes = heldBytes(f.c.man, held)
		f.progMu.Lock()
		f.fc.progress(prog)
		f.progMu.Unlock()
	}
	if f.t.complete() {
		f.doneOnce.Do(func() { close(f.done) })
	}
	return nil
}

// heldBytes estimates the bytes of n held blocks (exact but for the short last block).
func heldBytes(m *chunker.Manifest, n int) int64 {
	if n >= m.BlockCount() {
		return m.TotalSize()
	}
	return int64(n) * int64(m.BlockSize())
}

// discover asks the sources for other peers of the content every second and
// downloads from the new ones too (a swarm).
func (f *fetch) discover() {
	defer f.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	asked := make(map[lpeer.ID]time.Time)
	for {
		f.mu.Lock()
		var ids []lpeer.ID
		for id := range f.sources {
			if time.Since(asked[id]) > time.Second {
				ids = append(ids, id)
			}
		}
		f.mu.Unlock()
		for _, id := range ids {
			asked[id] = time.Now()
			infos, err := f.p.askPeers(f.ctx, id, f.c.man.ID())
			if err != nil {
				continue
			}
			for _, ai := range infos {
				if ai.ID == f.p.h.ID() || f.known(ai.ID) {
					continue
				}
				cctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
				err := f.p.h.Connect(cctx, ai)
				cancel()
				if err == nil {
					f.addSource(ai.ID)
				}
			}
		}
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (f *fetch) known(id lpeer.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, a := f.sources[id]
	_, b := f.banned[id]
	return a || b
}

// askPeers asks id for other peers of root.
func (p *Peer) askPeers(ctx context.Context, id lpeer.ID, root chunker.ID) ([]lpeer.AddrInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.streamIdle)
	defer cancel()
	cs, err := p.request(ctx, id, string(ProtoPeers), root, false)
	if err != nil {
		return nil, err
	}
	defer cs.close()
	if err := cs.flush(); err != nil {
		return nil, err
	}
	fr, err := cs.next(64 << 10)
	if err != nil {
		cs.reset()
		return nil, err
	}
	return decodePeers(fr)
}
