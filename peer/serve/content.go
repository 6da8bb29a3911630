package serve

import (
	"errors"
	"sort"
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/admit"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/sched"
)

// maxSwarm bounds the peers remembered per content for peer exchange.
const maxSwarm = 1024

// Content is one file or tree this peer serves: its manifest and store, the
// peers seen asking about it, and the fetch running for it, if any.
type Content struct {
	Man   *chunker.Manifest
	Store *chunker.Store
	Recon *Responder                 // answers reconciliation requests
	Sends *admit.Repeats             // blocks sent per peer, to bound repeats (package peer/admit)
	Super *sched.SuperSeed[lpeer.ID] // the offer policy of WithSuperSeeding, nil when off
	// Tally sums the filters of the content's watchers (BlockRarestFilters).
	Tally *sched.NeighbourTally[lpeer.ID]
	// fresh is uploadQueueFresh, on the service's clock.
	fresh time.Duration

	mu sync.Mutex
	// alt are the units served beside the store's blocks (altUnits), nil
	// when none.
	alt   AltUnits
	swarm map[lpeer.ID]struct{}
	sent  map[lpeer.ID]int64
	fetch Fetch
	// grew is closed and replaced when the store gains a block (noteGain).
	grew chan struct{}
	// queued counts, per share key, the blocks asked for and not yet sent.
	queued map[string]*queued
	// gains lists the blocks the store gained while served, in the order
	// gained (each once): a watch sends those past its cursor (gainsSince).
	gains []int32
	// push is the content's place in its stripe trees (Service.Push), nil
	// when it has none.
	push Trees
	// closed is closed by Close (nil for a Content not made by
	// NewContent: never).
	closed    chan struct{}
	closeOnce sync.Once
}

// Closed returns a channel closed once the content is closed (Close: no
// longer served): the streams that serve it for as long as a peer keeps
// them open (watches, joins) end then.
func (c *Content) Closed() <-chan struct{} { return c.closed }

// A peer serves the blocks asked for by a few peers at once, as
// BitTorrent's unchoked peers: a request from a peer with nothing queued is
// answered "busy" while uploadQueue other peers that read (each asked, or
// was sent a block, within uploadQueueFresh) have blocks queued (asked for,
// not yet written); uploadQueuePeer is what one peer counts for, whatever it
// has queued. A peer many fetchers ask at once (one holding blocks few
// others have) so keeps its uplink busy with the requests of two or three
// peers, each with its window of blocks, and the fetchers it turns away ask
// other sources for those blocks instead of waiting behind them (measured
// in the 200-peer testnet: 1.43x T* with 2 and 1, 1.62x with the 8 and 4
// that counted blocks). A lone fetcher is never turned away, nor, whatever
// they ask, by one other peer or by peers that ask and do not read.
const (
	uploadQueue      = 2
	uploadQueuePeer  = 1
	uploadQueueFresh = time.Second
)

// queued is what one share key has asked for and not yet been sent.
type queued struct {
	n    int
	last time.Time // the last block sent to it, or its last request
}

// queue counts n blocks asked for by key as queued, unless the queue of the
// others is full; it reports whether they were counted.
func (c *Content) queue(key string, n int, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	others := 0
	for k, q := range c.queued {
		if k != key && now.Sub(q.last) < c.fresh {
			others += min(q.n, uploadQueuePeer)
		}
	}
	if others >= uploadQueue {
		return false
	}
	mine := c.queued[key]
	if c.queued == nil {
		c.queued = make(map[string]*queued)
	}
	if mine == nil {
		mine = &queued{}
		c.queued[key] = mine
	}
	mine.n += n
	mine.last = now
	return true
}

// unqueue ends the count of n blocks of key (sent, or not to be).
func (c *Content) unqueue(key string, n int, now time.Time) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	if q := c.queued[key]; q != nil {
		if q.n -= n; q.n > 0 {
			q.last = now
		} else {
			delete(c.queued, key)
		}
	}
	c.mu.Unlock()
}

// gainCursor returns the place in the log of gained blocks that a watch
// starts from: taken before the held set its answer is made of is read, so
// that no block gained in between goes unannounced.
func (c *Content) gainCursor() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.gains)
}

// gainsSince appends to dst the blocks gained from cursor on and returns
// them, the cursor after them and a channel closed when the store next
// gains a block.
func (c *Content) gainsSince(dst []int, cursor int) ([]int, int, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range c.gains[min(cursor, len(c.gains)):] {
		dst = append(dst, int(i))
	}
	if c.grew == nil {
		c.grew = make(chan struct{})
	}
	return dst, len(c.gains), c.grew
}

