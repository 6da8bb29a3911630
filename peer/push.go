package peer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Stripes is one peer's place in the stripe trees of one content, as
// SplitStream deals a stream out: block i belongs to stripe i mod
// len(Parents), each stripe has a tree over the swarm rooted at the seed,
// and every peer passes each block it gains on to its children in that
// block's stripe (Service.Push). Trees in which every peer is an inner
// node of one stripe and a leaf of the others spread the seed's upload
// over every peer's, and bring each block to each peer once, without
// anyone asking: in the 200-peer testnet, 16 trees of 16 KiB blocks finish
// within 1.22x of the fluid bound (median; 1.3x the last) where pulls take
// 2.1x. Every
// peer must be given the same trees (derived by all from one membership
// list, as stripes.Plan does, or told by the application).
type Stripes struct {
	// Parents holds, per stripe, the peer this one takes the stripe's blocks
	// from ("" for none: a seed). Pushes from any other peer are refused,
	// but for those of a peer that adopted this one once its parent failed
	// (see Grandparents).
	Parents []lpeer.ID
	// Children holds, per stripe, the peers this one pushes the stripe's
	// blocks to (nil or shorter than Parents: none for the rest).
	Children [][]lpeer.ID
	// Grandparents holds, per stripe, its parent's parent (nil or shorter
	// than Parents, or "": none, as for a stripe's root). When a parent
	// leaves or pushes a corrupt block and this peer has children in that
	// stripe, it asks the grandparent to adopt it (ProtoAdopt), so that its
	// subtree keeps getting pushes rather than every peer in it fetching
	// the stripe: the roots' children ask the seed. A parent's answer to
	// an adoption or catch-up request names its own parent, which takes
	// the grandparent's place from then on.
	Grandparents []lpeer.ID
	// RepairAfter is how long a stripe may go without a push from its
	// parent before the fetch asks its sources for the stripe's blocks
	// (DefaultRepairAfter when zero; stretched by WithTimeScale): the
	// repair of a parent that left, lies or lags. While pushes come, a
	// fetch asks only for the stripe's blocks its parent offered this
	// long ago, or another peer four times this long ago, without pushing
	// them, so that little is sent twice. A parent whose push stream
	// fails, or that pushes a corrupt block, is repaired at once.
	RepairAfter time.Duration
}

// DefaultRepairAfter is Stripes.RepairAfter's default: a few round trips
// at wide-area latencies and a few blocks' times on a slow uplink.
const DefaultRepairAfter = 2 * time.Second

// maxStripes bounds Stripes' stripe count; maxPushChildren bounds the
// children of one peer over all stripes.
const (
	maxStripes      = 256
	maxPushChildren = 1024
)

// Push has the service pass content root's blocks down the stripe trees
// st gives its place in: every block the content's store gains from now
// on (fetched, pushed to it, or put there by anyone), and every block at
// once for content held whole (a seed), goes to the block stripe's
// children, each over one ProtoPush stream, in the order gained; pushes
// are taken from the stripes' parents only, verified like fetched blocks
// and passed on in turn. A running fetch of the content (Fetch,
// FetchServed) leaves the blocks of a stripe to its pushes while they
// come, and fetches them as usual once they stop (st.RepairAfter). The
// content must be served (Seed, Serve or a fetch started) and not be the
// Byers baseline's coded blocks; Push is set once per content.
func (p *Service) Push(root chunker.ID, st Stripes) error {
	k := len(st.Parents)
	switch {
	case k == 0 || k > maxStripes:
		return fmt.Errorf("peer: push: %d stripes (want 1 to %d)", k, maxStripes)
	case len(st.Children) > k:
		return fmt.Errorf("peer: push: children of %d stripes, parents of %d", len(st.Children), k)
	case len(st.Grandparents) > k:
		return fmt.Errorf("peer: push: grandparents of %d stripes, parents of %d", len(st.Grandparents), k)
	case st.RepairAfter < 0:
		return fmt.Errorf("peer: push: negative repair time %v", st.RepairAfter)
	}
	n := 0
	for s, kids := range st.Children {
		for a, c := range kids {
			if c == p.h.ID() || c == "" || slices.Contains(kids[:a], c) {
				return fmt.Errorf("peer: push: stripe %d: child %q is this peer, empty or listed twice", s, c)
			}
		}
		n += len(kids)
	}
	if n > maxPushChildren {
		return fmt.Errorf("peer: push: %d children (at most %d)", n, maxPushChildren)
	}
	if slices.Contains(st.Parents, p.h.ID()) || slices.Contains(st.Grandparents, p.h.ID()) {
		return errors.New("peer: push: this peer is its own parent or grandparent")
	}
	c := p.lookup(root[:])
	if c == nil {
		return fmt.Errorf("peer: push: content %s is not served: %w", root, ErrUnknownRoot)
	}
	if c.altSet() != nil {
		return errors.New("peer: push: the content is served as the Byers baseline's coded blocks")
	}
	repair := st.RepairAfter
	if repair == 0 {
		repair = DefaultRepairAfter
	}
	t := newPushTrees(p, c, st, repair)
	c.mu.Lock()
	if c.push != nil {
		c.mu.Unlock()
		return errors.New("peer: push: the content's stripes are set already")
	}
	c.push = t
	c.mu.Unlock()
	t.mu.Lock()
	for _, i := range c.store.Held() {
		t.known.set(i)
	}
	t.mu.Unlock()
	if c.store.Complete() {
		// A seed: every block, in order, to the roots of the stripes.
		for i := range c.man.BlockCount() {
			t.gained(i)
		}
	}
	if c.runningFetch().running() {
		t.catchUp("") // else the fetch does as it starts
	}
	return nil
}

