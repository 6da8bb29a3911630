package serve

import (
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Versions in the swarm. A fetcher whose source answers "unknown root" offers
// it the content's manifest (wire.ProtoOffer). If the source's other contents
// hold blocks of it (an older version shares most of its blocks with a new
// one), the source serves those blocks under the offered root from then on,
// through a view (chunker.NewView): nothing is copied, and the reconciliation,
// the blocks and the watches of the content work as for any other.
//
// The work is bounded per asking peer: offers are rate-limited per peer
// (offerEvery, offerBurst), a manifest offered is at most maxOfferBytes, a view
// costs one pass over the manifest's blocks and the held blocks of the
// contents served, and at most maxViews views are kept (the oldest goes).
// Views are never announced, and they all go when a content is removed.
const (
	maxViews      = 16
	maxOfferBytes = 16 << 20
	offerEvery    = time.Second
	offerBurst    = 4
	maxOfferPeers = 1024 // peers whose offer rate is remembered
)

// NoBlocksText is the error text of an offer whose content shares no block
// with what the peer serves.
const NoBlocksText = "no block of this content"

// offers are the per-peer rate limits of offers and the views made.
type offers struct {
	peerRates
	mu    sync.Mutex
	views []chunker.ID // in the order made
}

// peerRates limits a kind of request per peer: offerBurst at once, then one
// per offerEvery (offers, and the requests for deltas).
type peerRates struct {
	mu    sync.Mutex
	peers map[lpeer.ID]*rate.Limiter
}

// allow reports whether id may make such a request now.
func (r *peerRates) allow(id lpeer.ID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.peers == nil {
		r.peers = make(map[lpeer.ID]*rate.Limiter)
	}
	l := r.peers[id]
	if l == nil {
		if len(r.peers) >= maxOfferPeers {
			clear(r.peers) // a flood of identities: forget them all, none gains
		}
		l = rate.NewLimiter(rate.Every(offerEvery), offerBurst)
		r.peers[id] = l
	}
	return l.AllowN(now, 1)
}

// ServeOffer answers an offer of a manifest (wire.ProtoOffer).
func (p *Server) ServeOffer(ss *Stream) error {
	remote := ss.S.Conn().RemotePeer()
	if ss.C != nil { // served already: nothing to make
		return p.ackOffer(ss)
	}
	if !p.offers.allow(remote, p.clk.Now()) {
		return p.refuseOffer(ss, wire.BusyText)
	}
	limit := min(p.cfg.Limits.MaxManifestBytes, maxOfferBytes)
	f, err := ss.Next(1 + limit)
	if err != nil {
		return err
	}
	body, err := wire.DecodeTyped(f, wire.TypeManifest)
	if err != nil {
		return err
	}
	var root chunker.ID
	copy(root[:], ss.Hello.Root)
	m, err := chunker.DecodeManifestID(body, root, limit)
	if err != nil || len(ss.Hello.Root) != len(root) {
		return fmt.Errorf("%w: offered manifest: %w", wire.ErrMalformed, err)
	}
	var from []*chunker.Store
	for _, c := range p.lib.All() {
		if !c.Store.IsView() {
			from = append(from, c.Store)
		}
	}
	v, err := chunker.NewView(m, from...)
	if err != nil {
		return err
	}
	if v.HeldCount() == 0 {
		return p.refuseOffer(ss, NoBlocksText)
	}
	c, err := NewContent(m, v)
	if err != nil {
		return err
	}
	if old := p.lib.addView(c, &p.offers); old != nil {
		old.Close()
	}
	p.log.Debug("serving a view", "root", root, "blocks", v.HeldCount(), "of", m.BlockCount(), "for", remote)
	return p.ackOffer(ss)
}

// ackOffer answers an offer taken (an empty have frame).
func (p *Server) ackOffer(ss *Stream) error {
	if err := ss.Send(wire.AppendHave(nil, nil)); err != nil {
		return err
	}
	return ss.Flush()
}

// refuseOffer answers an offer with an error frame of text.
func (p *Server) refuseOffer(ss *Stream, text string) error {
	if err := ss.Send(wire.AppendError(nil, text)); err != nil {
		return err
	}
	return ss.Flush()
}

// OfferHandler is the stream handler of wire.ProtoOffer (ServeOffer), which
// takes the streams of contents this peer does not serve.
func (p *Server) OfferHandler() network.StreamHandler { return p.handler(p.ServeOffer, true) }

// addView adds the content of a view, unless its root is served already
// (then c is dropped and returned, to close), and removes the oldest view
// past maxViews (returned, to close).
func (l *Library) addView(c *Content, o *offers) *Content {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := c.Man.ID()
	if _, dup := l.contents[id]; dup || l.closed {
		return c
	}
	c.fresh = uploadQueueFresh
	l.contents[id] = c
	o.mu.Lock()
	defer o.mu.Unlock()
	o.views = append(o.views, id)
	for len(o.views) > maxViews {
		old := o.views[0]
		o.views = o.views[1:]
		if v := l.contents[old]; v != nil && v.Store.IsView() {
			delete(l.contents, old)
			return v
		}
	}
	return nil
}
