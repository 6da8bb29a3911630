package swarm

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/stripes"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Joined trees: a seed that places (Place) puts each fetcher that joins
// (wire.ProtoJoin) in its stripe trees as it comes, with a
// stripes.Placer, and tells it, over the join stream it keeps open, its
// parent in each stripe and every later change of its parents and
// children. A fetcher joins the trees of the sources it starts from as
// its fetch starts (joinTrees), takes its place once it knows a parent
// (Push), and follows the seed's changes: a new parent is asked to catch
// it up (catchUp), a new child is pushed what it asks and what this peer
// gains. Its leaving (the join stream closed or reset) frees its places,
// and the seed places its children again. Blocks the trees do not bring
// are pulled as before.

// MaxJoined bounds the fetchers one seed places per content; later ones
// are refused (they pull).
const MaxJoined = serve.JoinStreams

// PlaceSettle is how long a placing seed waits, on the service's clock,
// before it tells the fetchers concerned the moves a join or a leave made
// (moves of the seed's own children, the roots, and of fetchers that
// joined holding blocks, are told at once, with those waiting: an update
// or a resumed fetch has little left to fetch, and in the testnet's
// update a wait of 300 ms cost about 0.5 x T* of the new blocks: medians
// of 6.2 x on average over seven runs, against 5.6 x). A burst of joins
// moves many children more than once (199 joins make about 560 moves of
// children placed already); told
// after the burst, each child hears only its last parent, before blocks
// flow to it, rather than be moved mid-fetch. A joined fetcher pulls
// while it waits. In the testnet's default 200-peer run, 300 ms took the
// median from 1.54–1.63 to 1.48–1.58 x T* and the seed's upload from 1.2
// copies to 1.05, and at 1,000 peers from 1.80 to 1.56 (600 ms: no
// better; 1 s: 2.19, the fetchers' pulls filling the seed's uplink while
// they waited). See docs/stripe-trees.md.
const PlaceSettle = 300 * time.Millisecond

// placeFrameMax bounds a place frame a fetcher reads: MaxPlacements
// placements of a peer with its addresses each.
const placeFrameMax = 16 + wire.MaxPlacements*(2*serve.MaxVarint+1+wire.MaxIDLen+wire.MaxAddrsListed*(serve.MaxVarint+wire.MaxAddrLen))

// errNotPlacing refuses a join of content whose seed places no fetchers.
var errNotPlacing = errors.New("places no fetchers in stripe trees for this content")

// errJoined refuses a second join of one fetcher, or one beyond MaxJoined.
var errJoined = errors.New("joined already, or the trees are full")

// placing is a placing seed's Placer and its fetchers' join streams (the
// Trees' mu held around every use).
type placing struct {
	pl   *stripes.Placer[lpeer.ID]
	outs map[lpeer.ID]*joinOut
	// holds marks the fetchers that joined holding blocks (Hello.Holds).
	holds map[lpeer.ID]bool
	// pending holds the moves not yet told, until timer flushes them a
	// settle time (PlaceSettle) after the first.
	pending []stripes.Move[lpeer.ID]
	timer   clock.Timer
}

// joinOut queues the placements for one fetcher's join stream.
type joinOut struct {
	q    []wire.Placement
	wake chan struct{}
}

// Place has the service place the fetchers of content root, which it
// holds whole, in k stripe trees (1 to MaxStripes) as they join, and push
// every block to its stripe's root (see Joined trees above). Place is set
// once per content, instead of Push.
func (p *Node) Place(root chunker.ID, k int) error {
	if k < 1 || k > MaxStripes {
		return fmt.Errorf("peer: place: %d stripes (want 1 to %d)", k, MaxStripes)
	}
	c := p.lib.Lookup(root[:])
	if c == nil || !c.Store.Complete() {
		return fmt.Errorf("peer: place: content %s is not held whole: %w", root, wire.ErrUnknownRoot)
	}
	if err := p.Push(root, Stripes{Parents: make([]lpeer.ID, k)}); err != nil {
		return err
	}
	t := TreesOf(c)
	t.mu.Lock()
	t.place = &placing{pl: stripes.NewPlacer(p.h.ID(), k, 0), outs: map[lpeer.ID]*joinOut{}, holds: map[lpeer.ID]bool{}}
	t.mu.Unlock()
	return nil
}

