package swarm

import (
	"slices"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// A child tells each parent whose push stream asks for it (Hello.Watch)
// the blocks of the parent's stripes it asks of other peers, in have
// frames on that stream, and the parent does not push them (readGains).
// Told once the blocks came, a parent whose pushes lagged had pushed many
// of them meanwhile (a pull and a push crossing).

// gainTell is a child's queue of blocks to tell one parent, and its
// writer's wake-up (the Trees' mu held around q).
type gainTell struct {
	q    []int
	wake chan struct{}
}

// readGains reads the have frames a child that took o's push stream sends
// of the blocks of its stripes it asked of other peers, and marks them
// in o.has (not pushed to it), until the stream ends. A child that pulled a
// block while its parent's pushes lagged (a parent whose uplink its
// children and the pulls of others share) was pushed it too: in a 20-peer
// testnet without latency, 4 joined trees, half the blocks received twice.
func (t *Trees) readGains(cs *ClientStream, o *pushOut) {
	n := t.c.Man.BlockCount()
	var idx []int
	for {
		f, err := cs.nextQuiet(serve.HaveFrameMax)
		if err != nil {
			return
		}
		if idx, err = wire.DecodeHave(idx[:0], f, serve.MaxHave, n); err != nil {
			cs.s.Reset() // the writer's next write fails: the stream ends
			return
		}
		t.mu.Lock()
		for _, i := range idx {
			o.markHas(i, n)
		}
		t.mu.Unlock()
	}
}

// fetchingFrom notes that this peer asks peer from for block i: when i's
// stripe has a parent other than from whose push stream asked to hear of
// such blocks, the parent is told, and fetchingFrom reports true.
func (t *Trees) fetchingFrom(from lpeer.ID, i int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	parent := t.tree.Parent(t.stripe(i))
	g := t.tells[parent]
	if parent == "" || parent == from || g == nil {
		return false
	}
	g.q = append(g.q, i)
	select {
	case g.wake <- struct{}{}:
	default:
	}
	return true
}

// tellParents tells the parents in the stripe trees (if any) of the
// blocks batch this fetch asks of peer from, which they need not push
// then (fetchingFrom). A block told is no longer held for its parent's
// pushes, so that if the request fails it is asked again of any source.
func (f pushSink) tellParents(from lpeer.ID, batch []int) {
	t := TreesOf(f.c)
	if t == nil {
		return
	}
	var told []int
	for _, i := range batch {
		if t.fetchingFrom(from, i) {
			told = append(told, i)
		}
	}
	if len(told) == 0 {
		return
	}
	now := f.p.clk.Now()
	f.mu.Lock()
	for _, i := range told {
		f.pick.See(i, now)
	}
	f.mu.Unlock()
}

// tellGains writes have frames of the blocks queued for parent on its push
// stream ss until done is closed or a write fails.
func (t *Trees) tellGains(ss *serve.Stream, parent lpeer.ID, g *gainTell, done <-chan struct{}) {
	defer func() {
		t.mu.Lock()
		if t.tells[parent] == g {
			delete(t.tells, parent)
		}
		t.mu.Unlock()
	}()
	var q []int
	for {
		select {
		case <-g.wake:
		case <-done:
			return
		}
		t.mu.Lock()
		q, g.q = g.q, q[:0]
		t.mu.Unlock()
		slices.Sort(q)
		for k := 0; k < len(q); k += serve.MaxHave {
			if err := ss.Send(wire.AppendHave(nil, q[k:min(len(q), k+serve.MaxHave)])); err != nil {
				return
			}
		}
		if len(q) > 0 && ss.Flush() != nil {
			return
		}
	}
}
