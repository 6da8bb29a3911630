package swarm

import (
	"errors"
	"sync"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// errStalled ends a download whose source kept the fetch waiting for its
// next block longer than the fetch allows (fetch.allowedWait): its
// requested blocks go to the other sources.
var errStalled = errors.New("stalled")

// stallRounds is how many downloads in a row a source may stall, without
// sending a block in between, before the fetch drops it.
const stallRounds = 3

// stallRecheck is how often a wait is looked at again while the fetch
// knows too few waits to bound it (sched.MinWaits): the first blocks of
// the other sources bound it as they come.
const stallRecheck = 25 * time.Millisecond

// allowedWait is how long src may keep the fetch waiting for its next
// block (sched.Waits.Allowed): a few times what the fetch's sources take
// at the 99th percentile, at least three of src's round trips, at most
// the stall timeout (Config.StallTimeout). Alone, a source is allowed the
// stall timeout: nobody else could take its blocks.
func (f *fetch) allowedWait(src *source) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	limit := f.p.cfg.StallTimeout
	if f.active < 2 {
		return limit
	}
	return f.waits.Allowed(3*src.flow.RTT(), limit)
}

// stallWatch ends a download's wait for its source's next block once the
// wait is longer than the fetch allows (fetch.allowedWait), by moving the
// read deadline of the blocks stream to the past. The allowance is looked
// at again as the fetch learns its sources' waits, so a source that never
// sends a block is given up as soon as the others show what a block takes.
type stallWatch struct {
	w  worker
	cs *ClientStream

	mu      sync.Mutex
	since   time.Time   // the wait's start; zero when not waiting
	timer   clock.Timer // nil until the first wait
	stalled bool        // the wait was ended by the watch
	allowed time.Duration
}

// begin notes that the download waits for a block from now on.
func (s *stallWatch) begin(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since, s.stalled = now, false
	d := s.next(now)
	if s.timer == nil {
		s.timer = s.w.p.clk.AfterFunc(d, s.check)
	} else {
		s.timer.Reset(d)
	}
}

// end notes that the wait is over and reports whether the watch ended it.
func (s *stallWatch) end() (stalled bool, allowed time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since = time.Time{}
	return s.stalled, s.allowed
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
	s.allowed = s.w.allowedWait(s.w.src)
	d := s.since.Add(s.allowed).Sub(now)
	s.w.mu.Lock()
	known := s.w.waits.Known()
	s.w.mu.Unlock()
	if !known {
		d = min(d, stallRecheck)
	}
	return max(d, 0)
}

// check ends the wait if it is over its allowance, or looks again later.
func (s *stallWatch) check() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since.IsZero() {
		return
	}
	now := s.w.p.clk.Now()
	if d := s.next(now); d > 0 {
		s.timer.Reset(d)
		return
	}
	s.stalled = true
	// A deadline in the past ends the blocked read at once.
	s.cs.s.SetReadDeadline(time.Unix(1, 0))
}
