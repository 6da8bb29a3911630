package testnet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/testnet/tracestats"
)

// outcome is how one node's fetching ended.
type outcome struct {
	// at is when it ended, from the start of the fetches; err why it failed.
	at  time.Duration
	err error
	// sums are the summaries of its fetches (two for a rejoining node).
	sums []*peer.Summary
	// left, rejoined and late say what the node did; away is how long a
	// node that came back was gone (from its leaving to its return).
	left, rejoined, late bool
	away                 time.Duration
}

// swarm runs the fetch phase: every fetching node's life (start, maybe
// late; leave; come back), the late joins and the links they make and cut.
type swarm struct {
	cfg   Config
	ctx   context.Context
	fab   fabric
	ov    overlay
	roles []role
	root  chunker.ID
	cnt   *counters
	// nodes is shared with the audit: read and written under nodesMu.
	nodes   []*node
	nodesMu *sync.Mutex
	// newService builds a node's service on its (counting) host.
	newService func(i int) (*peer.Service, error)
	// isLiar tells the liars' ids, to count bans of honest peers.
	isLiar map[lpeer.ID]bool
	// start is when the fetches started.
	start time.Time
	// stripes, when set, gives node i's place in the stripe trees
	// (Config.Trees), for its service's Push.
	stripes func(i int) peer.Stripes
	// tr, when set, traces the nodes' joins, leaves and ends.
	tr *tracestats.Writer

	// linkMu guards who is present and which pairs are linked.
	linkMu    sync.Mutex
	present   []bool
	linked    []bool  // by pair index
	pairsOf   [][]int // node -> pair indices
	pairIndex map[[2]int]int
	// latency, direct and shape give the pairs the seed's joined trees
	// link as it places fetchers (placed): their latency, whether their
	// NATs let them connect (nil: all do), and the model that delays them.
	latency func(a, b int) time.Duration
	direct  func(a, b int) bool
	shape   *shaper
	// joinAt is the seed, asked to place the fetches (Config.Join).
	joinAt []lpeer.ID

	// blocks counts the blocks stored by the honest fetches; honest those
	// of the honest fetches that start with the run, the swarm's progress
	// toward the late joins.
	blocks, honest atomic.Int64
	// running counts the honest fetches under way; done the needed nodes
	// that ended.
	running, done atomic.Int64
	outs          []outcome
}

// init sets up the links' state (every node but the late joiners present
// from the start) and the outcomes.
func (w *swarm) init() {
	w.present = make([]bool, len(w.nodes))
	w.linked = make([]bool, len(w.ov.pairs))
	w.pairsOf = make([][]int, len(w.nodes))
	for i := range w.present {
		w.present[i] = w.roles[i].lateAt == 0
	}
	for k, p := range w.ov.pairs {
		w.pairsOf[p.a] = append(w.pairsOf[p.a], k)
		w.pairsOf[p.b] = append(w.pairsOf[p.b], k)
	}
	w.outs = make([]outcome, len(w.nodes))
}

// initialPairs are the pairs linked before the fetches start.
func (w *swarm) initialPairs() []pair {
	var ps []pair
	for k, p := range w.ov.pairs {
		if w.present[p.a] && w.present[p.b] {
			ps = append(ps, p)
			w.linked[k] = true
		}
	}
	return ps
}

// attach links node i to its present neighbours.
func (w *swarm) attach(i int) error {
	w.linkMu.Lock()
	defer w.linkMu.Unlock()
	w.present[i] = true
	var errs []error
	for _, k := range w.pairsOf[i] {
		p := w.ov.pairs[k]
		if w.linked[k] || !w.present[p.a] || !w.present[p.b] {
			continue
		}
		if err := w.fab.link(w.ctx, p, w.cfg.Bandwidth); err != nil {
			errs = append(errs, err)
			continue
		}
		w.linked[k] = true
	}
	return errors.Join(errs...)
}

// detach cuts node i from every neighbour.
func (w *swarm) detach(i int) {
	w.linkMu.Lock()
	defer w.linkMu.Unlock()
	w.present[i] = false
	for _, k := range w.pairsOf[i] {
		if w.linked[k] {
			_ = w.fab.unlink(w.ov.pairs[k])
			w.linked[k] = false
		}
	}
}

// sources are node i's own neighbours that are present now.
func (w *swarm) sources(i int) []lpeer.ID {
	w.linkMu.Lock()
	defer w.linkMu.Unlock()
	var ids []lpeer.ID
	for _, j := range w.ov.out[i] {
		if w.present[j] {
			ids = append(ids, w.fab.host(j).ID())
		}
	}
	return ids
}

// events counts what honest fetches report of their peers.
func (w *swarm) events(ev peer.FetchEvent) {
	switch ev.Kind {
	case peer.FetchCorruptBlock:
		w.cnt.corrupt.Add(1)
	case peer.FetchPeerBanned:
		w.cnt.bans.Add(1)
		if !w.isLiar[ev.Peer] {
			w.cnt.honestBans.Add(1)
		}
	}
}

