package swarm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
	"github.com/reconcile-p2p/reconcile/peer/sched"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/swarm/bans"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// fetch is the state of one running fetch of complete blocks.
type fetch struct {
	p   *Node
	c   *serve.Content
	t   serve.Target
	fc  FetchConfig
	ctx context.Context
	// cancel ends the fetch; its cause is the fetch's error (nil cause: done).
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
	done   chan struct{}
	// doneOnce closes done when the last block is stored.
	doneOnce sync.Once

	mu      sync.Mutex
	pick    *sched.Picker[lpeer.ID]
	sources map[lpeer.ID]*source
	banned  map[lpeer.ID]string
	shares  map[lpeer.ID]*PeerShare
	// spare holds peers of the content that are not sources because the
	// source limit was reached (the time a peer was rotated out, zero for
	// one never tried): an idle source gives its place to one of them.
	spare map[lpeer.ID]time.Time
	// pushSrc are the parents that pushed blocks (Service.Push); held
	// says, per stripe, whether its blocks are left to the pushes now
	// (heldBuf is the last one's memory, reused).
	pushSrc       map[lpeer.ID]*source
	held, heldBuf []bool
	stripeOf      func(i int) int // a block's stripe, with held
	// relayed are the sources reached through a relay only at some offer,
	// with what came through it (reachHint).
	relayed  map[lpeer.ID]*relayNote
	wake     chan struct{} // closed and replaced on release or new blocks
	active   int           // sources with a running worker
	lastLive time.Time
	// started is set once the fetch runs (its context and writers are
	// there): sources are started only from then on.
	started bool
	// lastProgress is the last time a block was stored or in flight.
	lastProgress time.Time
	// lastStored is the last time a block was stored (or the fetch began).
	lastStored time.Time
	sum        Summary
	// waits are the recent waits for the sources' blocks, which bound how
	// long a source may keep a block (allowedWait).
	waits    sched.Waits
	received int64
	resumed  int

	progMu sync.Mutex

	// bans is the ban file of its store (bans.go).
	bans *bans.Saved

	// wireBytes counts the bytes of its streams (Summary.WireBytesReceived).
	wireBytes *wire.Counter

	writes    chan writeJob
	writersWG sync.WaitGroup
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

// errPhantom ends the work with a source that offered again, phantomMin
// times, blocks it had answered as missing.
var errPhantom = errors.New("peer: offers blocks it does not send")

// phantomMin is how many offers of blocks it answered as missing before a
// source is left.
const phantomMin = 8

// unknownRetries is how many more times a fetch asks a peer that answered
// "unknown root" before it forgets the peer.
const unknownRetries = 5

// source is one remote peer a fetch downloads from.
type source struct {
	id       lpeer.ID
	offers   sched.Offers // what it offered and was not yet given (under fetch.mu)
	share    *PeerShare   // in fetch.shares
	failures int
	busy     int           // "busy" answers (retried, not failures)
	unknown  int           // "unknown root" answers in a row
	err      error         // set by a writer when the source is dropped for bad blocks
	cs       *ClientStream // the current blocks stream, to abort it
	// watch is its watch (Hello.Watch), nil or ended when none: then the
	// fetch reconciles with it again to learn of its new blocks.
	watch *watchConn
	// corrupt counts the blocks it sent that failed verification, and
	// refused holds them: it is not asked for them again (under fetch.mu).
	corrupt int
	refused map[int]struct{}
	// missing holds the blocks it offered and then answered as missing,
	// phantoms counts the offers of those blocks again (in the work
	// goroutine).
	missing  map[int]struct{}
	phantoms int
	// recheck is set when it answered a block it announced as missing: the
	// fetch then reconciles with it again (rather than going on with its
	// watch), so that a peer that offers again what it does not send is
	// found out (errPhantom).
	recheck bool
	// useful is the last time it was given a block to send or sent one (or
	// it became a source), for rotation (under fetch.mu).
	useful time.Time
	// flow sizes its window of requested blocks (its worker only).
	flow sched.FlowWindow
	// push is set for a parent of the stripe trees (Service.Push): its
	// blocks are pushed, it has no worker.
	push bool
	// gap is the moving average of its waits for a block (under fetch.mu;
	// zero until its first block): the endgame asks a faster source for
	// the last blocks a slower one holds.
	gap time.Duration
	// stallRun counts its downloads in a row that stalled (errStalled)
	// without a block between, stalled the blocks it was asked for that
	// never came (its worker only).
	stallRun, stalled int
}

// rotateIdle is how long a source may go without a block to give before it
// leaves its place to a spare peer, when the fetch is at its source limit.
// It spans a few reconciliations at wide-area round trips, so a source that
// merely waits for its next block is kept.
const rotateIdle = 2 * time.Second

func newFetch(p *Node, c *serve.Content, t serve.Target, fc FetchConfig, wireBytes *wire.Counter) *fetch {
	f := &fetch{
		p: p, c: c, t: t, fc: fc, wireBytes: wireBytes,
		bans:    bans.Open(c.Store, p.clk, p.log),
		done:    make(chan struct{}),
		pick:    sched.NewPicker[lpeer.ID](t.Has, max(2, fetchMemory/t.UnitSize())),
		sources: make(map[lpeer.ID]*source),
		banned:  make(map[lpeer.ID]string),
		shares:  make(map[lpeer.ID]*PeerShare),
		spare:   make(map[lpeer.ID]time.Time),
		pushSrc: make(map[lpeer.ID]*source),
		wake:    make(chan struct{}),
	}
	f.pick.Hold = pushSink{f}.holds
	f.pick.SetChoice(fc.Choice, nil)
	if fc.Choice == sched.BlockRarestFilters {
		f.pick.RarityOf = c.Tally.Count
	}
	return f
}

// run downloads until the store is complete, the context ends or no peer is left.
func (f *fetch) run(ctx context.Context, srcs []lpeer.ID) (*Summary, error) {
	m := f.c.Man
	f.sum = Summary{Root: m.ID().String(), Method: f.t.Method().String(), Blocks: m.BlockCount(), Bytes: m.TotalSize()}
	f.resumed = f.c.Store.HeldCount()
	f.sum.Resumed = f.resumed
	if f.c.Store.Complete() {
		return f.summary(), nil
	}
	fctx, cancel := context.WithCancelCause(ctx)
	f.mu.Lock()
	f.ctx = fctx
	f.mu.Unlock()
	f.cancel = cancel
	stop := context.AfterFunc(f.p.ctx, func() { cancel(wire.ErrClosed) })
	defer stop()
	f.lastLive = f.p.clk.Now()
	f.lastProgress = f.p.clk.Now()
	f.lastStored = f.lastProgress
	pushSink{f}.updateHeld()
	// Received blocks wait for the writers in a queue bounded to about 64 MiB.
	f.writes = make(chan writeJob, min(64, max(2, (64<<20)/f.t.UnitSize())))
	for range min(maxFetchWriters, max(4, (64<<20)/f.t.UnitSize())) {
		f.writersWG.Add(1)
		go f.writer()
	}
	// Open to sources now: those given, then the peers that reconciled
	// with this one while the fetch was being set up (kept as spares).
	f.mu.Lock()
	f.started = true
	f.mu.Unlock()
	if t := TreesOf(f.c); t != nil {
		// Its parents push what they held before as well (pushes that
		// reach the fetch count in its summary).
		t.catchUp("")
	}
	// In random order: fetches given the same peers (a ticket's, or a
	// swarm's neighbour lists that name the same popular peers first) do
	// not all take the same first few as sources while the others wait as
	// spares, watched by nobody.
	srcs = slices.Clone(srcs)
	rand.Shuffle(len(srcs), func(a, b int) { srcs[a], srcs[b] = srcs[b], srcs[a] })
	for _, id := range srcs {
		f.AddSource(id)
	}
	f.mu.Lock()
	f.fillLocked()
	f.mu.Unlock()
	f.wg.Add(1)
	go finder{f}.discover()
	tick := f.p.clk.NewTicker(100 * time.Millisecond)
	noPeer := f.fc.NoPeer
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
		case <-tick.Chan():
			pushSink{f}.updateHeld()
			f.mu.Lock()
			if f.active > 0 {
				f.lastLive = f.p.clk.Now()
			}
			if f.pick.InFlight() > 0 {
				f.lastProgress = f.p.clk.Now()
			}
			idle, stuck, active := f.p.clk.Since(f.lastLive), f.p.clk.Since(f.lastProgress), f.active
			busy := 0
			for _, src := range f.sources {
				if src.busy > 0 && src.share.Blocks == 0 {
					busy++
				}
			}
			f.mu.Unlock()
			missing := m.BlockCount() - f.c.Store.HeldCount()
			if idle > noPeer {
				err = fmt.Errorf("%w: %s", wire.ErrNoPeers, f.missingText(missing))
				break loop
			}
			if stuck > noPeer && busy > 0 && busy == active {
				err = fmt.Errorf("%w: %s: all %d peers refused: busy", wire.ErrNoPeers, f.missingText(missing), active)
				break loop
			}
			if stuck > noPeer {
				err = fmt.Errorf("%w: %s, and %s", wire.ErrNoPeers, f.missingText(missing), noneHas(active))
				break loop
			}
		}
	}
	cancel(nil)
	f.wg.Wait()
	close(f.writes)
	f.writersWG.Wait()
	if f.c.Store.Complete() {
		err = nil
	}
	if errors.Is(err, wire.ErrNoPeers) {
		err = f.reachHint(f.bans.Hint(err))
	}
	return f.summary(), err
}

