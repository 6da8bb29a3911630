package swarm

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/reconcile-p2p/reconcile/internal/sizepool"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
	"github.com/reconcile-p2p/reconcile/peer/sched"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// A worker downloads from one source of a fetch (one runs per source): it
// reconciles with the source, pulls the blocks it offers over one stream,
// watches it for new blocks, and marks it failed.
type worker struct {
	*fetch
	src *source
}

// unclaim releases blocks of src that did not arrive, for others to fetch.
func (w worker) unclaim(idx map[int]struct{}) {
	f, src := w.fetch, w.src
	if len(idx) == 0 {
		return
	}
	units := make([]int, 0, len(idx))
	for i := range idx {
		units = append(units, i)
	}
	f.mu.Lock()
	f.pick.Unclaim(src.id, &src.offers, units)
	f.mu.Unlock()
	f.notify()
}

// offer makes the blocks src offered in a reconciliation answer its offers
// (in place of earlier ones).
func (w worker) offer(offered []int) error {
	f, src := w.fetch, w.src
	// A source offering again blocks it answered as missing before lies in
	// its filters (a seed whose file changed stops offering the changed
	// blocks once it has seen the change).
	for _, i := range offered {
		if _, ok := src.missing[i]; ok {
			src.phantoms++
		}
	}
	if src.phantoms >= phantomMin {
		return fmt.Errorf("%w: offered %d blocks again that it had answered as missing", errPhantom, src.phantoms)
	}
	// A source offering every block the fetch lacks (a seed, or a peer done
	// downloading) is full; see picker.offerFrom.
	full := serve.IsBlockMethod(f.t.Method()) && len(offered) > 0 && len(offered) >= f.c.Man.BlockCount()-f.c.Store.HeldCount()
	relayed := f.p.PathTo(src.id) == hostkit.PathRelayed
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(src.refused) > 0 {
		// Not the blocks it sent corrupt once: others are asked for them.
		offered = slices.DeleteFunc(offered, func(i int) bool { _, r := src.refused[i]; return r })
	}
	// A source reached through a relay only is given what no direct one
	// offers (Offers.Relayed).
	src.offers.Relayed = relayed
	if relayed {
		f.noteRelayed(src.id, 0)
	}
	f.pick.OfferFrom(&src.offers, offered, full)
	w.seeFromLocked(offered)
	return nil
}