// ServeJoin places the fetcher that joins (wire.ProtoJoin) and writes its
// placements until it leaves.
func (p *Node) ServeJoin(ss *serve.Stream) error {
	from := ss.S.Conn().RemotePeer()
	t := TreesOf(ss.C)
	if t == nil {
		return p.srv.Refuse(ss, errNotPlacing)
	}
	t.mu.Lock()
	o, err := t.joinLocked(from, ss.Hello.Holds, ss.Hello.Private)
	t.mu.Unlock()
	if err != nil {
		return p.srv.Refuse(ss, err)
	}
	defer func() {
		t.mu.Lock()
		delete(t.place.outs, from)
		delete(t.place.holds, from)
		t.applyLocked(t.place.pl.Leave(from))
		t.mu.Unlock()
		p.log.Debug("fetcher left the trees", "peer", from)
	}()
	// The fetcher writes nothing: a read ends when it leaves.
	gone := make(chan error, 1)
	if !p.goroutine(func() {
		if err := ss.S.SetReadDeadline(time.Time{}); err != nil {
			gone <- err
			return
		}
		var b [1]byte
		_, err := ss.S.Read(b[:])
		if err == nil {
			err = fmt.Errorf("%w: bytes from a joined fetcher", wire.ErrMalformed)
		}
		gone <- err
	}) {
		return wire.ErrClosed
	}
	k := t.place.pl.Stripes()
	for {
		select {
		case <-o.wake:
		case err := <-gone:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-ss.C.Closed():
			// No longer served (Unserve): the fetcher leaves the trees
			// and pulls.
			return nil
		}
		t.mu.Lock()
		q := o.q
		o.q = nil
		t.mu.Unlock()
		for len(q) > 0 {
			n := min(len(q), wire.MaxPlacements)
			if err := ss.Send(wire.AppendPlace(nil, k, q[:n])); err != nil {
				return err
			}
			q = q[n:]
		}
		if err := ss.Flush(); err != nil {
			return err
		}
	}
}

// joinLocked places fetcher id, which holds blocks already or not (holds),
// under no other such fetcher when others cannot dial it (private), and
// returns its join stream's queue, its parents queued (t.mu held).
func (t *Trees) joinLocked(id lpeer.ID, holds, private bool) (*joinOut, error) {
	if t.place == nil {
		return nil, errNotPlacing
	}
	if t.place.outs[id] != nil || t.place.pl.Len() >= MaxJoined {
		return nil, errJoined
	}
	o := &joinOut{wake: make(chan struct{}, 1)}
	t.place.outs[id] = o
	if holds {
		t.place.holds[id] = true
	}
	if private {
		t.applyLocked(t.place.pl.JoinPrivate(id))
	} else {
		t.applyLocked(t.place.pl.Join(id))
	}
	return o, nil
}

// applyLocked passes the Placer's moves on (t.mu held): a settle time
// (PlaceSettle) after the first of them, or at once with those waiting
// when one moves a root or a fetcher that joined holding blocks,
// coalesced (see tellMovesLocked).
func (t *Trees) applyLocked(moves []stripes.Move[lpeer.ID]) {
	pl := t.place
	self := t.p.h.ID()
	pl.pending = append(pl.pending, moves...)
	if slices.ContainsFunc(moves, func(m stripes.Move[lpeer.ID]) bool { return m.Parent == self || m.Old == self || pl.holds[m.Child] }) {
		t.flushLocked()
		return
	}
	if pl.timer == nil && len(pl.pending) > 0 {
		pl.timer = t.p.clk.AfterFunc(PlaceSettle, func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.flushLocked()
		})
	}
}

// flushLocked tells the pending moves, each child its last parent once
// (t.mu held).
func (t *Trees) flushLocked() {
	pl := t.place
	if pl.timer != nil {
		pl.timer.Stop()
		pl.timer = nil
	}
	moves := coalesce(pl.pending)
	pl.pending = nil
	t.tellMovesLocked(moves)
}

// coalesce returns moves with each child's moves in a stripe as one: from
// its first old parent to its last parent, in the order of its first
// move; a child back where it was has none.
func coalesce[K comparable](moves []stripes.Move[K]) []stripes.Move[K] {
	type key struct {
		s     int
		child K
	}
	at := map[key]int{}
	var out []stripes.Move[K]
	for _, m := range moves {
		k := key{m.Stripe, m.Child}
		if j, ok := at[k]; ok {
			out[j].Parent = m.Parent
			continue
		}
		at[k] = len(out)
		out = append(out, m)
	}
	return slices.DeleteFunc(out, func(m stripes.Move[K]) bool { return m.Parent == m.Old })
}

