package swarm

import (
	"errors"
	"fmt"
	"io"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/stripes"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// pushSink is a fetch's side of the stripe trees: it takes the blocks its
// parents push, holds back the pulls of the stripes whose pushes come, and
// refuses a parent that lies.
type pushSink struct{ *fetch }

// pushedBy notes that parent id pushed block i; an error when i's stripe
// is not id's to push or id's pushes are refused (it pushed a corrupt
// block before).
func (t *Trees) pushedBy(id lpeer.ID, i int) error {
	s := t.stripe(i)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.tree.PushedBy(id, i, t.p.clk.Now()) {
	case stripes.NotNow:
		// The planned parent, back after another adopted this peer.
		return errNotNow
	case stripes.NotTheirs:
		return fmt.Errorf("%w: push of block %d: stripe %d is not the sender's to push", wire.ErrMalformed, i, s)
	case stripes.Refused:
		return fmt.Errorf("%w: pushes refused after a corrupt one", wire.ErrBadBlock)
	}
	return nil
}

// ParentFailed marks id gone (its stream failed) or refused (bad pushes,
// or a phantom),
// and asks to be adopted in the stripes it parents where this peer has
// children (adopt).
func (t *Trees) ParentFailed(id lpeer.ID, refused bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.tree.ParentFailed(id, refused) {
		if !t.p.goroutine(func() { t.adopt(s) }) {
			return
		}
	}
}

// errNotParent refuses a push stream of a peer that is no parent.
var errNotParent = errors.New("not a parent in the content's stripe trees")

// ServePush takes the blocks a parent pushes (wire.ProtoPush): each is checked
// against the parent's stripes, verified and stored as a fetched block is,
// and passed on to this peer's children.
func (p *Node) ServePush(ss *serve.Stream) error {
	c := ss.C
	t := TreesOf(c)
	from := ss.S.Conn().RemotePeer()
	if t == nil || !t.Accepts(from) {
		return p.srv.Refuse(ss, errNotParent)
	}
	// Taken: an empty have frame says so.
	if err := ss.Send(wire.AppendHave(nil, nil)); err != nil {
		return err
	}
	if err := ss.Flush(); err != nil {
		return err
	}
	if ss.Hello.Watch {
		// The parent hears of the blocks of its stripes this peer asks of
		// others (readGains).
		g := &gainTell{wake: make(chan struct{}, 1)}
		t.mu.Lock()
		t.tells[from] = g
		t.mu.Unlock()
		done, told := make(chan struct{}), make(chan struct{})
		if !p.goroutine(func() { defer close(told); t.tellGains(ss, from, g, done) }) {
			return wire.ErrClosed
		}
		defer func() { close(done); <-told }()
	}
	err := p.readPushes(ss, t, from)
	if err != nil && !errors.Is(err, io.EOF) {
		t.ParentFailed(from, errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrFrameTooLarge) || errors.Is(err, wire.ErrBadBlock))
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// readPushes reads and stores the pushes of from until the stream ends.
func (p *Node) readPushes(ss *serve.Stream, t *Trees, from lpeer.ID) error {
	c := ss.C
	limit := c.Man.BlockCount()
	max := c.Man.BlockSize() + 1 + serve.MaxVarint
	// A push stream is quiet while the parent waits for blocks; the
	// service's close or the parent's end it.
	if err := ss.S.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	var recv, sent int64 // the stream's bytes up to the last frame
	for {
		f := FetchOf(c)
		fr, relayed, err := t.readPush(ss, from, max)
		// A running fetch counts the stream's bytes since the last frame
		// (its hello and answer with the first): the pushes it takes in.
		r, s := ss.Bytes.Received(), ss.Bytes.Sent()
		if g := FetchOf(c); g.Running() {
			g.wireBytes.Add(r-recv, s-sent)
		}
		recv, sent = r, s
		if err != nil {
			return err
		}
		if len(fr) > 0 && fr[0] == wire.TypeHave {
			// Blocks the parent sheds: fetched from other sources.
			idx, err := wire.DecodeHave(nil, fr, limit, limit)
			if f != nil {
				f.putBuf(fr)
			}
			if err != nil {
				return err
			}
			t.shedBy(from, idx)
			continue
		}
		i, data, ok, err := wire.DecodeBlock(fr, limit)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: a push of block %d says it is missing", wire.ErrMalformed, i)
		}
		if err := t.pushedBy(from, i); errors.Is(err, errNotNow) {
			if f != nil {
				f.putBuf(fr)
			}
			continue
		} else if err != nil {
			return err
		}
		if relayed {
			// The children's writers read the frame until the store holds
			// the block: its memory does not go back to the pool.
			fr = nil
		}
		if f != nil && (pushSink{f}).takePush(from, i, data, fr) {
			continue
		}
		// No fetch runs: stored here (the store verifies it).
		if c.Store.Has(i) {
			continue
		}
		if err := c.Store.PutBlock(i, data); err != nil {
			if errors.Is(err, chunker.ErrBadBlock) {
				return fmt.Errorf("%w: pushed block %d: %v", wire.ErrBadBlock, i, err)
			}
			return err
		}
		c.NoteGain(i)
	}
}

// Running reports whether f (nil: no fetch) runs: started, not ended.
func (f *fetch) Running() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started && f.ctx.Err() == nil
}