// download fetches the blocks src offered (offer, and its watch's haves)
// over one blocks stream, keeping up to the window requested, until src has
// nothing left to give.
func (w worker) download() (err error) {
	f, src := w.fetch, w.src
	win := &src.flow
	// A source that stalled lately gets a smaller window: it keeps fewer
	// blocks from the others when it stalls again.
	win.Max, win.Fixed = max(1, f.p.cfg.Window>>min(src.stallRun, 8)), f.p.cfg.FixedWindow
	inflight := make(map[int]struct{}, win.Max)
	defer func() { w.unclaim(inflight) }()
	var cs *ClientStream
	var relayed bool // cs runs over a relayed connection
	var wants *wantWriter
	var watch *stallWatch
	defer func() {
		if watch != nil {
			watch.stop()
		}
	}()
	defer func() {
		if cs == nil {
			return
		}
		f.mu.Lock()
		src.cs = nil
		f.mu.Unlock()
		if err != nil || f.ctx.Err() != nil {
			cs.Reset()
			wants.stop()
		} else {
			wants.stop()
			cs.Close()
		}
	}()
	limit := f.t.Count()
	for {
		if f.ctx.Err() != nil {
			return nil
		}
		// Top up the window once a quarter of it (half of a large one) has
		// arrived, so that wants go out in batches rather than one small
		// message per block.
		var batch []int
		window := win.Size()
		slack := (window + 3) / 4
		if window >= 8 {
			slack = window / 2
		}
		// A stream over a relay to a source now reached directly (a hole
		// punched after the stream opened) takes no more wants: once what
		// it was asked has come, it closes, and the next batch opens a
		// stream on the direct connection (the swarm's best).
		moving := relayed && f.p.PathTo(src.id) != hostkit.PathRelayed
		if moving && len(inflight) == 0 {
			wants.stop()
			cs.Close()
			watch.stop()
			cs, wants, watch, relayed, moving = nil, nil, nil, false, false
			f.mu.Lock()
			src.cs = nil
			src.offers.Relayed = false
			f.mu.Unlock()
		}
		// A source that answered a block it announced as missing is asked
		// for nothing more until it has reconciled again (see recheck).
		if len(inflight) <= window-slack && !src.recheck && !moving {
			f.mu.Lock()
			batch = f.pick.Claim(src.id, &src.offers, window-len(inflight))
			if len(batch) == 0 && serve.IsBlockMethod(f.t.Method()) && w.endgameDue() {
				batch = f.pick.Endgame(src.id, &src.offers, window-len(inflight), f.c.Man.BlockCount()-f.c.Store.HeldCount(), w.slowerThan())
			}
			if len(batch) > 0 {
				src.useful = f.p.clk.Now()
			}
			f.mu.Unlock()
		}
		if len(batch) > 0 {
			win.Sent(f.p.clk.Now(), len(inflight) == 0)
		}
		for _, i := range batch {
			inflight[i] = struct{}{}
		}
		if len(batch) > 0 {
			if cs == nil {
				cs, err = f.p.Request(f.ctx, src.id, wire.ProtoBlocks, f.c.Man.ID(), !f.t.Plain())
				if err != nil {
					return err
				}
				relayed = viaRelay(cs.s)
				f.mu.Lock()
				src.cs = cs
				f.mu.Unlock()
				wants = startWantWriter(cs, win.Max)
				watch = &stallWatch{w: w, cs: cs, inflight: inflight}
			}
			sort.Ints(batch)
			if f.t.Plain() {
				pushSink{f}.tellParents(src.id, batch)
			}
			if err := wants.send(f.ctx, wire.AppendWant(nil, batch)); err != nil {
				return err
			}
		}
		if len(inflight) == 0 {
			if !w.waitForRoom() {
				return nil
			}
			continue
		}
		// Read the frame straight into a buffer the writers will own, for
		// as long as the fetch allows this source (stallWatch).
		waitFrom := f.p.clk.Now()
		watch.begin(waitFrom)
		fr, err := cs.nextInto(f.getBuf, f.t.UnitSize()+1+serve.MaxVarint, f.p.cfg.StallTimeout)
		released, aborted, allowed := watch.end()
		if released > 0 {
			// Its blocks were asked of others: it is a source that stalls
			// until it sends a block again.
			src.stallRun++
			src.stalled += released
			f.mu.Lock()
			src.share.Stalled += released
			f.mu.Unlock()
		}
		if aborted && err != nil {
			return fmt.Errorf("%w: %d requested blocks did not come within %v (the fetch's sources serve a block within %v at the 99th percentile; they were asked of others)",
				errStalled, len(inflight), (stallAbort * allowed).Round(time.Millisecond), (allowed / sched.StallFactor).Round(time.Millisecond))
		}
		if err != nil {
			if ferr := w.failed(); ferr != nil {
				return ferr
			}
			if werr := wants.failed(); werr != nil {
				return fmt.Errorf("sending wants: %w", werr)
			}
			return fmt.Errorf("waiting for %d blocks: %w", len(inflight), err)
		}
		i, data, ok, err := wire.DecodeBlock(fr, limit)
		if err != nil {
			return err
		}
		if _, asked := inflight[i]; !asked {
			return fmt.Errorf("%w: block %d was not requested", wire.ErrMalformed, i)
		}
		delete(inflight, i)
		if !ok {
			// The source lacks a block it offered: others may have it, this
			// source is not asked again until it reconciles again.
			f.putBuf(fr)
			f.mu.Lock()
			f.pick.Drop(src.id, i)
			f.mu.Unlock()
			f.notify()
			if src.missing == nil {
				src.missing = make(map[int]struct{})
			}
			src.missing[i] = struct{}{}
			src.recheck = true
			continue
		}
		now := f.p.clk.Now()
		win.Arrived(now)
		src.stallRun = 0
		f.mu.Lock()
		src.useful = now
		wait := now.Sub(waitFrom)
		f.waits.Add(time.Duration(float64(wait) / f.lenScale(i)))
		if src.gap == 0 {
			src.gap = wait
		} else {
			src.gap = (3*src.gap + wait) / 4
		}
		f.mu.Unlock()
		// Hand the block to the writers (verification and fsync run there,
		// so the stream keeps moving) and read on.
		select {
		case f.writes <- writeJob{src: src, i: i, data: data, buf: fr, relayed: relayed}:
		case <-f.ctx.Done():
			f.putBuf(fr)
			return nil
		}
		if err := w.failed(); err != nil {
			return err
		}
	}
}

// roomPoll is how often a download whose source still has blocks for it,
// but whose fetch holds all the blocks it may (fetchMemory, in flight or
// with the writers), looks again for room; roomWait is how long it waits
// so before it ends its stream as it would with nothing to ask.
const (
	roomPoll = 2 * time.Millisecond
	roomWait = time.Second
)