// addSource starts downloading from id unless it is known, banned or the
// source limit is reached.
func (f *fetch) AddSource(id lpeer.ID) {
	if id == f.p.h.ID() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx != nil && f.ctx.Err() != nil {
		return
	}
	if _, ok := f.sources[id]; ok {
		return
	}
	if !f.started {
		// A peer that reconciled with this one before the fetch was set
		// up (the whole swarm starts at once): a watch answers it only
		// once, so it is kept for when the fetch starts.
		if _, ok := f.spare[id]; !ok && !f.p.guard.IsBanned(id) {
			f.spare[id] = time.Time{}
		}
		return
	}
	if _, ok := f.banned[id]; ok {
		return
	}
	if f.p.guard.IsBanned(id) {
		return
	}
	if f.active >= f.p.cfg.MaxSources {
		if _, ok := f.spare[id]; !ok {
			f.spare[id] = time.Time{}
		}
		return
	}
	f.startLocked(id)
}

// startLocked makes id a source and starts its worker (f.mu held).
func (f *fetch) startLocked(id lpeer.ID) {
	delete(f.spare, id)
	sh := f.shares[id]
	if sh == nil {
		sh = &PeerShare{Peer: id.String()}
		f.shares[id] = sh
	}
	src := &source{id: id, share: sh, useful: f.p.clk.Now()}
	f.sources[id] = src
	f.active++
	f.wg.Add(1)
	go (worker{f, src}).work()
}

