package peer

import (
	"errors"
	"fmt"
	"io"
	"slices"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Adoption repairs a stripe tree whose inner node left or lies, after
// SplitStream: the node's children that have children of their own in
// that stripe ask their grandparent (Stripes.Grandparents) to adopt them
// (ProtoAdopt), naming the stripe's blocks they lack. A peer that gets the
// stripe (its parent's pushes come, or it holds the whole content: the
// seed) adopts the first adoptCap orphans of a stripe (a seed
// seedAdoptCap): it pushes them the blocks they lack that it holds (a
// seed, those that fewer than spareHolders of its watchers hold: the
// orphan fetches the others from its own sources), and then every block
// of the stripe it gains, as to its own children. It
// sends each further orphan on to one that asked it before (a peer id in
// the answer), two to each in the order they asked, which adopt them in
// turn: the orphans of a stripe form a binary tree, each pushing to at
// most two more children than planned, instead of all of them loading
// their grandparent (for a root's children, the seed, whose uplink is the
// swarm's scarcest) or forming a long chain. Leaves repair by fetching,
// as before.
//
// An adopter is taken as the stripe's parent from then on: pushes of the
// stripe from the planned parent, if it comes back, are dropped. Its answer
// names its own parent in the stripe, the orphan's grandparent from then
// on (setGrandLocked), asked to adopt it if the adopter fails too. A hostile
// adopter is refused as a parent is (a corrupt push), and its orphan asks
// its grandparent again, which then adopts it itself (up to adoptMax).
// That orphan's second ask is a complaint of the peer it was sent on to:
// no further orphan is sent on to that peer, and one that cutComplaints
// orphans complained of is no longer pushed the stripe by the peer that
// adopted it, nor adopted by it again (a liar the seed adopted first, as
// happened in the testnet, would otherwise hold its place, and be sent
// orphans, until its stream failed). A seed asked by
// a second orphan of a stripe stops pushing that stripe to its root,
// which left or lies (a phantom takes every push and passes on none):
// its uplink goes to the adoptees instead. One liar cannot cut an honest
// root; two among its children can (the root then fetches its stripe,
// and its children take it from the root). A seed doubts an orphan that
// asks while its root still takes the seed's pushes (most often a liar
// the root banned): it adopts it apart and sends no orphan on to it,
// unless a second such orphan corroborates it and the root's stream does
// not fail later (see noteEarlyLocked).
//
// Measured in the 200-peer testnet with churn 0.1 and liars 0.1 (16 MiB,
// 16 trees of 16 KiB blocks; see the README): completion over T* went
// from 2.58x (median) before adoption to 1.74x and 1.84x on two seeds.

// adoptCap is how many orphans of one stripe a peer adopts as they first
// ask (the others it sends on, so that they form a binary tree under
// those); adoptMax how many in all, counting those that ask again (the
// peer it adopted them into, or sent them on to, failed them: a tree that
// a liar or a leaver broke is mended at the peer that formed it). A seed,
// whose uplink is the swarm's scarcest, adopts seedAdoptCap as they first
// ask. (In a version that chained the orphans one after another, a seed
// that adopted at most two in all sent the stripes of two roots that left
// or lied by pulls, 4 copies of each, in the 200-peer testnet with churn
// and liars: 2.45x T* against 2.07x with four.)
const (
	adoptCap     = 2
	adoptMax     = 4
	seedAdoptCap = 1
)

// spareHolders is how many of a peer's watchers must hold a block (by
// their filters) for it to leave the block to them: a seed asked to adopt
// an orphan or catch up a child that lacks it, any peer so asked for a
// block it lacks too (adoptee), a parent shedding a child's backlog
// (shedLocked). The asker or child fetches it from its own sources, and
// from the seed only if none of them offers it. In the
// 200-peer testnet with churn and liars, a seed that pushed every block
// asked for sent 80 to 240 blocks that ten or more peers held while blocks
// no peer held still waited for its uplink.
const spareHolders = 2

// othersHold reports whether spareHolders or more of this peer's watchers
// hold block i, by their filters: it may leave the block to them.
func (t *pushTrees) othersHold(i int) bool {
	return t.c.tally.Holders(i, spareHolders) >= spareHolders
}

// adoptHops bounds how many peers one orphan asks in turn (each answer
// that sends it on is a hop).
const adoptHops = 4

// adoptAnswerMax bounds an adoption answer: a peers frame of one peer
// without addresses, or a short error.
const adoptAnswerMax = 1 << 10

// errNotNow is pushedBy's answer to a push of a stripe whose planned
// parent came back after another adopted this peer: dropped, no error.
var errNotNow = errors.New("a push of the planned parent of a stripe another peer adopted")

// errNoStripe refuses an adoption in a stripe the peer does not get.
var errNoStripe = errors.New("does not get that stripe")

// adopt asks to be adopted in stripe s, whose parent failed: its
// grandparent first, then the peers it is sent on to. The stripe's new
// parent is set before each ask, so that its first pushes are taken; a
// refusal puts the old one back.
func (t *pushTrees) adopt(s int) {
	p := t.p
	adopted := false
	defer func() {
		t.mu.Lock()
		t.asking[s] = false
		if !adopted && t.parent[t.parents[s]] != parentUp {
			t.orphanLocked(s)
		}
		t.mu.Unlock()
	}()
	t.mu.Lock()
	target := t.grand[s]
	t.mu.Unlock()
	asked := map[lpeer.ID]bool{p.h.ID(): true}
	for range adoptHops {
		if target == "" || asked[target] || p.ctx.Err() != nil {
			return
		}
		asked[target] = true
		lacks := t.lacks(s)
		if len(lacks) == 0 {
			return // nothing left to gain in the stripe
		}
		t.mu.Lock()
		if t.parent[target] == parentRefused {
			t.mu.Unlock()
			return
		}
		prev, prevState, had := t.parents[s], parentState(0), false
		if st, ok := t.parent[target]; ok {
			prevState, had = st, true
		}
		t.parents[s], t.parent[target] = target, parentUp
		t.mu.Unlock()
		next, elsewhere, grand, err := t.askAdopt(target, lacks)
		if err == nil && next == "" {
			adopted = true
			t.fetchElsewhere(elsewhere)
			t.mu.Lock()
			t.last[s] = t.p.clk.Now()
			t.unorphanLocked(s)
			t.setGrandLocked(s, grand)
			t.mu.Unlock()
			p.log.Debug("adopted", "stripe", s, "parent", target)
			return
		}
		t.mu.Lock()
		if t.parents[s] == target {
			t.parents[s] = prev
			if had {
				t.parent[target] = prevState
			} else if !slices.Contains(t.parents, target) {
				delete(t.parent, target)
			}
		}
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
func (t *pushTrees) lacks(s int) []int {
	c := t.c
	most := min(t.p.cfg.limits.MaxWant, DefaultLimits.MaxWant)
	var lacks []int
	for i := s; i < c.man.BlockCount() && len(lacks) < most; i += len(t.planned) {
		if !c.store.Has(i) {
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
func (t *pushTrees) askAdopt(target lpeer.ID, lacks []int) (next lpeer.ID, elsewhere []int, grand lpeer.ID, err error) {
	p := t.p
	root := t.c.man.ID()
	cs, err := p.cl.requestHello(p.ctx, target, ProtoAdopt, wire.Hello{Root: root[:]})
	if err != nil {
		return "", nil, "", err
	}
	defer cs.close()
	if err := cs.send(wire.AppendWant(nil, lacks)); err != nil {
		return "", nil, "", err
	}
	if err := cs.flush(); err != nil {
		return "", nil, "", err
	}
	f, err := cs.next(adoptAnswerMax + len(lacks)*binaryMaxVarint)
	if err != nil {
		return "", nil, "", err
	}
	switch {
	case len(f) > 0 && f[0] == wire.TypeHave:
		idx, err := wire.DecodeHave(nil, f, len(lacks), t.c.man.BlockCount())
		if err != nil {
			return "", nil, "", err
		}
		// Only blocks it asked for are let go.
		elsewhere = slices.DeleteFunc(idx, func(i int) bool { return !slices.Contains(lacks, i) })
		// Its parent may follow, named in a peers frame (adopted all the
		// same when it does not, or names it wrong).
		g, err := cs.next(adoptAnswerMax)
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
		return "", fmt.Errorf("%w: an adoption answer names %d peers", ErrMalformed, len(infos))
	}
	return infos[0].ID, nil
}

// setGrandLocked makes grand, the parent this peer's parent in stripe s
// named in its adoption answer, the stripe's grandparent: the peer asked
// to adopt this one when that parent fails in turn (t.mu held). An orphan
// its grandparent adopted would otherwise ask that same grandparent, gone
// with it, and no one else: in the 200-peer testnet with churn, a stripe
// whose root left and came back reached such an orphan's subtree by what
// the orphan pulled and, after the root's return, by its pushes, up to
// 2x T*. "" (none named: the parent is a seed, or has no parent now)
// changes nothing.
func (t *pushTrees) setGrandLocked(s int, grand lpeer.ID) {
	if grand != "" && grand != t.p.h.ID() && grand != t.parents[s] {
		t.grand[s] = grand
	}
}

// fetchElsewhere lets the running fetch take blocks idx from its sources
// now rather than wait for their stripe's pushes: the parent that adopted
// this peer, or that it asked to catch it up, answered that other peers
// hold them (see adoptee), or a parent shed them (shedBy).
func (t *pushTrees) fetchElsewhere(idx []int) {
	f := t.c.runningFetch()
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

// serveAdopt answers an orphan's adoption request, or a child's catch-up
// (ProtoAdopt): a want frame of the blocks of one stripe it lacks. The
// answer is a have frame (adopted: the blocks follow on a push stream; it
// lists those of the request the asker is to fetch from other peers, see
// adoptee) followed by a peers frame naming this peer's own parent in the
// stripe, if it has one; or a peers frame of one peer to ask instead; or
// an error frame (this peer does not get the stripe).
func (p *server) serveAdopt(ss *serverStream) error {
	c := ss.c
	from := ss.s.Conn().RemotePeer()
	f, err := ss.next(1 + binaryMaxVarint + p.cfg.limits.MaxWant*binaryMaxVarint)
	if err != nil {
		return err
	}
	t := c.pushes()
	if t == nil {
		return p.refuse(ss, errNotParent)
	}
	s, lacks, err := decodeAdopt(f, p.cfg.limits.MaxWant, c.man.BlockCount(), len(t.planned))
	if err != nil {
		return err
	}
	next, adopted, elsewhere, err := t.adoptee(from, s, lacks)
	switch {
	case err != nil:
		return p.refuse(ss, err)
	case next != "":
		if err := ss.send(wire.AppendPeers(nil, []lpeer.AddrInfo{{ID: next}})); err != nil {
			return err
		}
	default:
		if err := ss.send(wire.AppendHave(nil, elsewhere)); err != nil {
			return err
		}
		// Its parent in the stripe: the asker's grandparent from now on.
		if parent := t.parentUp(s); parent != "" && parent != from {
			if err := ss.send(wire.AppendPeers(nil, []lpeer.AddrInfo{{ID: parent}})); err != nil {
				return err
			}
		}
	}
	if adopted {
		p.observe(ServeEvent{Kind: EventAdopted, Peer: from, Root: c.man.ID(), Index: s})
	}
	return ss.flush()
}

// parentUp returns this peer's parent in stripe s while its pushes come,
// "" otherwise (and for a seed).
func (t *pushTrees) parentUp(s int) lpeer.ID {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id := t.parents[s]; id != "" && t.parent[id] == parentUp {
		return id
	}
	return ""
}

// decodeAdopt decodes an adoption request: a want frame of at most max
// blocks below blocks, at least one, all of one stripe of stripes, which it
// returns with them.
func decodeAdopt(f []byte, max, blocks, stripes int) (int, []int, error) {
	lacks, err := wire.DecodeWant(nil, f, max, blocks)
	if err != nil {
		return 0, nil, err
	}
	if len(lacks) == 0 {
		return 0, nil, fmt.Errorf("%w: an adoption request names no block", ErrMalformed)
	}
	s := lacks[0] % stripes
	for _, i := range lacks {
		if i%stripes != s {
			return 0, nil, fmt.Errorf("%w: an adoption request names blocks of stripes %d and %d", ErrMalformed, s, i%stripes)
		}
	}
	return s, lacks, nil
}

// adoptee adopts id in stripe s (adopted: as a new child) and queues it
// the blocks of lacks this peer holds (next ""), or names the peer it is to
// ask instead, or refuses. A seed leaves to other peers (elsewhere) the
// blocks of lacks that at least spareHolders of its watchers hold, by their
// filters (never fewer than hold them): its uplink, the swarm's scarcest,
// goes to the blocks no peer holds yet. Any peer asked by a child to catch
// it up leaves to them the blocks of lacks it does not hold yet and they
// do: it would push them only once it gains them, and the child waited
// meanwhile (a parent that came back after leaving had its own stripe
// still to pull: in the 200-peer testnet with churn, its child got the
// stripe's last blocks from it at up to 1.95x T*, long after every other
// peer held them). An orphan it adopts is not told so, and waits for its
// pushes: when adopters did the same, a whole subtree of new orphans
// pulled those blocks at once, and the stripe reached its peers 0.2x T*
// later in one run.
func (t *pushTrees) adoptee(id lpeer.ID, s int, lacks []int) (next lpeer.ID, adopted bool, elsewhere []int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A peer gets the stripe while its parent's pushes come, or once it
	// holds the whole content (done: it pushes every block it is asked).
	if !t.seed && t.parent[t.parents[s]] != parentUp && !t.c.store.Complete() {
		return "", false, nil, errNoStripe
	}
	if id == t.parents[s] {
		return "", false, nil, errors.New("asked to adopt its own parent")
	}
	// It asks again when it asked before: every first ask is in line.
	again := slices.Contains(t.line[s], id)
	if again {
		t.complainLocked(s, id)
	}
	if len(t.complaints[s][id]) >= cutComplaints {
		return "", false, nil, errors.New("failed the orphans it was given")
	}
	direct := adoptCap
	if t.seed {
		direct = seedAdoptCap
	}
	if !slices.Contains(t.children[s], id) {
		t.noteEarlyLocked(s, id, again)
		doubted := t.doubtedLocked(s, id)
		n := 0 // its adoptees, but for those it doubts (adopted apart)
		for _, a := range t.adoptees[s] {
			if !t.doubtedLocked(s, a) {
				n++
			}
		}
		switch {
		case doubted:
		case again && n >= adoptMax:
			// Asks again, but this peer adopted its most: sent to its
			// first adoptee that no orphan complained of (nor doubted).
			for _, a := range t.adoptees[s] {
				if a != id && len(t.complaints[s][a]) == 0 && !t.doubtedLocked(s, a) {
					return t.sendOnLocked(s, id, a, true), false, nil, nil
				}
			}
			return "", false, nil, errors.New("adopts no more orphans of the stripe")
		case !again && n >= direct:
			if t.seed {
				// A second orphan of the stripe (not counting those it
				// doubts): its root failed them both (left, or lies); the
				// seed's uplink no longer goes to it.
				t.cutRootLocked(s)
			}
			// Sent on: the orphans that asked first adopt two each, in
			// the order they asked (a binary tree under this peer's), but
			// for those another orphan complained of.
			fwd := t.forwarderLocked(s, id)
			if fwd == "" {
				return "", false, nil, errors.New("has no peer to send the orphan on to")
			}
			inLine := len(t.line[s]) < maxPushChildren
			if inLine {
				t.line[s] = append(t.line[s], id)
			}
			return t.sendOnLocked(s, id, fwd, inLine), false, nil, nil
		}
		t.children[s] = append(t.children[s], id)
		t.adoptees[s] = append(t.adoptees[s], id)
		adopted = true
		if !again && len(t.line[s]) < maxPushChildren {
			t.line[s] = append(t.line[s], id)
		}
	}
	// The blocks it lacks that this peer holds, but for those queued for it
	// or sent on its current stream already (a child caught up at its start
	// is pushed most of them as this peer gains them), and those stored
	// but not yet passed on (gained queues them for every child).
	o := t.outs[id]
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
			return "", false, nil, ErrClosed
		}
	case o != nil && !o.up:
		o.asked = true
	}
	for _, i := range lacks {
		if !t.known.has(i) {
			// Not passed on yet. Unless it is stored (about to be), it
			// comes when this peer gains it; if other peers hold it, a
			// child catching up need not wait for that. (An orphan just
			// adopted does: its adopter gains the stripe by pushes, and
			// its own orphans with it.)
			if !adopted && !t.c.store.Has(i) && t.othersHold(i) {
				elsewhere = append(elsewhere, i)
			}
			continue
		}
		if queued[i] || o != nil && o.sent.has(i) {
			continue
		}
		if t.seed && t.othersHold(i) {
			elsewhere = append(elsewhere, i)
			continue
		}
		if !t.pushLocked(id, i) {
			return "", false, nil, ErrClosed
		}
	}
	return "", adopted, elsewhere, nil
}