// waitForRoom waits, when src still has offered blocks but the fetch holds
// all the blocks it may in flight or with the writers (which wait for their
// fsyncs), until the writers free some room, and reports whether they did
// within roomWait (the download then asks for more on the same stream).
// Without it the download ended its stream and reconciled again, a round
// and a pause later: with 1 MiB blocks on a busy disk, 3 of 5 fetches of
// 1 GiB from one seed took 3-6 rounds and 5-8 s instead of 1.4-2 s.
func (w worker) waitForRoom() bool {
	f, src := w.fetch, w.src
	deadline := f.p.clk.Now().Add(roomWait)
	for waited := false; ; waited = true {
		f.mu.Lock()
		full := len(f.pick.Claimed) >= f.pick.Limit
		more := len(src.offers.Queue) > 0 && !src.recheck
		f.mu.Unlock()
		// Only a download that found the fetch full waits, and only while
		// it stays full: with room and nothing claimed, the source has
		// nothing to give now (its offers held or claimed by others).
		if !more || !full {
			return more && waited
		}
		if f.p.clk.Now().After(deadline) {
			return false
		}
		t := f.p.clk.NewTimer(roomPoll)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return false
		case <-t.Chan():
		}
	}
}

// writeJob is a received block on its way to the store.
type writeJob struct {
	src     *source
	i       int
	data    []byte
	buf     []byte // the frame data lies in, returned to the pool after
	relayed bool   // it came over a relayed connection
}

// writer stores received blocks until writes is closed. Several writers run,
// so block verification and fsyncs overlap (the store groups concurrent
// fsyncs) and the network is never idle waiting for the disk.
func (f *fetch) writer() {
	defer f.writersWG.Done()
	for job := range f.writes {
		err := f.store(job.src, job.i, job.data, job.relayed)
		f.putBuf(job.buf)
		if errors.Is(err, wire.ErrBadBlock) {
			if job.src.push {
				pushSink{f}.refuseParent(job.src.id)
			}
			f.corrupt(job.src, job.i, err)
		}
	}
}

// maxCorrupt is how many corrupt blocks a fetch takes from one peer before it
// drops and bans the peer: a disk error or a source file changed under a seed
// costs a block or a few, a liar is cut off soon.
const maxCorrupt = 3

// corrupt notes that src sent block i corrupt (err says how): the block was released
// for other peers (store did it), src is not asked for it again, and the
// maxCorrupt-th corrupt block drops and bans src.
func (f *fetch) corrupt(src *source, i int, err error) {
	f.mu.Lock()
	src.corrupt++
	n := src.corrupt
	if src.refused == nil {
		src.refused = make(map[int]struct{})
	}
	src.refused[i] = struct{}{}
	f.mu.Unlock()
	if n > maxCorrupt {
		return // banned already; its stream is being torn down
	}
	f.p.log.Info("peer sent a corrupt block", "peer", src.id, "block", i, "corrupt", n, "err", err)
	f.event(FetchEvent{Kind: FetchCorruptBlock, Peer: src.id, Block: i, Corrupt: n})
	if n < maxCorrupt {
		return
	}
	f.event(FetchEvent{Kind: FetchPeerBanned, Peer: src.id, Block: i, Corrupt: n})
	(worker{f, src}).fail(&corruptError{n: n, last: i})
}

// corruptError is why a peer that sent too many corrupt blocks was dropped
// (PeerShare.Dropped); it wraps wire.ErrBadBlock.
type corruptError struct{ n, last int }

func (e *corruptError) Error() string {
	return fmt.Sprintf("sent %d corrupt blocks (the last: block %d)", e.n, e.last)
}

func (e *corruptError) Unwrap() error { return wire.ErrBadBlock }

// event passes ev to the WithFetchEvents function, if any (serialized with
// the progress calls).
func (f *fetch) event(ev FetchEvent) {
	if f.fc.Events == nil {
		return
	}
	f.progMu.Lock()
	defer f.progMu.Unlock()
	f.fc.Events(ev)
}

// missingText words the blocks the fetch lacks, n of them: "2 of 16 blocks
// missing (blocks 3 and 9-10)"; a long list ends in "…".
func (f *fetch) missingText(n int) string {
	s := fmt.Sprintf("%d of %d blocks missing", n, f.c.Man.BlockCount())
	if n == 0 {
		return s
	}
	return s + " (" + BlockRanges(f.c.Store.Missing(), 8) + ")"
}

