package swarm

import (
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/stripes"
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
	// stripe, it asks the grandparent to adopt it (wire.ProtoAdopt), so that its
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

// MaxStripes bounds Stripes' stripe count; MaxPushChildren bounds the
// children of one peer over all stripes.
const (
	MaxStripes      = 256
	MaxPushChildren = 1024
)

// NewTrees returns content c's place st in its stripe trees, with
// the repair time repair.
func NewTrees(p *Node, c *serve.Content, st Stripes, repair time.Duration) *Trees {
	t := &Trees{p: p, c: c, repair: repair, outs: map[lpeer.ID]*pushOut{}, tells: map[lpeer.ID]*gainTell{}, newChildren: make(chan struct{})}
	var lengths []int // content-defined blocks are dealt into the stripes by bytes
	if c.Man.ContentDefined() {
		lengths = make([]int, c.Man.BlockCount())
		for i := range lengths {
			lengths[i] = c.Man.BlockLen(i)
		}
	}
	t.tree = stripes.NewTree(stripes.Place[lpeer.ID]{Self: p.h.ID(), Parents: st.Parents, Children: st.Children,
		Grandparents: st.Grandparents, Blocks: c.Man.BlockCount(), Lengths: lengths, RepairAfter: repair,
		Spare: t.othersHold}, p.clk.Now())
	return t
}

// Trees is a content's place in its stripe trees (Service.Push): the
// streams that push to its children, and its parents' pushes, around a
// stripes.Tree that decides who is whose parent, child and adoptee.
type Trees struct {
	p      *Node
	c      *serve.Content
	repair time.Duration

	mu sync.Mutex
	// tree is the content's place in the trees and the decisions that keep
	// it (t.mu held around every call).
	tree *stripes.Tree[lpeer.ID]
	// outs holds the queue and writer of each child pushed to.
	outs map[lpeer.ID]*pushOut
	// place is a placing seed's Placer and join streams (Place), nil
	// for others; joined is set for a fetcher that a seed placed.
	place  *placing
	joined bool
	// newChildren is closed, and replaced, when a seed's placements gave
	// this peer children (follow): a placed child's catch-up that came
	// first waits for it (awaitChild).
	newChildren chan struct{}
	// tells holds, per parent whose push stream asked for them, the
	// blocks of its stripes asked of other peers, to tell it (fetchingFrom).
	tells map[lpeer.ID]*gainTell
	// relays holds the pushed blocks passed on to children as they arrive,
	// until the store gains them (relay).
	relays map[int]*relay
}

// bitset is a set of block indexes.
type bitset []uint64

func (b bitset) has(i int) bool { return i>>6 < len(b) && b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i int)      { b[i>>6] |= 1 << (i & 63) }

// pushOut is the queue of blocks to push to one child, and its writer.
type pushOut struct {
	q       []int
	wake    chan struct{}
	running bool
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
	// has marks the blocks the child holds by its last catch-up request
	// (see noteHeld): not pushed to it.
	has bitset
	// asked is set when the child asked for blocks (adoptee) while a
	// stream it had not taken was running: if that stream fails before the
	// child takes it, the next starts at once.
	asked bool
}

// markSent notes that o's current stream took block i of n (t.mu held).
func (o *pushOut) markSent(i, n int) {
	if o.sent == nil {
		o.sent = make(bitset, (n+63)/64)
	}
	o.sent.set(i)
}

// markHas notes that o's child holds block i of n (t.mu held): it is not
// pushed to it.
func (o *pushOut) markHas(i, n int) {
	if o.has == nil {
		o.has = make(bitset, (n+63)/64)
	}
	o.has.set(i)
}

// pushRetries is how many times a push stream that fails is tried again
// with its queue kept.
const pushRetries = 3

// stripe returns block i's stripe.
func (t *Trees) stripe(i int) int { return t.tree.Stripe(i) }

// TreesOf returns content c's place in its stripe trees, nil when it has
// none.
func TreesOf(c *serve.Content) *Trees {
	t, _ := c.Pushes().(*Trees)
	return t
}

// FetchOf returns content c's running fetch, nil when none runs.
func FetchOf(c *serve.Content) *fetch {
	f, _ := c.RunningFetch().(*fetch)
	return f
}
