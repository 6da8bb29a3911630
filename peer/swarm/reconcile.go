package swarm

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// reconcileWith runs one reconciliation session with src and returns the
// offered blocks the fetcher still lacks. With a one-round method it asks
// for a watch (Hello.Watch) and keeps the stream as src.watch.
func (w worker) reconcileWith() ([]int, error) {
	f, src := w.fetch, w.src
	// The stream lives as long as the watch (or the session, without one);
	// the session itself has 4 idle periods.
	wctx, wcancel := context.WithCancel(f.ctx)
	sctx, scancel := clock.WithTimeout(wctx, f.p.clk, 4*f.p.cfg.StreamIdle)
	defer scancel()
	root := f.c.Man.ID()
	watch := f.t.Method() != reconcile.IBLT && f.t.Plain()
	hello := wire.Hello{Root: root[:], Coded: !f.t.Plain(), Watch: watch}
	cs, err := f.p.RequestHello(wctx, src.id, wire.ProtoReconcile, hello)
	if err != nil {
		wcancel()
		return nil, err
	}
	began := f.p.clk.Now()
	s, trips, err := f.p.PullSession(sctx, cs, f.t.Responder(), f.t.Method(), f.t.Held(), watch)
	if err != nil {
		cs.Reset()
		wcancel()
		return nil, err
	}
	if trips > 0 {
		src.flow.NoteRTT(f.p.clk.Since(began) / time.Duration(trips))
	}
	if watch {
		cs.stop() // the watch ends it (close or end), or the fetch's end does
		stop := context.AfterFunc(f.ctx, func() { cs.s.Reset() })
		cs.stop = func() bool { wcancel(); return stop() }
		w := w.startWatch(cs)
		f.mu.Lock()
		src.watch = w
		f.mu.Unlock()
	} else {
		cs.Close()
		wcancel()
	}
	o := s.Outcome()
	var lacking []int
	for _, i := range s.Wanted() {
		if !f.t.Has(i) {
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