// noneHas words that none of the n connected peers has the blocks missing.
func noneHas(n int) string {
	switch n {
	case 0:
		return "no peer is connected"
	case 1:
		return "the 1 peer connected does not have them"
	}
	return fmt.Sprintf("none of the %d peers connected has them", n)
}

// BlockRanges words the increasing block indices idx as ranges, at most max
// of them: "block 3", "blocks 0-14", "blocks 1, 4-6 and 9", "blocks 1, 3, …".
func BlockRanges(idx []int, max int) string {
	var parts []string
	more := false
	for k := 0; k < len(idx); {
		j := k
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if len(parts) == max {
			more = true
			break
		}
		if j == k {
			parts = append(parts, strconv.Itoa(idx[k]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", idx[k], idx[j]))
		}
		k = j + 1
	}
	noun := "blocks "
	if len(idx) == 1 {
		noun = "block "
	}
	switch {
	case len(parts) == 0:
		return ""
	case more:
		return noun + strings.Join(parts, ", ") + ", …"
	case len(parts) == 1:
		return noun + parts[0]
	}
	return noun + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// fail marks src as failed with err and aborts its blocks stream, so that its
// worker drops it.
func (w worker) fail(err error) {
	f, src := w.fetch, w.src
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
func (w worker) failed() error {
	f, src := w.fetch, w.src
	f.mu.Lock()
	defer f.mu.Unlock()
	return src.err
}

// getBuf returns an empty frame buffer with room for n bytes: from the
// process's pools of buffers by size class (package sizepool), or a new
// one. A content-defined block of 121 KiB takes a buffer of its size, not
// one of the longest block's (1 MiB).
func (f *fetch) getBuf(n int) []byte { return sizepool.Get(n) }

// putBuf gives a frame buffer from getBuf back once nothing refers to it
// (other slices are dropped): once the pools are warm, a block costs no
// allocation.
func (f *fetch) putBuf(b []byte) { sizepool.Put(b) }

// store verifies and stores block i received from src (over a relayed
// connection if relayed).
func (f *fetch) store(src *source, i int, data []byte, relayed bool) error {
	f.mu.Lock()
	f.received += int64(len(data))
	if relayed {
		f.sum.RelayedBytes += int64(len(data))
		f.noteRelayed(src.id, len(data))
	}
	f.mu.Unlock()
	if f.t.Has(i) {
		f.mu.Lock()
		f.sum.Redundant++
		f.pick.Done(i, false)
		f.mu.Unlock()
		return nil
	}
	err := f.t.Put(i, data)
	f.mu.Lock()
	f.pick.Done(i, err != nil)
	if err != nil {
		if errors.Is(err, wire.ErrBadBlock) {
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
	if src.push {
		src.share.Pushed++
		f.sum.Pushed++
	}
	f.lastProgress = f.p.clk.Now()
	f.lastStored = f.lastProgress
	held := f.c.Store.HeldCount()
	// Near the end, a source with nothing left to claim looks again at
	// each block stored: the last blocks may sit with a slower source
	// (endgameDue).
	tail := f.c.Man.BlockCount()-held <= sched.EndgameBlocks
	var prog Progress
	if f.fc.Progress != nil {
		prog = Progress{Blocks: held, TotalBlocks: f.c.Man.BlockCount(), Received: f.received, Peers: f.active, TotalBytes: f.c.Man.TotalSize()}
	}
	f.mu.Unlock()
	if tail {
		f.notify()
	}
	if f.t.Plain() {
		// Watches of this content, and the sources this fetch watches,
		// hear of the block (see Hello.Watch).
		f.c.NoteGain(i)
		f.announce(i)
	}
	if f.fc.Progress != nil {
		prog.Bytes = f.c.Man.BytesOf(held)
		f.progMu.Lock()
		f.fc.Progress(prog)
		f.progMu.Unlock()
	}
	if f.t.Complete() {
		f.doneOnce.Do(func() { close(f.done) })
	}
	return nil
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
	if f.fc.Events != nil && errors.Is(err, wire.ErrBadBlock) {
		f.p.log.Info("dropping peer", "peer", src.id, "err", err) // a FetchPeerBanned event told
	} else {
		f.p.log.Warn("dropping peer", "peer", src.id, "err", err)
	}
	f.c.Forget(src.id)
	f.bans.Save(src.id, f.p.guard.Ban(src.id))
}

func (f *fetch) dropQuietly(src *source, why string) {
	f.mu.Lock()
	src.share.Dropped = why
	f.banned[src.id] = why
	f.mu.Unlock()
}