// relayHeadStart is how long a source reached through a relay only waits
// before its first reconciliation when the fetch has direct sources too:
// they offer first, and the relayed one is given only what they lack
// (sched.Offers.Relayed).
const relayHeadStart = 500 * time.Millisecond

// headStart makes a relayed source wait relayHeadStart, if the fetch has a
// direct source.
func (w worker) headStart() {
	f, src := w.fetch, w.src
	if f.p.PathTo(src.id) != hostkit.PathRelayed {
		return
	}
	f.mu.Lock()
	ids := make([]lpeer.ID, 0, len(f.sources))
	for id := range f.sources {
		ids = append(ids, id)
	}
	f.mu.Unlock()
	for _, id := range ids {
		if path := f.p.PathTo(id); id != src.id && path != hostkit.PathRelayed && path != "" {
			t := f.p.clk.NewTimer(relayHeadStart)
			defer t.Stop()
			select {
			case <-f.ctx.Done():
			case <-t.Chan():
			}
			return
		}
	}
}

// work reconciles with one source and downloads what it offers, again and
// again as both sides gain blocks, until the fetch ends or the source fails.
func (w worker) work() {
	f, src := w.fetch, w.src
	defer f.wg.Done()
	// Keep the connection manager from trimming a connection we fetch over.
	tag := "reconcile-fetch-" + f.c.Man.ID().String()[:16]
	f.p.h.ConnManager().Protect(src.id, tag)
	defer f.p.h.ConnManager().Unprotect(src.id, tag)
	defer func() {
		f.mu.Lock()
		f.active--
		delete(f.sources, src.id)
		f.pick.Forget(&src.offers)
		f.fillLocked()
		f.mu.Unlock()
		f.notify()
	}()
	defer func() {
		if src.watch != nil {
			src.watch.close()
		}
	}()
	w.headStart()
	first, most := 50*time.Millisecond, time.Second
	wait := first
	for f.ctx.Err() == nil {
		var err error
		var offered []int
		if src.recheck && src.watch != nil {
			src.watch.close()
			f.mu.Lock()
			src.watch = nil
			f.mu.Unlock()
		}
		src.recheck = false
		watched := src.watch.alive()
		if !watched {
			// No watch: reconcile (again) to learn what the source holds,
			// and watch it from then on where the method allows.
			offered, err = w.reconcileWith()
			if err == nil {
				err = w.offer(offered)
			}
		}
		if err == nil {
			err = w.download()
		}
		if f.ctx.Err() != nil {
			return
		}
		switch {
		case err == nil:
			src.failures, src.unknown = 0, 0
			if len(offered) > 0 {
				// It had something for us: it may have more soon.
				wait = first
			}
		case errors.Is(err, wire.ErrBadBlock) || errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrFrameTooLarge) || errors.Is(err, wire.ErrManifestMismatch):
			f.drop(src, err)
			return
		case errors.Is(err, errPhantom):
			// It offers what it does not send: every request to it is
			// wasted. Left for the rest of this fetch, not banned (a seed
			// whose file changed does the same for the changed blocks).
			f.p.log.Info("peer offers blocks it does not send", "peer", src.id, "err", err)
			f.dropQuietly(src, err.Error())
			// A parent in the stripe trees that lies so passes on no push
			// worth waiting for.
			pushSink{f}.refuseParent(src.id)
			return
		case errors.Is(err, errStalled):
			// Its blocks went back to the others; it is asked again (for
			// fewer) after the pause, and dropped once it stalls
			// stallRounds times in a row.
			f.p.log.Info("peer stalled", "peer", src.id, "err", err)
			if src.stallRun >= stallRounds {
				f.dropQuietly(src, fmt.Sprintf("stalled %d requests; its blocks were asked of others", src.stalled))
				return
			}
		case errors.Is(err, wire.ErrBusy):
			// The peer has no room for us now: ask again after the pause
			// (it grows to a second), without counting it as a failure.
			f.p.log.Debug("peer busy", "peer", src.id)
			src.busy++
		case errors.Is(err, wire.ErrUnknownRoot):
			// Not (yet) serving the content. A peer that started its own
			// fetch a moment after us registers the content a moment later
			// (two fetchers that dial each other at once would otherwise
			// both give up): ask again a few times over about 1.5 s, then
			// leave it to discovery or to its reconciling with us.
			src.unknown++
			if src.unknown == 1 && serve.IsBlockMethod(f.fc.Method) {
				// It may hold blocks of the content under another (an
				// older version): offer it the manifest, and ask again at
				// once if it takes it.
				if oerr := f.p.OfferManifest(f.ctx, src.id, f.c.Man); oerr == nil {
					src.unknown = 0
					continue
				}
			}
			if src.unknown > unknownRetries {
				return
			}
		default:
			src.failures++
			f.p.log.Info("peer failed", "peer", src.id, "failures", src.failures, "err", err)
			if src.failures >= 3 {
				f.dropQuietly(src, "unreachable: "+err.Error())
				return
			}
		}
		// Wait for blocks released by others or announced on the watch, or
		// (without a watch) reconcile again after a while: the source may
		// have gained blocks meanwhile.
		f.mu.Lock()
		// A source that failed or is busy spares no other (sched.Picker.Away).
		freed := f.pick.Away(&src.offers, err != nil)
		w := f.wake
		claimable := f.pick.Claimable(&src.offers)
		if err == nil && !claimable && f.rotateLocked(src) {
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		if freed {
			f.notify()
		}
		if (claimable || src.recheck) && err == nil {
			continue
		}
		if err == nil && src.watch.alive() {
			select {
			case <-f.ctx.Done():
				return
			case <-w:
			case <-src.watch.news:
			case <-src.watch.done:
			case <-f.p.clk.After(rotateIdle):
				// Looked at again, for rotation.
			}
			continue
		}
		if errors.Is(err, wire.ErrBusy) {
			// A busy source has no room for us whatever this fetch gains
			// or releases: asked again on every wake-up, each source of a
			// swarm of 20 was asked 8 times a second, a stream opened
			// and refused each time (TestBusyPause). Only the pause,
			// growing to a second, ends its wait.
			w = nil
		}
		t := f.p.clk.NewTimer(wait)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return
		case <-w:
			t.Stop()
		case <-t.Chan():
			wait = min(2*wait, most)
		}
	}
}

