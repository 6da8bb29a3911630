package swarm

import (
	"errors"
	"fmt"
	"slices"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/internal/sizepool"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/stripes"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Gained queues block i for the children of its stripe.
func (t *Trees) Gained(i int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// None while the stripe is orphaned: its children repair it. Nor
	// again to the children it was queued for as it arrived (relay).
	to := t.relayedLocked(i)
	for _, child := range t.tree.Gained(i) {
		if slices.Contains(to, child) {
			continue
		}
		if !t.pushLocked(child, i) {
			return // closed
		}
	}
}

// pushLocked queues block i for child and sees that its writer runs
// (t.mu held); false when the service is closed.
func (t *Trees) pushLocked(child lpeer.ID, i int) bool {
	o := t.outs[child]
	if o == nil {
		o = &pushOut{wake: make(chan struct{}, 1)}
		t.outs[child] = o
	}
	t.queue(o, i)
	return t.kickLocked(child, o)
}

// kickLocked sees that o's writer runs, unless a retry of a stream that
// failed is due (t.mu held); false when the service is closed.
func (t *Trees) kickLocked(child lpeer.ID, o *pushOut) bool {
	if !o.running {
		if o.failures > 0 && o.failures <= pushRetries {
			return true // a retry is due
		}
		o.failures = 0
		if !t.p.goroutine(func() { t.write(child, o) }) {
			return false
		}
		o.running = true
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return true
}

// write pushes the blocks queued for child over one stream until the
// service closes or the stream fails (see pushOut.failures).
func (t *Trees) write(child lpeer.ID, o *pushOut) {
	p := t.p
	accepted, err := t.stream(child, o)
	if p.ctx.Err() != nil {
		return
	}
	p.log.Debug("push stream failed", "peer", child, "err", err)
	t.mu.Lock()
	defer t.mu.Unlock()
	o.running = false
	t.tree.SetUp(child, false)
	clear(o.sent) // what the stream carried may be lost with it
	if o.asked {
		// The child asked for blocks (adoptee) while this stream failed:
		// it is there now, and its queue goes out at once.
		o.asked, o.failures = false, 0
		if len(o.q) > 0 && t.p.goroutine(func() { t.write(child, o) }) {
			o.running = true
		}
		return
	}
	if accepted {
		// The child took the stream and then left (or failed): what is
		// queued is dropped (it repairs it, if it comes back) until the
		// next gain.
		o.failures = pushRetries
		t.tree.StreamFailed(child)
	}
	if o.failures++; o.failures > pushRetries {
		t.tree.Dequeue(o.q...)
		o.q = nil
		t.tree.DropAdoptee(child)
		return
	}
	// Tried again a repair time later, with what is queued by then.
	t.p.clk.AfterFunc(t.repair, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if o.running || len(o.q) == 0 {
			o.failures = 0
			return
		}
		if t.p.goroutine(func() { t.write(child, o) }) {
			o.running = true
		}
	})
}

// stream opens a push stream to child and writes the blocks queued in o
// until the service closes or the stream fails; it reports whether the
// child took the stream. The blocks go out right after the hello: the
// child answers whether it takes them (an empty have frame) or not (an
// error frame: no place in the trees yet, or not its parent), and nothing
// after, so that the stream's end is read as the child leaving. Blocks
// written before the answer are queued again when it is a refusal.
func (t *Trees) stream(child lpeer.ID, o *pushOut) (accepted bool, err error) {
	p, c := t.p, t.c
	root := c.Man.ID()
	// Watch: the child tells this peer the blocks of its stripes it asks
	// of others (have frames, readGains), which are then not pushed to it.
	cs, err := p.RequestHello(p.ctx, child, wire.ProtoPush, wire.Hello{Root: root[:], Watch: true})
	if err != nil {
		return false, err
	}
	defer cs.Close()
	answer, gone := make(chan error, 1), make(chan struct{})
	if !p.goroutine(func() {
		defer close(gone)
		f, err := cs.nextQuiet(serve.HaveFrameMax)
		switch {
		case err != nil:
		case len(f) == 0 || f[0] != wire.TypeHave:
			err = wire.DecodeError(f)
			cs.s.Reset() // a write waiting for the child's window ends
		default:
			answer <- nil
			t.readGains(cs, o)
			return
		}
		answer <- err
	}) {
		return false, wire.ErrClosed
	}
	// Until the child has answered, the blocks written are kept, with the
	// rest of the batch, to be queued again if the stream fails.
	var unanswered, rest []int
	defer func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !accepted && p.ctx.Err() == nil {
			t.tree.Queue(unanswered...)
			o.q = append(append(unanswered, rest...), o.q...)
		} else {
			t.tree.Dequeue(rest...)
		}
	}()
	var buf []byte // a whole frame's buffer (storedFrame), while a block goes out
	wait := answer
	for {
		t.mu.Lock()
		if accepted && t.tree.TakeCut(child) {
			// Let go (orphanLocked): reset once taken, so that the child
			// repairs.
			t.mu.Unlock()
			cs.Reset()
			return accepted, errors.New("let go: this peer lost the stripe's parent")
		}
		// Past a backlog, what other peers hold is shed.
		var shed []int
		rest, shed = t.tree.Batch(child, o.q, accepted, t.p.clk.Now())
		o.q = nil
		for _, i := range rest {
			o.markSent(i, c.Man.BlockCount())
		}
		t.mu.Unlock()
		if len(shed) > 0 {
			// The child fetches those from its own sources.
			if err := cs.Send(wire.AppendHave(nil, shed)); err != nil {
				return accepted, err
			}
		}
		for len(rest) > 0 {
			select {
			case err := <-wait:
				if err != nil {
					return false, err
				}
				accepted, wait, unanswered = true, nil, nil
				t.setUp(child, o, true)
			default:
			}
			i := rest[0]
			t.mu.Lock()
			still := t.tree.PushesTo(child, i)
			held := o.has.has(i)
			t.mu.Unlock()
			var frame []byte
			var r *relay // the block arriving, passed on as it comes
			var err error
			if still && held {
				// It holds the block by its catch-up request (noteHeld),
				// or said it asks another peer for it (readGains).
				// (Not by its filter, if it watches this peer: a false
				// positive left a block unpushed for a repair time, and
				// the 200-peer testnet's trees ended at 1.57x T* instead
				// of 1.29x.)
				still = false
			}
			if still {
				t.mu.Lock()
				r = t.relays[i]
				t.mu.Unlock()
				switch {
				case r == nil && c.Store.Pieces():
					// Read a piece at a time as it goes out (sendStored).
					if !c.Store.Has(i) {
						err = chunker.ErrNotHeld
					}
				case r == nil:
					frame, err = storedFrame(c, &buf, i)
				}
			}
			if !still || errors.Is(err, chunker.ErrNotHeld) {
				// No longer its child in that stripe (a root the seed cut,
				// an adoptee dropped), held by it already, or a seed's
				// file changed (the child repairs it): skipped.
				putPushFrame(buf)
				buf = nil
				rest = rest[1:]
				t.mu.Lock()
				t.tree.Dequeue(i)
				t.mu.Unlock()
				continue
			}
			if err != nil {
				return accepted, err
			}
			switch {
			case r != nil:
				err = t.passOn(cs, r, i, gone)
			case frame == nil:
				err = t.sendStored(cs, i)
			default:
				if err = p.srv.WaitUpload(len(frame)); err == nil {
					err = sendPieces(cs, frame)
				}
			}
			if err != nil {
				return accepted, err
			}
			putPushFrame(buf)
			buf = nil
			rest = rest[1:]
			t.mu.Lock()
			t.tree.Dequeue(i)
			t.tree.Moved(child, t.p.clk.Now())
			t.mu.Unlock()
			if !accepted {
				unanswered = append(unanswered, i)
			}
			c.NoteSent(child, c.Man.BlockLen(i))
			if c.Super != nil {
				// A super-seed offers its watchers a pushed block as sent:
				// counted as never sent, it was offered again while every
				// root had it (the update testnet's seed sent 1.95 copies
				// of the new blocks).
				c.Super.NoteSent(child, i)
			}
			if p.cfg.Observer != nil {
				p.srv.Observe(serve.Event{Kind: serve.EventBlockSent, Peer: child, Root: root, Index: i, Bytes: c.Man.BlockLen(i), Pushed: true})
			}
		}
		// The hello goes out now if no block did.
		if err := cs.Flush(); err != nil {
			return accepted, err
		}
		select {
		case <-o.wake:
		case err := <-wait:
			if err != nil {
				return false, err
			}
			accepted, wait, unanswered = true, nil, nil
			t.setUp(child, o, true)
		case <-gone:
			return accepted, errChildGone
		case <-p.ctx.Done():
			return accepted, nil
		}
	}
}

