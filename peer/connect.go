package peer

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/serve"
)

// reachGrace is how long connectAll waits for more peers once one is
// reached.
const reachGrace = 500 * time.Millisecond

// dialHooks is what connectAll tells its caller as it dials, and when it
// may return.
type dialHooks struct {
	// events hears of each peer whose first dial failed
	// (FetchPeerUnreachable) until connectAll returns, one call at a time.
	events func(FetchEvent)
	// late takes each peer reached after connectAll returned.
	late func(lpeer.ID)
	// early makes connectAll return, none reached, once every dial has
	// failed once: the caller looks for other peers meanwhile, and the
	// retries go on (for late).
	early bool
}

// connectAll dials the given peers in parallel and returns the peers reached
// with the ids of known (already connected, or in the peerstore) that are
// not banned, sorted and without duplicates. It returns once every dial has
// ended, or reachGrace after the first peer was reached: a peer that does
// not answer costs a fetch no wait when another does (and, with h.early,
// once every dial has failed once). The dials still going on then go on
// (connectRetry), and each peer they reach is given to h.late, if not nil.
func (p *client) connectAll(ctx context.Context, infos []lpeer.AddrInfo, extra []ma.Multiaddr, known []lpeer.ID, h dialHooks) []lpeer.ID {
	all := append([]lpeer.AddrInfo(nil), infos...)
	for _, a := range extra {
		ai, err := lpeer.AddrInfoFromP2pAddr(a)
		if err != nil {
			p.log.Warn("skip peer address", "addr", a, "err", err)
			continue
		}
		all = append(all, *ai)
	}
	type dialed struct {
		id      lpeer.ID
		ok      bool
		retried bool // its first dial failed (a message on failed)
	}
	var (
		mu       sync.Mutex // serializes events; returned and the sends on results and failed
		returned bool       // connectAll has returned: late takes the peers reached
		results  = make(chan dialed, len(all))
		failed   = make(chan struct{}, len(all)) // a first dial failed
		n        int
	)
	for _, ai := range all {
		if ai.ID == p.h.ID() || p.guard.IsBanned(ai.ID) {
			continue
		}
		n++
		go func() {
			retried := false
			retrying := func(err error) {
				mu.Lock()
				defer mu.Unlock()
				retried = true
				if returned {
					return
				}
				failed <- struct{}{}
				if h.events != nil {
					h.events(FetchEvent{Kind: FetchPeerUnreachable, Peer: ai.ID, Block: -1, Err: err})
				}
			}
			err := p.connectRetry(ctx, ai, retrying)
			if err != nil {
				p.log.Info("peer unreachable", "peer", ai.ID, "err", err)
			} else {
				p.nd.AwaitDirect(ctx, ai.ID) // give hole punching a chance first
			}
			mu.Lock()
			if !returned {
				results <- dialed{ai.ID, err == nil, retried} // buffered for every dial
				mu.Unlock()
				return
			}
			mu.Unlock()
			if err == nil && h.late != nil {
				h.late(ai.ID)
			}
		}()
	}
	var (
		ok             []lpeer.ID
		grace          <-chan time.Time
		done, outcomes int // dials ended; dials ended or failed once
	)
wait:
	for done < n && !(h.early && len(ok) == 0 && outcomes == n) {
		select {
		case r := <-results:
			done++
			if !r.retried {
				outcomes++
			}
			if r.ok {
				ok = append(ok, r.id)
				if grace == nil {
					grace = p.clk.After(reachGrace)
				}
			}
		case <-failed:
			outcomes++
		case <-grace:
			break wait
		}
	}
	mu.Lock()
	returned = true
	for len(results) > 0 { // sent before returned was set
		if r := <-results; r.ok {
			ok = append(ok, r.id)
		}
	}
	mu.Unlock()
	for _, id := range known {
		if id != p.h.ID() && !p.guard.IsBanned(id) {
			ok = append(ok, id)
		}
	}
	return uniqueIDs(ok)
}

