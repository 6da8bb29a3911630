package swarm

import (
	"errors"
	"fmt"
	"io"
	"slices"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/stripes"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Adoption repairs a stripe tree whose inner node left or lies, after
// SplitStream: the node's children that have children of their own in
// that stripe ask their grandparent (Stripes.Grandparents) to adopt them
// (wire.ProtoAdopt), naming the stripe's blocks they lack; the peer asked
// adopts the orphan, or names the peer it is to ask instead (a peer id in
// the answer), or refuses. Who adopts whom, sends whom on, and cuts whom
// is package peer/stripes' Tree (stripes/adopt.go); here are the streams.

// SpareHolders is how many of a peer's watchers must hold a block (by
// their filters) for it to leave the block to them: a seed asked to adopt
// an orphan or catch up a child that lacks it, any peer so asked for a
// block it lacks too (adoptee), a parent shedding a child's backlog
// (stripes.Tree.Shed). The asker or child fetches it from its own sources, and
// from the seed only if none of them offers it. In the
// 200-peer testnet with churn and liars, a seed that pushed every block
// asked for sent 80 to 240 blocks that ten or more peers held while blocks
// no peer held still waited for its uplink.
const SpareHolders = 2

// othersHold reports whether spareHolders or more of this peer's watchers
// hold block i, by their filters: it may leave the block to them.
func (t *Trees) othersHold(i int) bool {
	return t.c.Tally.Holders(i, SpareHolders) >= SpareHolders
}

// adoptAnswerMax bounds an adoption answer: a peers frame of one peer
// without addresses, or a short error.
const adoptAnswerMax = 1 << 10

// errNotNow is pushedBy's answer to a push of a stripe whose planned
// parent came back after another adopted this peer: dropped, no error.
var errNotNow = errors.New("a push of the planned parent of a stripe another peer adopted")

// errNoStripe refuses an adoption in a stripe the peer does not get.
var errNoStripe = stripes.ErrNoStripe

// adopt asks to be adopted in stripe s, whose parent failed: its
// grandparent first, then the peers it is sent on to. The stripe's new
// parent is set before each ask, so that its first pushes are taken; a
// refusal puts the old one back.
func (t *Trees) adopt(s int) {
	p := t.p
	adopted := false
	defer func() {
		t.mu.Lock()
		if t.tree.AskEnded(s, adopted) {
			t.orphanLocked(s)
		}
		t.mu.Unlock()
	}()
	t.mu.Lock()
	target := t.tree.Grand(s)
	t.mu.Unlock()
	asked := map[lpeer.ID]bool{p.h.ID(): true}
	for range stripes.AdoptHops {
		if target == "" || asked[target] || p.ctx.Err() != nil {
			return
		}
		asked[target] = true
		lacks := t.lacks(s)
		if len(lacks) == 0 {
			return // nothing left to gain in the stripe
		}
		t.mu.Lock()
		try, ok := t.tree.Try(s, target)
		t.mu.Unlock()
		if !ok {
			return // refused as a parent
		}
		next, elsewhere, grand, err := t.askAdopt(target, lacks)
		if err == nil && next == "" {
			adopted = true
			t.fetchElsewhere(elsewhere)
			t.mu.Lock()
			t.tree.Adopted(try, grand, t.p.clk.Now())
			t.mu.Unlock()
			p.log.Debug("adopted", "stripe", s, "parent", target)
			return
		}
		t.mu.Lock()
		t.tree.Undo(try)
		t.mu.Unlock()
		if err != nil {
			p.log.Debug("adoption refused", "stripe", s, "peer", target, "err", err)
			return
		}
		target = next
	}
}

// lacks returns the first blocks of stripe s this peer lacks, at most as
// many as an adopter or parent takes in one request (its MaxWant, the
// default unless both set another); the rest come by pushes or pulls.
func (t *Trees) lacks(s int) []int {
	c := t.c
	most := min(t.p.cfg.Limits.MaxWant, serve.DefaultLimits.MaxWant)
	var lacks []int
	for i := 0; i < c.Man.BlockCount() && len(lacks) < most; i++ {
		if t.stripe(i) == s && !c.Store.Has(i) {
			lacks = append(lacks, i)
		}
	}
	return lacks
}

// askAdopt asks target to adopt this peer in the stripe of the blocks
// lacks (those it lacks): "" when it did, with the blocks of lacks it will
// not push (elsewhere: other peers hold them, see adoptee) and target's
// own parent in the stripe (grand: "" for none named), or the peer it
// sends this one on to when it did not.
func (t *Trees) askAdopt(target lpeer.ID, lacks []int) (next lpeer.ID, elsewhere []int, grand lpeer.ID, err error) {
	p := t.p
	root := t.c.Man.ID()
	t.mu.Lock()
	placed := t.joined
	t.mu.Unlock()
	cs, err := p.RequestHello(p.ctx, target, wire.ProtoAdopt, wire.Hello{Root: root[:], Placed: placed})
	if err != nil {
		return "", nil, "", err
	}
	defer cs.Close()
	if err := cs.Send(wire.AppendWant(nil, lacks)); err != nil {
		return "", nil, "", err
	}
	if err := cs.Flush(); err != nil {
		return "", nil, "", err
	}
	f, err := cs.Next(adoptAnswerMax + len(lacks)*serve.MaxVarint)
	if err != nil {
		return "", nil, "", err
	}
	switch {
	case len(f) > 0 && f[0] == wire.TypeHave:
		idx, err := wire.DecodeHave(nil, f, len(lacks), t.c.Man.BlockCount())
		if err != nil {
			return "", nil, "", err
		}
		// Only blocks it asked for are let go.
		elsewhere = slices.DeleteFunc(idx, func(i int) bool { return !slices.Contains(lacks, i) })
		// Its parent may follow, named in a peers frame (adopted all the
		// same when it does not, or names it wrong).
		g, err := cs.Next(adoptAnswerMax)
		if err == nil {
			grand, err = decodeOnePeer(g)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			p.log.Debug("adoption answer: no parent named", "peer", target, "err", err)
		}
		return "", elsewhere, grand, nil
	case len(f) > 0 && f[0] == wire.TypePeers:
		next, err := decodeOnePeer(f)
		return next, nil, "", err
	}
	return "", nil, "", wire.DecodeError(f)
}

// decodeOnePeer decodes a peers frame of an adoption answer, which names
// one peer.
func decodeOnePeer(f []byte) (lpeer.ID, error) {
	infos, err := wire.DecodePeers(f)
	if err != nil {
		return "", err
	}
	if len(infos) != 1 {
		return "", fmt.Errorf("%w: an adoption answer names %d peers", wire.ErrMalformed, len(infos))
	}
	return infos[0].ID, nil
}

// fetchElsewhere lets the running fetch take blocks idx from its sources
// now rather than wait for their stripe's pushes: the parent that adopted
// this peer, or that it asked to catch it up, answered that other peers
// hold them (see adoptee), or a parent shed them (shedBy).
func (t *Trees) fetchElsewhere(idx []int) {
	f := FetchOf(t.c)
	if f == nil || len(idx) == 0 {
		return
	}
	now := t.p.clk.Now()
	f.mu.Lock()
	for _, i := range idx {
		f.pick.See(i, now)
	}
	f.pick.Releases++
	f.mu.Unlock()
	f.notify()
}

// ServeAdopt answers an orphan's adoption request, or a child's catch-up
// (wire.ProtoAdopt): a want frame of the blocks of one stripe it lacks. The
// answer is a have frame (adopted: the blocks follow on a push stream; it
// lists those of the request the asker is to fetch from other peers, see
// adoptee) followed by a peers frame naming this peer's own parent in the
// stripe, if it has one; or a peers frame of one peer to ask instead; or
// an error frame (this peer does not get the stripe).
func (p *Node) ServeAdopt(ss *serve.Stream) error {
	c := ss.C
	from := ss.S.Conn().RemotePeer()
	f, err := ss.Next(1 + serve.MaxVarint + p.cfg.Limits.MaxWant*serve.MaxVarint)
	if err != nil {
		return err
	}
	t := TreesOf(c)
	if t == nil {
		return p.srv.Refuse(ss, errNotParent)
	}
	s, lacks, err := decodeAdopt(f, p.cfg.Limits.MaxWant, c.Man.BlockCount(), t.stripe)
	if err != nil {
		return err
	}
	if ss.Hello.Placed {
		t.awaitChild(from, s)
	}
	next, adopted, elsewhere, err := t.adoptee(from, s, lacks)
	switch {
	case err != nil:
		return p.srv.Refuse(ss, err)
	case next != "":
		if err := ss.Send(wire.AppendPeers(nil, []lpeer.AddrInfo{{ID: next}})); err != nil {
			return err
		}
	default:
		if err := ss.Send(wire.AppendHave(nil, elsewhere)); err != nil {
			return err
		}
		// Its parent in the stripe: the asker's grandparent from now on.
		if parent := t.parentUp(s); parent != "" && parent != from {
			if err := ss.Send(wire.AppendPeers(nil, []lpeer.AddrInfo{{ID: parent}})); err != nil {
				return err
			}
		}
	}
	if adopted {
		p.srv.Observe(serve.Event{Kind: serve.EventAdopted, Peer: from, Root: c.Man.ID(), Index: s})
	}
	return ss.Flush()
}

// parentUp returns this peer's parent in stripe s while its pushes come,
// "" otherwise (and for a seed).
func (t *Trees) parentUp(s int) lpeer.ID {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tree.ParentUp(s)
}

// decodeAdopt decodes an adoption request: a want frame of at most max
// blocks below blocks, at least one, all of one stripe (by stripeOf),
// which it returns with them.
func decodeAdopt(f []byte, max, blocks int, stripeOf func(i int) int) (int, []int, error) {
	lacks, err := wire.DecodeWant(nil, f, max, blocks)
	if err != nil {
		return 0, nil, err
	}
	if len(lacks) == 0 {
		return 0, nil, fmt.Errorf("%w: an adoption request names no block", wire.ErrMalformed)
	}
	s := stripeOf(lacks[0])
	for _, i := range lacks {
		if stripeOf(i) != s {
			return 0, nil, fmt.Errorf("%w: an adoption request names blocks of stripes %d and %d", wire.ErrMalformed, s, stripeOf(i))
		}
	}
	return s, lacks, nil
}

// noteHeld notes in o the blocks of stripe s that its child holds, by the
// blocks of s it lacks (lacks, the first it lacks, in order, up to a
// request's MaxWant: the list is whole when shorter, and covers the
// stripe up to its last block otherwise). They are not pushed to it: a
// child that the seed placed under this peer mid-fetch (joined trees)
// holds most of the stripe, which this peer passes on as it gains it; in
// the 200-peer testnet (4 MiB in 16 KiB blocks, 16 joined trees) such
// children were pushed 2,764 blocks they held.
func (t *Trees) noteHeld(o *pushOut, s int, lacks []int) {
	n := t.c.Man.BlockCount()
	upTo := n - 1
	if len(lacks) >= serve.DefaultLimits.MaxWant {
		upTo = slices.Max(lacks)
	}
	for i := 0; i <= upTo; i++ {
		if t.stripe(i) == s && !slices.Contains(lacks, i) {
			o.markHas(i, n)
		}
	}
}

// adoptee adopts id in stripe s (adopted: as a new child) and queues it
// the blocks of lacks this peer holds (next ""), or names the peer it is to
// ask instead, or refuses (stripes.Tree.Adoptee); of the blocks, it names
// in elsewhere those id is to fetch from its own sources
// (stripes.Tree.Catch).
func (t *Trees) adoptee(id lpeer.ID, s int, lacks []int) (next lpeer.ID, adopted bool, elsewhere []int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	next, adopted, err = t.tree.Adoptee(id, s, t.c.Store.Complete())
	if err != nil || next != "" {
		return next, false, nil, err
	}
	o := t.outs[id]
	if o == nil {
		o = &pushOut{wake: make(chan struct{}, 1)}
		t.outs[id] = o
	}
	t.noteHeld(o, s, lacks)
	var queued map[int]bool
	if o != nil && len(o.q) > 0 {
		queued = make(map[int]bool, len(o.q))
		for _, i := range o.q {
			queued[i] = true
		}
	}
	switch {
	// It asked, so it is there: a push stream that failed before it took
	// its place is not left to its retry a repair time later.
	case o != nil && !o.running:
		o.failures = 0
		if len(o.q) > 0 && !t.kickLocked(id, o) {
			return "", false, nil, wire.ErrClosed
		}
	case o != nil && !t.tree.Up(id):
		o.asked = true
	}
	push, elsewhere := t.tree.Catch(lacks, adopted || t.tree.Placed(id), t.c.Store.Has, func(i int) bool {
		return queued[i] || o != nil && o.sent.has(i)
	})
	for _, i := range push {
		if !t.pushLocked(id, i) {
			return "", false, nil, wire.ErrClosed
		}
	}
	return "", adopted, elsewhere, nil
}