// pushBacklog is how many blocks may wait for one child, for a repair time
// on end, before this peer sheds the oldest that other peers hold
// (stripes.Backlog).
const pushBacklog = stripes.Backlog

// shedBy lets the running fetch take from its sources the blocks idx that
// parent shed (a have frame on its push stream, see stripes.Tree.Batch): those of
// the stripes it is this peer's parent in.
func (t *Trees) shedBy(parent lpeer.ID, idx []int) {
	t.mu.Lock()
	idx = slices.DeleteFunc(idx, func(i int) bool { return t.tree.Parent(t.stripe(i)) != parent })
	t.mu.Unlock()
	t.fetchElsewhere(idx)
}

// putPushFrame gives back a whole frame's buffer of a push writer (a
// seed's block, checked as it is read, or the last piece a relay passes
// on), which it holds only while a block goes out: storedFrame took it from
// the process's pools by size class (package sizepool).
func putPushFrame(b []byte) { sizepool.Put(b) }

// storedFrame reads block i of c's store into *buf (a pooled buffer of the
// frame's size class when *buf is too small) as a
// whole block frame, its length prefix included, and returns the frame.
func storedFrame(c *serve.Content, buf *[]byte, i int) ([]byte, error) {
	n := c.Man.BlockLen(i)
	if cap(*buf) < serve.BlockRoom+n {
		*buf = sizepool.Get(serve.BlockRoom + n)
	}
	b := (*buf)[:serve.BlockRoom]
	data, err := c.Store.ReadBlock(i, b[serve.BlockRoom:])
	if err != nil {
		return nil, fmt.Errorf("read block %d: %w", i, err)
	}
	var hdr [1 + serve.MaxVarint]byte
	return serve.FrameAround(b, wire.AppendBlockHeader(hdr[:0], i), len(data)), nil
}

