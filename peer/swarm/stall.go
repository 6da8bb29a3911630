package swarm

import (
	"errors"
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/sched"
	"github.com/reconcile-p2p/reconcile/peer/serve"
)

// errStalled ends a download whose source kept the fetch waiting for its
// next block longer than the fetch allows (stallWatch.allowedWait): its
// requested blocks go to the other sources.
var errStalled = errors.New("stalled")

// stallRounds is how many downloads in a row a source may stall, without
// sending a block in between, before the fetch drops it.
const stallRounds = 3

// stallRecheck is how often a wait is looked at again while the fetch
// knows too few waits to bound it (sched.MinWaits): the first blocks of
// the other sources bound it as they come.
const stallRecheck = 25 * time.Millisecond

// allowedWait is how long the watched source may keep the fetch waiting for its next
// block (sched.Waits.Allowed): a few times what the fetch's sources take
// at the 99th percentile, at least three of src's round trips, at most
// the stall timeout (Config.StallTimeout). Alone, a source is allowed the
// stall timeout: nobody else could take its blocks.
func (s *stallWatch) allowedWait() time.Duration {
	f, src := s.w.fetch, s.w.src
	f.mu.Lock()
	defer f.mu.Unlock()
	limit := f.p.cfg.StallTimeout
	if f.active < 2 {
		return limit
	}
	return f.waits.Allowed(3*src.flow.RTT(), limit)
}

// lenScale is block i's length in average blocks, for content-defined
// blocks (1 for fixed-size ones, and for other units): the fetch counts its
// waits in blocks of the average length, so that a source sending a long
// block is not taken for a stalled one.
func (f *fetch) lenScale(i int) float64 {
	m := f.c.Man
	if !m.ContentDefined() || !serve.IsBlockMethod(f.fc.Method) || i < 0 || i >= m.BlockCount() {
		return 1
	}
	return float64(max(m.BlockLen(i), 1)) / float64(max(m.AvgBlockLen(), 1))
}

// stallAbort is how many times its allowance (allowedWait) a wait goes on
// after its blocks were asked of others, before the source is given up: a
// slow but honest source, whose blocks take longer than the others' until
// its own waits are among the fetch's, still delivers what it was asked.
const stallAbort = 4

// stallWatch watches a download's waits for its source's next block. Once
// a wait is longer than the fetch allows the source (stallWatch.allowedWait),
// it lets the other sources claim the blocks the download waits for (the
// first copy to arrive is stored, a later one counted redundant); once it
// is stallAbort times longer, it ends the wait by moving the read deadline
// of the blocks stream to the past. The allowance is looked at again as
// the fetch learns its sources' waits, so a source that never sends a
// block is given up as soon as the honest ones show what a block takes.
type stallWatch struct {
	w        worker
	cs       *ClientStream
	inflight map[int]struct{} // the download's, read only while a wait runs

	mu       sync.Mutex
	since    time.Time   // the wait's start; zero when not waiting
	timer    clock.Timer // nil until the first wait
	released int         // blocks of this wait asked of others
	aborted  bool        // the wait was ended by the watch
	allowed  time.Duration
	// fresh is when a new wait is first looked at: the allowance last
	// worked out, or stallRecheck while the fetch knows too few waits.
	fresh time.Duration
}

// begin notes that the download waits for a block from now on.
func (s *stallWatch) begin(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since, s.released, s.aborted = now, 0, false
	// The allowance of the last wait looked at (check works out the
	// current one when the timer fires): a wait per block read, and most
	// end long before their allowance, so none sorts the fetch's waits.
	d := s.fresh
	if d == 0 {
		d = stallRecheck
	}
	if s.timer == nil {
		s.timer = s.w.p.clk.AfterFunc(d, s.check)
	} else {
		s.timer.Reset(d)
	}
}

// end notes that the wait is over: it returns how many of the blocks
// waited for were asked of others, and whether the watch ended the wait.
// The download may touch its inflight blocks again from then on.
func (s *stallWatch) end() (released int, aborted bool, allowed time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since = time.Time{}
	return s.released, s.aborted, s.allowed
}

// stop stops the watch for good.
func (s *stallWatch) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since = time.Time{}
	if s.timer != nil {
		s.timer.Stop()
	}
}