// newPushTrees returns content c's place st in its stripe trees, with
// the repair time repair.
func newPushTrees(p *Service, c *content, st Stripes, repair time.Duration) *pushTrees {
	k := len(st.Parents)
	t := &pushTrees{p: p, c: c, parents: slices.Clone(st.Parents), planned: slices.Clone(st.Parents), children: make([][]lpeer.ID, k),
		grand: make([]lpeer.ID, k), adoptees: make([][]lpeer.ID, k), line: make([][]lpeer.ID, k), early: make([][]lpeer.ID, k), rootGone: make([]bool, k), asking: make([]bool, k), orphan: make([]bool, k),
		sentOn: make([]map[lpeer.ID]lpeer.ID, k), forwarded: make([]map[lpeer.ID]int, k), complaints: make([]map[lpeer.ID][]lpeer.ID, k),
		repair: repair, last: make([]time.Time, k), parent: map[lpeer.ID]parentState{}, behind: map[lpeer.ID]bool{},
		outs: map[lpeer.ID]*pushOut{}, pending: map[int]int{}, known: make(bitset, (c.man.BlockCount()+63)/64)}
	copy(t.grand, st.Grandparents)
	t.seed = !slices.ContainsFunc(t.parents, func(id lpeer.ID) bool { return id != "" })
	for s, kids := range st.Children {
		t.children[s] = slices.Clone(kids)
	}
	if t.seed {
		t.roots = make([][]lpeer.ID, k)
		for s, kids := range st.Children {
			t.roots[s] = slices.Clone(kids)
		}
	}
	now := p.clk.Now()
	for s := range t.last {
		t.last[s] = now
	}
	for _, id := range t.parents {
		if id != "" {
			t.parent[id] = parentUp
		}
	}
	return t
}

// Pushing reports whether content root has its place in stripe trees
// (Push, or a fetch's WithStripes).
func (p *Service) Pushing(root chunker.ID) bool {
	c := p.lookup(root[:])
	return c != nil && c.pushes() != nil
}