// rotateLocked reports whether src, which has had nothing to give for
// rotateIdle, leaves its place to a spare peer (f.mu held): only when the
// fetch is at its source limit and a spare peer is waiting. Without it a
// fetch keeps its first sources for as long as they answer, even when none of
// them holds a block it lacks while the peers that do (the seed) wait
// outside. src becomes a spare itself and may come back later, when it has
// gained blocks and another source is idle in turn.
//
// While stripe trees push blocks (f.held), sources idle on purpose: they
// are kept for the repair, not rotated (each rotation reconciles anew).
func (f *fetch) rotateLocked(src *source) bool {
	if f.active < f.p.cfg.MaxSources || len(f.spare) == 0 || f.p.clk.Since(src.useful) < rotateIdle || slices.Contains(f.held, true) {
		return false
	}
	f.spare[src.id] = f.p.clk.Now()
	f.p.log.Debug("rotating idle source", "peer", src.id)
	return true
}

// fillLocked starts spare peers while the fetch is below its source limit
// (f.mu held): those never tried first, then those rotated out longest ago.
func (f *fetch) fillLocked() {
	for f.active < f.p.cfg.MaxSources && len(f.spare) > 0 && f.ctx.Err() == nil {
		var best lpeer.ID
		var bt time.Time
		first := true
		for id, t := range f.spare {
			if _, ok := f.sources[id]; ok {
				delete(f.spare, id)
				continue
			}
			if first || t.Before(bt) {
				best, bt, first = id, t, false
			}
		}
		if first {
			return
		}
		if _, banned := f.banned[best]; banned || f.p.guard.IsBanned(best) {
			delete(f.spare, best)
			continue
		}
		f.startLocked(best)
	}
}

// notify wakes the workers waiting for released blocks.
func (f *fetch) notify() {
	f.mu.Lock()
	close(f.wake)
	f.wake = make(chan struct{})
	f.mu.Unlock()
}