// takePush hands block i, pushed by parent from, to the fetch's writers,
// as a block fetched from a source of its own; false when the fetch has not
// started or has ended (the caller stores it).
func (f pushSink) takePush(from lpeer.ID, i int, data, buf []byte) bool {
	f.mu.Lock()
	if !f.started || f.ctx.Err() != nil { // not running (f.mu held)
		f.mu.Unlock()
		return false
	}
	src := f.pushSrc[from]
	if src == nil {
		sh := f.shares[from]
		if sh == nil {
			sh = &PeerShare{Peer: from.String()}
			f.shares[from] = sh
		}
		src = &source{id: from, share: sh, push: true, useful: f.p.clk.Now()}
		f.pushSrc[from] = src
	}
	f.wg.Add(1) // the writers' queue is closed only after f.wg is done
	f.mu.Unlock()
	defer f.wg.Done()
	select {
	case f.writes <- writeJob{src: src, i: i, data: data, buf: buf, relayed: f.p.PathTo(from) == hostkit.PathRelayed}:
	case <-f.ctx.Done():
		f.putBuf(buf)
	}
	return true
}

// refuseParent refuses id as a parent in the content's stripe trees (if
// it is one: it pushed a corrupt block, or lies in its offers): its pushes
// are refused from then on, its stripes are no longer held for them and
// are repaired, by adoption where this peer has children in them.
func (f pushSink) refuseParent(id lpeer.ID) {
	if t := TreesOf(f.c); t != nil {
		t.ParentFailed(id, true)
		f.updateHeld()
	}
}

// updateHeld looks at the content's stripe trees and holds back the
// blocks of the stripes whose pushes come (picker.hold); when a stripe is
// let go, or a block has been offered by a source that is not full for the
// repair time without being pushed, the sources look at them again.
func (f pushSink) updateHeld() {
	t := TreesOf(f.c)
	if t == nil {
		return
	}
	now := f.p.clk.Now()
	f.mu.Lock()
	prev := f.held
	f.held = t.HeldStripes(now, f.heldBuf)
	f.heldBuf = prev
	f.stripeOf = t.stripe
	opened := false
	for s, h := range f.held {
		if !h && (s >= len(prev) || prev[s]) {
			opened = true
		}
	}
	// The blocks whose deadlines passed (Picker.See) are let go: holds
	// lets them be claimed from now on, and the sources look again.
	if f.pick.ExpireSeen(now) {
		opened = true
	}
	if opened {
		f.pick.Releases++
	}
	f.mu.Unlock()
	if opened {
		f.notify()
	}
}

// lateAfter is how many repair times after another peer offered it a
// block is fetched although its stripe's pushes come: in the 200-peer
// testnet (16 MiB, 16 trees of 16 KiB blocks, 2 s) a block reaches some
// peers more than 4 s after others (twice the repair time there fetched 424
// blocks early, from the seed mostly, for 1.26x T* against 1.22x).
const lateAfter = 4

// seeFromLocked gives the blocks idx src offered their deadlines for
// holds (f.mu held): a repair time from now when src is the block's parent,
// lateAfter times that when src is another peer; none when src is full (a
// seed, or a peer done: its pushes come in their own time).
func (w worker) seeFromLocked(idx []int) {
	f, src := w.fetch, w.src
	t := TreesOf(f.c)
	if t == nil || src.offers.Full || f.pick.Hold == nil {
		return
	}
	now := f.p.clk.Now()
	t.mu.Lock() // after f.mu, as in updateHeld
	defer t.mu.Unlock()
	for _, i := range idx {
		s := t.stripe(i)
		if t.tree.Parent(s) == src.id {
			f.pick.See(i, now.Add(t.tree.Repair()))
		} else {
			f.pick.See(i, now.Add(lateAfter*t.tree.Repair()))
		}
	}
}

// holds reports whether block i is left to the pushes now (f.mu held):
// while its stripe's pushes come and its deadline (picker.see) has not
// passed. A block's parent that offered it a repair time ago has not
// pushed it (it got the block before this peer took its pushes, as for a
// peer that joined or came back late, or the push was lost with a
// stream); one that another peer offered lateAfter times that long ago is
// late down the tree (a parent repairing in turn): both are fetched.
func (f pushSink) holds(i int, deadline time.Time) bool {
	return len(f.held) > 0 && f.held[f.stripeOf(i)] && (deadline.IsZero() || f.p.clk.Now().Before(deadline))
}