// pushTrees is a content's place in its stripe trees (Service.Push).
type pushTrees struct {
	p *Service
	c *content
	// seed is set for a peer without parents: a seed, the root of every
	// stripe.
	seed bool
	// planned holds the parents Push was given, grand the grandparents.
	planned, grand []lpeer.ID
	repair         time.Duration

	mu sync.Mutex
	// children holds, per stripe, the peers to push to: Push's, and the
	// adoptees.
	children [][]lpeer.ID
	// parents holds, per stripe, the parent pushes are taken from: the
	// planned one, or one that adopted this peer (ProtoAdopt).
	parents []lpeer.ID
	// adoptees holds, per stripe, the children this peer adopted (also in
	// children); line the orphans that asked it, adopted or sent on, in
	// the order they first asked (see adoptee); asking is set while this
	// peer asks to be adopted in the stripe.
	adoptees [][]lpeer.ID
	line     [][]lpeer.ID
	asking   []bool
	// roots holds, per stripe, a seed's planned children (Push's); early
	// the orphans that asked it while a root still took its pushes, and
	// rootGone is set once a root's stream failed after such an orphan
	// asked (see noteEarlyLocked).
	roots    [][]lpeer.ID
	early    [][]lpeer.ID
	rootGone []bool
	// sentOn holds, per stripe, the peer each orphan was sent on to;
	// forwarded how many orphans were sent on to each; complaints the
	// orphans that asked again after being sent on to a peer (see
	// complainLocked). Made as needed.
	sentOn     []map[lpeer.ID]lpeer.ID
	forwarded  []map[lpeer.ID]int
	complaints []map[lpeer.ID][]lpeer.ID
	// orphan is set, per stripe, while this peer has no parent for it (its
	// parent failed and no peer adopted it): its children were let go
	// (orphanLocked).
	orphan []bool
	// last is, per stripe, when its parent last pushed a block (or Push).
	last   []time.Time
	parent map[lpeer.ID]parentState
	// behind holds the parents that answered a catch-up request with a
	// refusal (not in the trees yet, or no place for this peer): they are
	// asked again when their pushes come (accepts).
	behind map[lpeer.ID]bool
	outs   map[lpeer.ID]*pushOut
	// pending counts, per block, the children it is queued for and not
	// yet written to.
	pending map[int]int
	// known marks the blocks passed on to the children as they were then
	// (gained), and those held when Push began: those an asking child is
	// sent (see adoptee); a block stored but not yet passed on is not.
	known bitset
}

// bitset is a set of block indexes.
type bitset []uint64

func (b bitset) has(i int) bool { return i>>6 < len(b) && b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i int)      { b[i>>6] |= 1 << (i & 63) }

// parentState is what a fetch makes of a parent's pushes.
type parentState int

const (
	// parentUp: its pushes are taken (and awaited, see pushTrees.held).
	parentUp parentState = iota
	// parentGone: its push stream failed; a new one makes it up again.
	parentGone
	// parentRefused: it pushed a corrupt block or a malformed frame, or
	// the fetch found it a phantom (errPhantom); its pushes are refused
	// from then on.
	parentRefused
)

// pushOut is the queue of blocks to push to one child, and its writer.
type pushOut struct {
	q       []int
	wake    chan struct{}
	running bool
	// up is set while a stream the child took is open.
	up bool
	// failures counts the streams in a row that failed before the child
	// took them (the child not there yet, gone, or refusing): a new one is
	// tried a repair time later with the queue kept, up to pushRetries
	// times; then the queue is dropped (the child repairs it) until the
	// next gain.
	failures int
	// sent marks the blocks the current stream took from q to write (a
	// bit per block, cleared when the stream ends), so that a child asking
	// to be caught up (see catchUp) is not sent them again.
	sent bitset
	// asked is set when the child asked for blocks (adoptee) while a
	// stream it had not taken was running: if that stream fails before the
	// child takes it, the next starts at once.
	asked bool
	// cut is set when the child was let go in a stripe (orphanLocked): the
	// writer resets its stream, which the child takes as its parent gone.
	cut bool
	// backlogSince is when more than pushBacklog blocks began to wait for
	// the child, zero while they do not (see shedLocked).
	backlogSince time.Time
}

// markSent notes that o's current stream took block i of n (t.mu held).
func (o *pushOut) markSent(i, n int) {
	if o.sent == nil {
		o.sent = make(bitset, (n+63)/64)
	}
	o.sent.set(i)
}

// pushRetries is how many times a push stream that fails is tried again
// with its queue kept.
const pushRetries = 3

// stripe returns block i's stripe.
func (t *pushTrees) stripe(i int) int { return i % len(t.planned) }

// gained queues block i for the children of its stripe.
func (t *pushTrees) gained(i int) {
	s := t.stripe(i)
	if s >= len(t.children) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.known.set(i)
	if t.orphan[s] {
		return // its children repair the stripe (orphanLocked)
	}
	for _, child := range t.children[s] {
		if !t.pushLocked(child, i) {
			return // closed
		}
	}
}