// next returns when to look at the wait begun at since again, from now
// (s.mu held).
func (s *stallWatch) next(now time.Time) time.Duration {
	// The waits are counted in blocks of the average length (lenScale): a
	// wait for longer blocks is allowed that much more.
	scale := 1.0
	for i := range s.inflight {
		scale = max(scale, s.w.fetch.lenScale(i))
	}
	s.allowed = time.Duration(float64(s.allowedWait()) * scale)
	limit := s.allowed
	if s.released > 0 {
		limit *= stallAbort
	}
	d := s.since.Add(limit).Sub(now)
	s.w.mu.Lock()
	known := s.w.waits.Known()
	s.w.mu.Unlock()
	s.fresh = s.allowed
	if !known {
		d = min(d, stallRecheck)
		s.fresh = stallRecheck
	}
	return max(d, 0)
}

// check asks the blocks of a wait over its allowance of the other
// sources, ends one over stallAbort times it, or looks again later.
func (s *stallWatch) check() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since.IsZero() || s.aborted {
		return
	}
	now := s.w.p.clk.Now()
	if d := s.next(now); d > 0 {
		s.timer.Reset(d)
		return
	}
	if s.released > 0 && !s.othersHave() {
		// A block it was asked for that no other source may bring (none
		// offered it, or it is refused there): waited for, up to the stall
		// timeout, however slowly it comes.
		s.timer.Reset(s.allowed)
		return
	}
	if s.released == 0 && len(s.inflight) > 0 {
		f, src := s.w.fetch, s.w.src
		idx := make([]int, 0, len(s.inflight))
		for i := range s.inflight {
			idx = append(idx, i)
		}
		f.mu.Lock()
		f.pick.Unclaim(src.id, &src.offers, idx)
		f.mu.Unlock()
		f.notify()
		s.released = len(idx)
		s.timer.Reset(s.next(now))
		return
	}
	s.aborted = true
	// A deadline in the past ends the blocked read at once.
	s.cs.s.SetReadDeadline(time.Unix(1, 0))
}

// endgameDue reports whether the worker's source, with nothing of its own left to claim,
// may take second claims on the fetch's last blocks (sched.Picker.Endgame)
// now (f.mu held): once the fetch has stored nothing for twice the median
// of its waits (at least three of src's round trips, and a millisecond),
// the last blocks sit with a source slower than the fetch's usual, and src
// may bring them sooner (the first copy is stored, the other counted
// redundant; at most sched.EndgameBlocks blocks at a time). With
// WithEndgame, also once the fetch has stored nothing for
// sched.EndgameWait.
func (w worker) endgameDue() bool {
	f, src := w.fetch, w.src
	if f.c.Man.BlockCount()-f.c.Store.HeldCount() > sched.EndgameBlocks {
		return false // not the last blocks yet: the waits need no sorting
	}
	idle := f.p.clk.Since(f.lastStored)
	if f.fc.Endgame && idle >= sched.EndgameWait {
		return true
	}
	p50, ok := f.waits.P50()
	return ok && idle >= max(2*p50, 3*src.flow.RTT(), time.Millisecond)
}

// othersHave reports whether every block the wait is for is held or
// claimed by another source now (s.mu held): only then does ending the
// wait cost the fetch nothing.
func (s *stallWatch) othersHave() bool {
	f, src := s.w.fetch, s.w.src
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range s.inflight {
		if c, ok := f.pick.Claimed[i]; (!ok || c == src.id) && !f.t.Has(i) {
			return false
		}
	}
	return true
}

// slowerThan returns which claimants the worker's source may take the last
// blocks from in the endgame (f.mu held): with WithEndgame any; otherwise
// those that take more than four times as long as it does for a block (a
// claimant that has sent none yet is the stall watch's business). A source
// that has not sent a block yet takes from none.
func (w worker) slowerThan() func(lpeer.ID) bool {
	f, src := w.fetch, w.src
	if f.fc.Endgame {
		return nil
	}
	mine := src.gap
	return func(c lpeer.ID) bool {
		if mine == 0 {
			return false
		}
		o := f.sources[c]
		return o != nil && o.gap > 4*mine
	}
}