// lateSources takes the peers a fetch's connectAll reached after it
// returned: each goes to the content's running fetch, or waits for the
// fetch to start (take).
type lateSources struct {
	lib  *serve.Library
	root chunker.ID
	// reached is done once a peer was added (found cancels it).
	reached context.Context
	found   context.CancelFunc
	mu      sync.Mutex
	ids     []lpeer.ID
}

// newLateSources returns the late peers of the fetch of root.
func newLateSources(lib *serve.Library, root chunker.ID) *lateSources {
	reached, found := context.WithCancel(context.Background())
	return &lateSources{lib: lib, root: root, reached: reached, found: found}
}

// add gives id to the running fetch of the content, or keeps it for take
// (or for started, once the fetch runs).
func (l *lateSources) add(id lpeer.ID) {
	l.found()
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.running(); f != nil {
		f.AddSource(id)
		return
	}
	l.ids = append(l.ids, id)
}

// running returns the content's running fetch, or nil.
func (l *lateSources) running() serve.Fetch {
	if c := l.lib.Lookup(l.root[:]); c != nil {
		return c.RunningFetch()
	}
	return nil
}

// started gives the peers kept since the last take to the fetch that now
// runs (swarm.FetchConfig.Started): those reached between the take and the
// fetch's start.
func (l *lateSources) started() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.running(); f != nil {
		for _, id := range l.ids {
			f.AddSource(id)
		}
		l.ids = nil
	}
}

// take returns srcs with the peers kept so far, sorted and without
// duplicates.
func (l *lateSources) take(srcs []lpeer.ID) []lpeer.ID {
	l.mu.Lock()
	defer l.mu.Unlock()
	srcs = append(srcs, l.ids...)
	l.ids = nil
	return uniqueIDs(srcs)
}

// DialRetryFor is how long a fetch dials a peer it was given again after a
// failed dial (FetchPeerUnreachable), in case it comes up meanwhile.
const DialRetryFor = 15 * time.Second

// connectRetry dials ai, and again after a growing random pause (from about
// 50 ms to 2 s) while dials fail, for up to DialRetryFor. Two hosts that
// dial each other at the same moment from their listening ports (TCP with
// port reuse) can meet in one "simultaneous open" connection in which both run the TLS
// client side and both dials fail; the random pause lets one of them win
// the next time. A host under load refuses handshakes for a while; the
// growing pause waits it out. The swarm's dial backoff for ai is cleared
// before a retry (on a host built on go-libp2p's swarm), or the retry would
// not dial at all. retrying hears of the first failed dial.
func (p *client) connectRetry(ctx context.Context, ai lpeer.AddrInfo, retrying func(error)) error {
	cctx, cancel := clock.WithTimeout(ctx, p.clk, DialRetryFor)
	defer cancel()
	if r, ok := p.h.(interface {
		ReachRelays(context.Context, lpeer.AddrInfo)
	}); ok {
		r.ReachRelays(cctx, ai) // hostkit.Host: its relays over every transport first
	}
	var err error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			pause := min(2*time.Second, time.Duration(50<<min(attempt-1, 6))*time.Millisecond)
			t := p.clk.NewTimer(pause + time.Duration(rand.Int64N(int64(pause))))
			select {
			case <-cctx.Done():
				t.Stop()
				return err
			case <-t.Chan():
			}
			if s, ok := p.h.Network().(interface{ Backoff() *swarm.DialBackoff }); ok {
				s.Backoff().Clear(ai.ID)
			}
		}
		if err = p.h.Connect(cctx, ai); err == nil || cctx.Err() != nil {
			return err
		}
		if attempt == 0 {
			retrying(err)
		}
	}
}

// uniqueIDs sorts ids and drops the duplicates, in place.
func uniqueIDs(ids []lpeer.ID) []lpeer.ID {
	slices.Sort(ids)
	return slices.Compact(ids)
}