// pushLocked queues block i for child and sees that its writer runs
// (t.mu held); false when the service is closed.
func (t *pushTrees) pushLocked(child lpeer.ID, i int) bool {
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
func (t *pushTrees) kickLocked(child lpeer.ID, o *pushOut) bool {
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
func (t *pushTrees) write(child lpeer.ID, o *pushOut) {
	p := t.p
	accepted, err := t.stream(child, o)
	if p.ctx.Err() != nil {
		return
	}
	p.log.Debug("push stream failed", "peer", child, "err", err)
	t.mu.Lock()
	defer t.mu.Unlock()
	o.running, o.up = false, false
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
		t.rootFailedLocked(child)
	}
	if o.failures++; o.failures > pushRetries {
		t.unqueue(o.q...)
		o.q = nil
		t.dropAdopteeLocked(child)
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
func (t *pushTrees) stream(child lpeer.ID, o *pushOut) (accepted bool, err error) {
	p, c := t.p, t.c
	root := c.man.ID()
	cs, err := p.requestHello(p.ctx, child, ProtoPush, wire.Hello{Root: root[:]})
	if err != nil {
		return false, err
	}
	defer cs.close()
	answer, gone := make(chan error, 1), make(chan struct{})
	if !p.goroutine(func() {
		defer close(gone)
		f, err := cs.nextQuiet(haveFrameMax)
		switch {
		case err != nil:
		case len(f) == 0 || f[0] != wire.TypeHave:
			err = wire.DecodeError(f)
			cs.s.Reset() // a write waiting for the child's window ends
		default:
			answer <- nil
			_, _ = cs.nextQuiet(1)
			return
		}
		answer <- err
	}) {
		return false, ErrClosed
	}
	// Until the child has answered, the blocks written are kept, with the
	// rest of the batch, to be queued again if the stream fails.
	var unanswered, rest []int
	defer func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !accepted && p.ctx.Err() == nil {
			for _, i := range unanswered {
				t.pending[i]++
			}
			o.q = append(append(unanswered, rest...), o.q...)
		} else {
			t.unqueue(rest...)
		}
	}()
	var buf []byte // the frames' buffer, reused
	wait := answer
	for {
		t.mu.Lock()
		if o.cut && accepted {
			// Let go (orphanLocked): reset once taken, so that the child
			// repairs.
			o.cut = false
			t.mu.Unlock()
			cs.reset()
			return accepted, errors.New("let go: this peer lost the stripe's parent")
		}
		rest = o.q
		o.q = nil
		var shed []int
		switch now := t.p.clk.Now(); {
		case !accepted || len(rest) <= pushBacklog:
			o.backlogSince = time.Time{}
		case o.backlogSince.IsZero():
			o.backlogSince = now
		case now.Sub(o.backlogSince) >= t.repair:
			rest, shed = t.shedLocked(rest)
		}
		for _, i := range rest {
			o.markSent(i, c.man.BlockCount())
		}
		t.mu.Unlock()
		if len(shed) > 0 {
			// The child fetches those from its own sources.
			if err := cs.send(wire.AppendHave(nil, shed)); err != nil {
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
				t.setUp(o, true)
			default:
			}
			i := rest[0]
			t.mu.Lock()
			still := slices.Contains(t.children[t.stripe(i)], child)
			t.mu.Unlock()
			var frame []byte
			var err error
			if still {
				frame, err = storedFrame(c, &buf, i)
			}
			if !still || errors.Is(err, chunker.ErrNotHeld) {
				// No longer its child in that stripe (a root the seed cut,
				// an adoptee dropped), or a seed's file changed (the child
				// repairs it): skipped.
				rest = rest[1:]
				t.mu.Lock()
				t.unqueue(i)
				t.mu.Unlock()
				continue
			}
			if err != nil {
				return accepted, err
			}
			if p.upload != nil {
				if err := p.upload.WaitN(p.ctx, c.man.BlockLen(i)); err != nil {
					return accepted, err
				}
			}
			if err := cs.sendRaw(frame); err != nil {
				return accepted, err
			}
			rest = rest[1:]
			t.mu.Lock()
			t.unqueue(i)
			t.mu.Unlock()
			if !accepted {
				unanswered = append(unanswered, i)
			}
			c.noteSent(child, c.man.BlockLen(i))
			if p.cfg.observer != nil {
				p.observe(ServeEvent{Kind: EventBlockSent, Peer: child, Root: root, Index: i, Bytes: c.man.BlockLen(i), Pushed: true})
			}
		}
		// The hello goes out now if no block did.
		if err := cs.flush(); err != nil {
			return accepted, err
		}
		select {
		case <-o.wake:
		case err := <-wait:
			if err != nil {
				return false, err
			}
			accepted, wait, unanswered = true, nil, nil
			t.setUp(o, true)
		case <-gone:
			return accepted, errors.New("the child ended the push stream")
		case <-p.ctx.Done():
			return accepted, nil
		}
	}
}

// pushBacklog is how many blocks may wait for one child, for a repair time
// on end, before this peer sheds the oldest that other peers hold
// (shedLocked; a burst that drains sooner, as on loopback, is pushed
// whole). A parent passes each block of its stripe on to all its children
// (16 or 17 in the 200-peer testnet, which takes all its uplink at the
// seed's pace); one adopted late, and pushed the rest of its stripe at
// once, passed it on up to 0.7x T* after it got it, while its children's
// neighbours, their uplinks two thirds idle, had offered the same blocks
// long before.
const pushBacklog = 16

// shedLocked splits q, the blocks queued for a child, into those to push
// and those the child is to fetch from its own sources (shed, unqueued):
// of all but the last pushBacklog, those that other peers hold (othersHold;
// t.mu held).
func (t *pushTrees) shedLocked(q []int) (kept, shed []int) {
	old := len(q) - pushBacklog
	kept = q[:0]
	for k, i := range q {
		if k < old && t.othersHold(i) {
			shed = append(shed, i)
			t.unqueue(i)
			continue
		}
		kept = append(kept, i)
	}
	return kept, shed
}

// shedBy lets the running fetch take from its sources the blocks idx that
// parent shed (a have frame on its push stream, see shedLocked): those of
// the stripes it is this peer's parent in.
func (t *pushTrees) shedBy(parent lpeer.ID, idx []int) {
	t.mu.Lock()
	idx = slices.DeleteFunc(idx, func(i int) bool { return t.parents[t.stripe(i)] != parent })
	t.mu.Unlock()
	t.fetchElsewhere(idx)
}

// storedFrame reads block i of c's store into *buf (grown as needed) as a
// whole block frame, its length prefix included, and returns the frame.
func storedFrame(c *content, buf *[]byte, i int) ([]byte, error) {
	n := c.man.BlockLen(i)
	if cap(*buf) < blockRoom+n {
		*buf = make([]byte, 0, blockRoom+n)
	}
	b := (*buf)[:blockRoom]
	data, err := c.store.ReadBlock(i, b[blockRoom:])
	if err != nil {
		return nil, fmt.Errorf("read block %d: %w", i, err)
	}
	var hdr [1 + binaryMaxVarint]byte
	return frameAround(b, wire.AppendBlockHeader(hdr[:0], i), len(data)), nil
}

// frameAround writes the length prefix and header hdr of a frame into the
// blockRoom bytes of b in front of the n bytes of data that follow them,
// and returns the whole frame, in one slice for one write.
func frameAround(b, hdr []byte, n int) []byte {
	var lp [binaryMaxVarint]byte
	l := binary.PutUvarint(lp[:], uint64(len(hdr)+n))
	start := blockRoom - len(hdr) - l
	copy(b[start:], lp[:l])
	copy(b[start+l:], hdr)
	return b[start : blockRoom+n]
}

// held reports, per stripe, whether a fetch leaves its blocks to the
// pushes now: while its parent is up and pushed within the repair time.
func (t *pushTrees) held(now time.Time, dst []bool) []bool {
	dst = slices.Grow(dst[:0], len(t.parents))[:len(t.parents)]
	t.mu.Lock()
	defer t.mu.Unlock()
	for s, id := range t.parents {
		dst[s] = id != "" && t.parent[id] == parentUp && now.Sub(t.last[s]) < t.repair
	}
	return dst
}

// setUp sets o.up.
func (t *pushTrees) setUp(o *pushOut, up bool) {
	t.mu.Lock()
	o.up = up
	if up {
		o.asked = false // the child took the stream it asked for
	}
	t.mu.Unlock()
}

// queue queues block i for o (t.mu held).
func (t *pushTrees) queue(o *pushOut, i int) {
	o.q = append(o.q, i)
	t.pending[i]++
}

// unqueue notes that blocks idx were written, or dropped, from a queue
// (t.mu held).
func (t *pushTrees) unqueue(idx ...int) {
	for _, i := range idx {
		if t.pending[i]--; t.pending[i] <= 0 {
			delete(t.pending, i)
		}
	}
}

// firstCopies reports whether this peer is a seed (a root of every
// stripe: no parent) and one of the blocks idx is still queued for a child
// whose stream is up: the seed's uplink goes to the first copies of the
// blocks, down the trees, and such requests are answered busy (other
// peers repair the trees). A block queued for a child that is not there
// (it left, or has not joined yet) is served at once.
func (t *pushTrees) firstCopies(idx []int) bool {
	if !t.seed {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, i := range idx {
		if t.pending[i] == 0 {
			continue
		}
		if s := t.stripe(i); s < len(t.children) {
			for _, c := range t.children[s] {
				if o := t.outs[c]; o != nil && o.up {
					return true
				}
			}
		}
	}
	return false
}

// accepts reports whether pushes from id are taken, and marks it up when
// they are (a new stream of a parent whose last one failed).
func (t *pushTrees) accepts(id lpeer.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.parent[id]
	if !ok || st == parentRefused || !slices.Contains(t.parents, id) {
		return false // refused, or no parent (any more: another adopted us)
	}
	t.parent[id] = parentUp
	for s, pid := range t.parents {
		if pid == id {
			t.unorphanLocked(s) // its pushes come again: passed on
		}
	}
	if st == parentGone || t.behind[id] {
		// Back (it left, or its stream failed), or it refused to catch
		// this peer up before it pushed: it pushes what it gains from now
		// on, and is asked for what it held before.
		delete(t.behind, id)
		t.p.goroutine(func() { t.catchUp(id) })
	}
	return true
}

// pushedBy notes that parent id pushed block i; an error when i's stripe
// is not id's to push or id's pushes are refused (it pushed a corrupt
// block before).
func (t *pushTrees) pushedBy(id lpeer.ID, i int) error {
	s := t.stripe(i)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.parents[s] != id {
		if t.planned[s] == id {
			// The planned parent, back after another adopted this peer.
			return errNotNow
		}
		return fmt.Errorf("%w: push of block %d: stripe %d is not the sender's to push", ErrMalformed, i, s)
	}
	if t.parent[id] == parentRefused {
		return fmt.Errorf("%w: pushes refused after a corrupt one", ErrBadBlock)
	}
	t.last[s] = t.p.clk.Now()
	return nil
}

// parentFailed marks id gone (its stream failed) or refused (bad pushes,
// or a phantom),
// and asks to be adopted in the stripes it parents where this peer has
// children (adopt).
func (t *pushTrees) parentFailed(id lpeer.ID, refused bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.parent[id]
	if !ok || st == parentRefused {
		return
	}
	if refused {
		t.parent[id] = parentRefused
	} else {
		t.parent[id] = parentGone
	}
	for s, p := range t.parents {
		if p == id && t.grand[s] != "" && len(t.children[s]) > 0 && !t.asking[s] {
			t.asking[s] = true
			if !t.p.goroutine(func() { t.adopt(s) }) {
				return
			}
		}
	}
}

// errNotParent refuses a push stream of a peer that is no parent.
var errNotParent = errors.New("not a parent in the content's stripe trees")

// servePush takes the blocks a parent pushes (ProtoPush): each is checked
// against the parent's stripes, verified and stored as a fetched block is,
// and passed on to this peer's children.
func (p *Service) servePush(ss *serverStream) error {
	c := ss.c
	t := c.pushes()
	from := ss.s.Conn().RemotePeer()
	if t == nil || !t.accepts(from) {
		return p.refuse(ss, errNotParent)
	}
	// Taken: an empty have frame says so.
	if err := ss.send(wire.AppendHave(nil, nil)); err != nil {
		return err
	}
	if err := ss.flush(); err != nil {
		return err
	}
	err := p.readPushes(ss, t, from)
	if err != nil && !errors.Is(err, io.EOF) {
		t.parentFailed(from, errors.Is(err, ErrMalformed) || errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrBadBlock))
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// readPushes reads and stores the pushes of from until the stream ends.
func (p *Service) readPushes(ss *serverStream, t *pushTrees, from lpeer.ID) error {
	c := ss.c
	limit := c.man.BlockCount()
	max := c.man.BlockSize() + 1 + binaryMaxVarint
	// A push stream is quiet while the parent waits for blocks; the
	// service's close or the parent's end it.
	if err := ss.s.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	fresh := func() []byte { return make([]byte, 0, max) }
	for {
		f := c.runningFetch()
		get := fresh
		if f != nil {
			get = f.getBuf
		}
		fr, err := ss.fr.NextInto(get, max)
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
			return fmt.Errorf("%w: a push of block %d says it is missing", ErrMalformed, i)
		}
		if err := t.pushedBy(from, i); errors.Is(err, errNotNow) {
			if f != nil {
				f.putBuf(fr)
			}
			continue
		} else if err != nil {
			return err
		}
		if f != nil && f.takePush(from, i, data, fr) {
			continue
		}
		// No fetch runs: stored here (the store verifies it).
		if c.store.Has(i) {
			continue
		}
		if err := c.store.PutBlock(i, data); err != nil {
			if errors.Is(err, chunker.ErrBadBlock) {
				return fmt.Errorf("%w: pushed block %d: %v", ErrBadBlock, i, err)
			}
			return err
		}
		c.noteGain(i)
	}
}

// pushes returns the content's stripe trees, nil when it has none.
func (c *content) pushes() *pushTrees {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.push
}

// runningFetch returns the content's running fetch, nil when none runs.
func (c *content) runningFetch() *fetch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetch
}

// running reports whether f (nil: no fetch) runs: started, not ended.
func (f *fetch) running() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runningLocked()
}

// runningLocked is running with f.mu held.
func (f *fetch) runningLocked() bool { return f.started && f.ctx.Err() == nil }

// takePush hands block i, pushed by parent from, to the fetch's writers,
// as a block fetched from a source of its own; false when the fetch has not
// started or has ended (the caller stores it).
func (f *fetch) takePush(from lpeer.ID, i int, data, buf []byte) bool {
	f.mu.Lock()
	if !f.runningLocked() {
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
	case f.writes <- writeJob{src: src, i: i, data: data, buf: buf}:
	case <-f.ctx.Done():
		f.putBuf(buf)
	}
	return true
}

// refuseParent refuses id as a parent in the content's stripe trees (if
// it is one: it pushed a corrupt block, or lies in its offers): its pushes
// are refused from then on, its stripes are no longer held for them and
// are repaired, by adoption where this peer has children in them.
func (f *fetch) refuseParent(id lpeer.ID) {
	if t := f.c.pushes(); t != nil {
		t.parentFailed(id, true)
		f.updateHeld()
	}
}

// updateHeld looks at the content's stripe trees and holds back the
// blocks of the stripes whose pushes come (picker.hold); when a stripe is
// let go, or a block has been offered by a source that is not full for the
// repair time without being pushed, the sources look at them again.
func (f *fetch) updateHeld() {
	t := f.c.pushes()
	if t == nil {
		return
	}
	now := f.p.clk.Now()
	f.mu.Lock()
	prev := f.held
	f.held = t.held(now, f.heldBuf)
	f.heldBuf = prev
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
func (f *fetch) seeFromLocked(src *source, idx []int) {
	t := f.c.pushes()
	if t == nil || src.offers.Full || f.pick.Hold == nil {
		return
	}
	now := f.p.clk.Now()
	t.mu.Lock() // after f.mu, as in updateHeld
	defer t.mu.Unlock()
	for _, i := range idx {
		if t.parents[t.stripe(i)] == src.id {
			f.pick.See(i, now.Add(t.repair))
		} else {
			f.pick.See(i, now.Add(lateAfter*t.repair))
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
func (f *fetch) holds(i int, deadline time.Time) bool {
	return len(f.held) > 0 && f.held[i%len(f.held)] && (deadline.IsZero() || f.p.clk.Now().Before(deadline))
}
