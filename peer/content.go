package peer

import (
	"errors"
	"sort"
	"sync"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// maxSwarm bounds the peers remembered per content for peer exchange.
const maxSwarm = 1024

// content is one file or tree this peer serves: its manifest and store, the
// peers seen asking about it, and the fetch running for it, if any.
type content struct {
	man   *chunker.Manifest
	store *chunker.Store
	coded *codedBlocks // Byers: coded blocks served, nil when not offered
	recon *responder   // answers reconciliation requests
	sends *repeats     // blocks sent per peer, to bound repeats (peer/repeat.go)
	super *superSeed   // the offer policy of WithSuperSeeding, nil when off

	mu         sync.Mutex
	codedSends *repeats // sends of coded blocks, made on first use
	swarm      map[lpeer.ID]struct{}
	sent       map[lpeer.ID]int64
	fetch      *fetch
}

// addContent serves the store st (and the coded blocks cb, if not nil),
// super-seeding its blocks if super is set.
func (p *Service) addContent(st *chunker.Store, cb *codedBlocks, super bool) error {
	c, err := newContent(st.Manifest(), st)
	if err != nil {
		return err
	}
	c.coded = cb
	if super {
		c.super = newSuperSeed(st.Manifest().BlockCount())
	}
	return p.add(c)
}

func newContent(m *chunker.Manifest, s *chunker.Store) (*content, error) {
	r, err := newResponder(m.BlockCount(), blockMethods...)
	if err != nil {
		return nil, err
	}
	return &content{man: m, store: s, recon: r, sends: newRepeats(m.BlockCount()), swarm: make(map[lpeer.ID]struct{}), sent: make(map[lpeer.ID]int64)}, nil
}

func (c *content) noteSwarm(id lpeer.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.swarm) < maxSwarm {
		c.swarm[id] = struct{}{}
	}
}

func (c *content) forget(id lpeer.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.swarm, id)
}

func (c *content) swarmPeers() []lpeer.ID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]lpeer.ID, 0, len(c.swarm))
	for id := range c.swarm {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (c *content) noteSent(id lpeer.ID, n int) {
	c.mu.Lock()
	c.sent[id] += int64(n)
	c.mu.Unlock()
}

// sentTo returns the bytes of blocks served to each peer so far.
func (c *content) sentTo() map[lpeer.ID]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[lpeer.ID]int64, len(c.sent))
	for id, n := range c.sent {
		out[id] = n
	}
	return out
}

// offerSource tells a running fetch of this content about a peer that has it.
func (c *content) offerSource(id lpeer.ID) {
	c.mu.Lock()
	f := c.fetch
	c.mu.Unlock()
	if f != nil {
		f.addSource(id)
	}
}

// setFetch records f as the content's running fetch; false if one runs.
func (c *content) setFetch(f *fetch) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fetch != nil {
		return false
	}
	c.fetch = f
	return true
}

// clearFetch forgets f once it has ended.
func (c *content) clearFetch(f *fetch) {
	c.mu.Lock()
	if c.fetch == f {
		c.fetch = nil
	}
	c.mu.Unlock()
}

// codedSet returns the content's coded blocks (Byers), or nil.
func (c *content) codedSet() *codedBlocks {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.coded
}

// setCoded sets the content's coded blocks once.
func (c *content) setCoded(cb *codedBlocks) {
	c.mu.Lock()
	if c.coded == nil {
		c.coded = cb
	}
	c.mu.Unlock()
}

func (c *content) close() error {
	if c.store == nil {
		return nil
	}
	err := c.store.Close()
	if errors.Is(err, chunker.ErrClosed) {
		return nil
	}
	return err
}

// repeatsFor returns the repeat counts of the blocks (or, coded, of the n
// coded blocks) of the content.
func (c *content) repeatsFor(coded bool, n int) *repeats {
	if !coded {
		return c.sends
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.codedSends == nil || c.codedSends.blocks != n {
		c.codedSends = newRepeats(n)
	}
	return c.codedSends
}