// tellMovesLocked passes moves on at once (t.mu held): to each child its
// new parent, to each new parent its child, to each old parent the child
// it lost; the seed's own children (the roots) change in its Tree, and a
// new root that joined empty is pushed every block of its stripe at once.
// A root that holds blocks (it joined with Hello.Holds, or was placed
// elsewhere before) is pushed what its catch-up request says it lacks: in
// the testnet's update (200 peers holding version 1, 11 new blocks of
// 139), the seed pushed 22 blocks, half of them blocks its roots held.
func (t *Trees) tellMovesLocked(moves []stripes.Move[lpeer.ID]) {
	self := t.p.h.ID()
	for _, m := range moves {
		if m.Old != "" && m.Old != m.Parent {
			if m.Old == self {
				t.tree.RemoveChild(m.Stripe, m.Child)
			} else {
				t.tellLocked(m.Old, wire.Placement{Stripe: m.Stripe, Kind: wire.PlaceDrop, Peer: lpeer.AddrInfo{ID: m.Child}})
			}
		}
		if t.p.cfg.Observer != nil {
			// Before either is told (the testnet links the pair).
			t.p.srv.Observe(serve.Event{Kind: serve.EventPlaced, Peer: m.Child, Parent: m.Parent, Root: t.c.Man.ID(), Index: m.Stripe})
		}
		t.tellLocked(m.Child, wire.Placement{Stripe: m.Stripe, Kind: wire.PlaceParent, Peer: t.addrInfo(m.Parent)})
		switch {
		case m.Parent == "":
		case m.Parent == self:
			added := t.tree.AddChild(m.Stripe, m.Child)
			t.tree.Moved(m.Child, t.p.clk.Now())
			if added && m.Old == "" && !t.place.holds[m.Child] {
				for i := range t.c.Man.BlockCount() {
					if t.stripe(i) == m.Stripe && !t.pushLocked(m.Child, i) {
						return
					}
				}
			}
		default:
			t.tellLocked(m.Parent, wire.Placement{Stripe: m.Stripe, Kind: wire.PlaceChild, Peer: t.addrInfo(m.Child)})
		}
	}
}