// fetch runs node i's service p's fetch until it ends; onBlock is told of
// every block stored. A fetch that stores no block for Config.StuckAfter is
// cancelled and started again on its store (it resumes), as a user would:
// on the mock network, whose streams ignore deadlines, two peers that both
// write and neither reads can otherwise wait for ever. Each such restart is
// counted (Result.Restarts).
func (w *swarm) fetch(ctx context.Context, i int, p *peer.Service, onBlock func(peer.Progress)) (*peer.Summary, error) {
	for {
		fctx, cancel := context.WithCancel(ctx)
		var last atomic.Int64
		last.Store(w.cfg.Clock.Now().UnixNano())
		var stuck atomic.Bool
		done := make(chan struct{})
		go func() {
			t := w.cfg.Clock.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.Chan():
					if w.cfg.Clock.Since(time.Unix(0, last.Load())) > w.cfg.StuckAfter {
						stuck.Store(true)
						cancel()
						return
					}
				}
			}
		}()
		sum, err := p.FetchServed(fctx, w.root, peer.WithSources(w.sources(i)...), peer.WithJoinAt(w.joinAt...), peer.WithMethod(w.cfg.Method),
			peer.WithNoPeerTimeout(w.cfg.Timeout), peer.WithFetchEvents(w.events), peer.WithBlockChoice(w.cfg.Choice),
			peer.WithProgress(func(pr peer.Progress) {
				last.Store(w.cfg.Clock.Now().UnixNano())
				w.blocks.Add(1)
				onBlock(pr)
			}))
		close(done)
		cancel()
		if err == nil || !stuck.Load() || ctx.Err() != nil {
			return sum, err
		}
		w.cnt.restarts.Add(1)
	}
}

// life is an honest fetching node's run: it joins (late, when its role says
// so), fetches, and may leave mid-fetch and come back to resume from its
// store. join is closed when a late joiner is to join.
func (w *swarm) life(i int, join <-chan struct{}) {
	r, n := w.roles[i], w.nodes[i]
	o := &w.outs[i]
	defer func() {
		o.at = w.cfg.Clock.Since(w.start)
		w.tr.Event("done", i)
		if r.needed() {
			w.done.Add(1)
		}
	}()
	if r.lateAt > 0 {
		select {
		case <-join:
		case <-w.ctx.Done():
			o.err = w.ctx.Err()
			return
		}
		o.late = true
		w.tr.Event("joined", i)
		if err := w.attach(i); err != nil {
			o.err = err
			return
		}
	}
	fctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	var leaving sync.Once
	var triggered atomic.Bool
	left := make(chan struct{})
	var leftAt time.Duration
	leave := func() {
		leaving.Do(func() {
			triggered.Store(true)
			leftAt = w.cfg.Clock.Since(w.start)
			w.tr.Event("left", i)
			// Not from the progress callback: Close waits for the fetch.
			go func() {
				cancel()
				n.p.Close()
				w.detach(i)
				close(left)
			}()
		})
	}
	onBlock := func(pr peer.Progress) {
		if r.lateAt == 0 {
			w.honest.Add(1)
		}
		if r.leaveAt > 0 && float64(pr.Blocks) >= r.leaveAt*float64(pr.TotalBlocks) {
			leave()
		}
	}
	if r.lateAt > 0 {
		w.running.Add(1) // the others were counted before they started
	}
	sum, err := w.fetch(fctx, i, n.p, onBlock)
	w.running.Add(-1)
	o.sums = append(o.sums, sum)
	if r.leaveAt == 0 {
		o.err = err
		return
	}
	if !triggered.Load() {
		if err != nil {
			o.err = err
			return
		}
		// It completed before it could leave: it leaves complete.
		leave()
	}
	<-left
	o.left, o.err = true, nil
	if !r.rejoin {
		return
	}
	pause := time.Duration(r.pause * float64(leftAt))
	select {
	case <-w.cfg.Clock.After(pause):
	case <-w.ctx.Done():
		o.err = w.ctx.Err()
		return
	}
	o.err = w.rejoin(i, o, leftAt)
}

// rejoin brings node i back: a new service on its host reopens its store,
// re-hashing the blocks on disk, serves it, links to the neighbours and
// fetches the rest. leftAt is when it left, from the start of the fetches.
func (w *swarm) rejoin(i int, o *outcome, leftAt time.Duration) error {
	p, err := w.newService(i)
	if err != nil {
		return err
	}
	n := w.nodes[i]
	st, err := chunker.OpenStore(w.ctx, n.dir, chunker.WithID(w.root), chunker.WithVerify())
	if err != nil {
		p.Close()
		return fmt.Errorf("testnet: reopen store: %w", err)
	}
	if _, err := p.Serve(st); err != nil {
		st.Close()
		p.Close()
		return fmt.Errorf("testnet: serve: %w", err)
	}
	if w.stripes != nil {
		if err := p.Push(w.root, w.stripes(i)); err != nil {
			p.Close()
			return fmt.Errorf("testnet: push: %w", err)
		}
	}
	w.nodesMu.Lock()
	n2 := *n
	n2.p, n2.store, n2.units = p, st, st
	w.nodes[i] = &n2
	w.nodesMu.Unlock()
	o.rejoined = true
	o.away = w.cfg.Clock.Since(w.start) - leftAt
	w.tr.Event("back", i)
	if err := w.attach(i); err != nil {
		return err
	}
	w.running.Add(1)
	defer w.running.Add(-1)
	sum, err := w.fetch(w.ctx, i, p, func(peer.Progress) {})
	o.sums = append(o.sums, sum)
	return err
}