// HeldStripes reports, per stripe, whether a fetch leaves its blocks to the
// pushes now: while its parent is up and pushed within the repair time.
func (t *Trees) HeldStripes(now time.Time, dst []bool) []bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tree.Held(now, dst)
}

// setUp notes that child's stream is up, or not.
func (t *Trees) setUp(child lpeer.ID, o *pushOut, up bool) {
	t.mu.Lock()
	t.tree.SetUp(child, up)
	if up {
		o.asked = false // the child took the stream it asked for
		t.tree.Moved(child, t.p.clk.Now())
	}
	t.mu.Unlock()
}

// queue queues block i for o (t.mu held).
func (t *Trees) queue(o *pushOut, i int) {
	o.q = append(o.q, i)
	t.tree.Queue(i)
}

// FirstCopies reports whether this peer is a seed whose uplink goes to the
// first copies down the trees: a request for blocks idx is answered busy
// (stripes.Tree.FirstCopies).
func (t *Trees) FirstCopies(idx []int) bool {
	if !t.tree.Seed() {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tree.FirstCopies(idx, t.p.clk.Now())
}

// Accepts reports whether pushes from id are taken, and marks it up when
// they are (a new stream of a parent whose last one failed); a parent back
// (it left, or its stream failed), or that refused to catch this peer up
// before it pushed, is asked for what it held before.
func (t *Trees) Accepts(id lpeer.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	taken, catchUp := t.tree.Accepts(id)
	if catchUp {
		t.p.goroutine(func() { t.catchUp(id) })
	}
	return taken
}