// NoteGain records that the store gained block i and wakes the watches.
func (c *Content) NoteGain(i int) {
	c.mu.Lock()
	c.gains = append(c.gains, int32(i))
	if c.grew != nil {
		close(c.grew)
		c.grew = nil
	}
	t := c.push
	c.mu.Unlock()
	if t != nil {
		t.Gained(i)
	}
}

// NewContent returns the content of manifest m held in store s (nil for
// none yet), with its responder and counters.
func NewContent(m *chunker.Manifest, s *chunker.Store) (*Content, error) {
	r, err := NewResponder(m.BlockCount(), BlockMethods...)
	if err != nil {
		return nil, err
	}
	return &Content{Man: m, Store: s, Recon: r, Sends: admit.NewRepeats(m.BlockCount(), maxSwarm), swarm: make(map[lpeer.ID]struct{}), sent: make(map[lpeer.ID]int64), fresh: uploadQueueFresh, closed: make(chan struct{}),
		Tally: sched.NewNeighbourTally[lpeer.ID](r.U)}, nil
}

func (c *Content) noteSwarm(id lpeer.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.swarm) < maxSwarm {
		c.swarm[id] = struct{}{}
	}
}

// Forget drops id from the peers remembered for peer exchange.
func (c *Content) Forget(id lpeer.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.swarm, id)
}

func (c *Content) swarmPeers() []lpeer.ID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]lpeer.ID, 0, len(c.swarm))
	for id := range c.swarm {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// NoteSent counts n bytes of blocks sent to id.
func (c *Content) NoteSent(id lpeer.ID, n int) {
	c.mu.Lock()
	c.sent[id] += int64(n)
	c.mu.Unlock()
}

// SentTo returns the bytes of blocks served to each peer so far.
func (c *Content) SentTo() map[lpeer.ID]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[lpeer.ID]int64, len(c.sent))
	for id, n := range c.sent {
		out[id] = n
	}
	return out
}

// OfferSource tells a running fetch of this content about a peer that has it.
func (c *Content) OfferSource(id lpeer.ID) {
	c.mu.Lock()
	f := c.fetch
	c.mu.Unlock()
	if f != nil {
		f.AddSource(id)
	}
}

// SetFetch records f as the content's running fetch; false if one runs.
func (c *Content) SetFetch(f Fetch) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fetch != nil {
		return false
	}
	c.fetch = f
	return true
}

// ClearFetch forgets f once it has ended.
func (c *Content) ClearFetch(f Fetch) {
	c.mu.Lock()
	if c.fetch == f {
		c.fetch = nil
	}
	c.mu.Unlock()
}

// AltSet returns the units the content serves beside its store's blocks,
// or nil.
func (c *Content) AltSet() AltUnits {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.alt
}

// SetAlt sets the units the content serves beside its store's blocks once.
func (c *Content) SetAlt(u AltUnits) {
	c.mu.Lock()
	if c.alt == nil {
		c.alt = u
	}
	c.mu.Unlock()
}

// Close closes the content's store (a store closed already is no error).
func (c *Content) Close() error {
	c.closeOnce.Do(func() {
		if c.closed != nil {
			close(c.closed)
		}
	})
	if c.Store == nil {
		return nil
	}
	err := c.Store.Close()
	if errors.Is(err, chunker.ErrClosed) {
		return nil
	}
	return err
}

// NewSuperSeed returns the super-seeding policy of content of blocks
// blocks (WithSuperSeeding), on clock clk.
func NewSuperSeed(clk clock.Clock, blocks int) *sched.SuperSeed[lpeer.ID] {
	return sched.NewSuperSeed[lpeer.ID](blocks, sched.SuperSeedHold, clk.Now)
}

// Fetch is a running fetch of a content, as the server sees it: a peer
// that reconciles with this one about the content may hold blocks the
// fetch lacks.
type Fetch interface {
	// AddSource offers the fetch a peer that has the content.
	AddSource(id lpeer.ID)
}

// Trees is a content's place in its stripe trees, as the server sees it.
type Trees interface {
	// Gained tells the trees that the store gained block i (to push it on).
	Gained(i int)
	// FirstCopies reports whether a request for blocks idx is answered
	// busy: the trees push first copies down from a seed.
	FirstCopies(idx []int) bool
}

// Pushes returns the content's stripe trees, nil when it has none.
func (c *Content) Pushes() Trees {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.push
}

// SetPushes sets the content's stripe trees once: false when they are set
// already.
func (c *Content) SetPushes(t Trees) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.push != nil {
		return false
	}
	c.push = t
	return true
}

// RunningFetch returns the content's running fetch, nil when none runs.
func (c *Content) RunningFetch() Fetch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetch
}