// tellLocked queues placement pl for fetcher id's join stream, if it is
// still joined (t.mu held).
func (t *Trees) tellLocked(id lpeer.ID, pl wire.Placement) {
	o := t.place.outs[id]
	if o == nil {
		return
	}
	o.q = append(o.q, pl)
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// addrInfo returns id with the addresses this peer knows of it ("" for
// none).
func (t *Trees) addrInfo(id lpeer.ID) lpeer.AddrInfo {
	if id == "" {
		return lpeer.AddrInfo{}
	}
	addrs := t.p.h.Peerstore().Addrs(id)
	return lpeer.AddrInfo{ID: id, Addrs: addrs[:min(len(addrs), wire.MaxAddrsListed)]}
}

// joinTrees joins the stripe trees of content c at the first of srcs
// (at most joinTries of them) that places fetchers, takes its place there
// once a parent is named (Push), and follows the seed's placements until
// the join ends (the service closes, or the seed goes). Unless near, it
// does not join a seed it reaches at a loopback or private address
// (NearAddr): it pulls. Nor one it reaches through a relay only: a
// relay's limits (and a second hop) would hold the pushes back.
func (p *Node) joinTrees(c *serve.Content, srcs []lpeer.ID, near bool) {
	root := c.Man.ID()
	for _, src := range srcs[:min(len(srcs), joinTries)] {
		cs, err := p.RequestHello(p.ctx, src, wire.ProtoJoin, wire.Hello{Root: root[:], Holds: c.Store.HeldCount() > 0, Private: p.Private()})
		if err != nil {
			continue
		}
		if a := cs.s.Conn().RemoteMultiaddr(); hostkit.IsRelayed(a) || !near && NearAddr(a) {
			cs.Reset()
			p.log.Debug("the seed is near, or relayed: pulling", "seed", src, "addr", a)
			return
		}
		if err := cs.Flush(); err != nil {
			cs.Reset()
			continue
		}
		joined, err := p.followJoin(c, cs)
		cs.Reset()
		if joined {
			p.log.Debug("left the seed's trees", "seed", src, "err", err)
			return
		}
		p.log.Debug("join refused", "peer", src, "err", err)
	}
}

// joinTries is how many of a fetch's first sources it asks to join.
const joinTries = 3

// NearAddr reports whether a peer reached at a is near: at a loopback,
// private (RFC 1918, shared, unique local) or link-local address, on the
// same machine or LAN, where the uplinks and not the latency set the pace
// and pulls are faster than stripe trees. Twenty capped fetchers on
// loopback (reconcile bench swarm) finished at 1.31x and 1.38x the fluid
// bound with 4 and 8 joined trees, at 0.96x pulling; in the testnet's
// wide-area model (one-way delays of 373 ms on average) 8 joined trees of
// 256 KiB blocks finished at 1.92x where pulls took 2.14x.
func NearAddr(a ma.Multiaddr) bool {
	return a != nil && (manet.IsIPLoopback(a) || manet.IsPrivateAddr(a) || manet.IsIP6LinkLocal(a))
}

// followJoin reads the place frames of a join stream and applies them to
// c's trees; joined reports whether the seed placed this peer.
func (p *Node) followJoin(c *serve.Content, cs *ClientStream) (joined bool, err error) {
	var (
		t       *Trees
		parents []lpeer.ID
		held    []wire.Placement // children named before this peer has its Trees
	)
	for {
		f, err := cs.nextQuiet(placeFrameMax)
		if err != nil {
			return joined, err
		}
		k, ps, err := wire.DecodePlace(f, MaxStripes)
		if err != nil {
			return joined, err
		}
		joined = true
		if parents == nil {
			parents = make([]lpeer.ID, k)
		}
		if len(parents) != k {
			return joined, fmt.Errorf("%w: place frames of %d and %d stripes", wire.ErrMalformed, len(parents), k)
		}
		self := p.h.ID()
		for _, pl := range ps {
			if pl.Peer.ID == self {
				return joined, fmt.Errorf("%w: placed under itself", wire.ErrMalformed)
			}
			if pl.Peer.ID != "" && len(pl.Peer.Addrs) > 0 {
				p.h.Peerstore().AddAddrs(pl.Peer.ID, pl.Peer.Addrs, peerstore.TempAddrTTL)
			}
		}
		if t == nil {
			for _, pl := range ps {
				if pl.Kind == wire.PlaceParent {
					parents[pl.Stripe] = pl.Peer.ID
				} else {
					held = append(held, pl)
				}
			}
			if !slices.ContainsFunc(parents, func(id lpeer.ID) bool { return id != "" }) {
				continue
			}
			if err := p.Push(c.Man.ID(), Stripes{Parents: parents}); err != nil {
				return joined, err
			}
			if t = TreesOf(c); t == nil {
				return joined, errors.New("peer: joined trees: no place set")
			}
			t.mu.Lock()
			t.joined = true
			t.mu.Unlock()
			// Its parents are asked for what they hold (Push does when
			// the fetch runs, the fetch as it starts; a place taken
			// between the two would go without, and a parent's push
			// stream, refused before this peer had its place, would be
			// tried again only a repair time later).
			t.catchUp("")
			ps = held
		}
		t.follow(ps)
	}
}

// follow applies the seed's placements ps to this fetcher's trees.
func (t *Trees) follow(ps []wire.Placement) {
	now := t.p.clk.Now()
	var ask []lpeer.ID
	added := false
	t.mu.Lock()
	for _, pl := range ps {
		switch pl.Kind {
		case wire.PlaceParent:
			if t.tree.Reparent(pl.Stripe, pl.Peer.ID, now) && pl.Peer.ID != "" && !slices.Contains(ask, pl.Peer.ID) {
				ask = append(ask, pl.Peer.ID)
			}
		case wire.PlaceChild:
			if t.tree.AddChild(pl.Stripe, pl.Peer.ID) {
				added = true
			}
		case wire.PlaceDrop:
			t.tree.RemoveChild(pl.Stripe, pl.Peer.ID)
		}
	}
	if added {
		close(t.newChildren)
		t.newChildren = make(chan struct{})
	}
	t.mu.Unlock()
	for _, id := range ask {
		t.catchUp(id) // what the new parent holds of its stripes
	}
}

// awaitChild waits, for a quarter repair time at most, until the seed's
// placements make id this peer's child in stripe s: a placed fetcher asks
// its new parent to catch it up as soon as the seed names it, and its
// request may come before the seed's word of it. Taken for an orphan, it
// was sent on to another (and never caught up: the last peers of the
// 200-peer testnet with joined trees waited a repair time for one block).
func (t *Trees) awaitChild(id lpeer.ID, s int) {
	timeout := t.p.clk.After(t.repair / 4)
	for {
		t.mu.Lock()
		child := slices.Contains(t.tree.Children(s), id)
		wait := t.newChildren
		t.mu.Unlock()
		if child {
			return
		}
		select {
		case <-wait:
		case <-timeout:
			return
		case <-t.p.ctx.Done():
			return
		}
	}
}
