package peer

import (
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// connectAll dials the given peers in parallel and returns those reached,
// with the ids of known (already connected, or in the peerstore) that are
// not banned, sorted and without duplicates. events, if not nil, hears of
// each peer whose first dial failed (FetchPeerUnreachable), one call at a
// time.
func (p *client) connectAll(ctx context.Context, infos []lpeer.AddrInfo, extra []ma.Multiaddr, known []lpeer.ID, events func(FetchEvent)) []lpeer.ID {
	all := append([]lpeer.AddrInfo(nil), infos...)
	for _, a := range extra {
		ai, err := lpeer.AddrInfoFromP2pAddr(a)
		if err != nil {
			p.log.Warn("skip peer address", "addr", a, "err", err)
			continue
		}
		all = append(all, *ai)
	}
	var mu sync.Mutex
	var ok []lpeer.ID
	var wg sync.WaitGroup
	for _, ai := range all {
		if ai.ID == p.h.ID() || p.guard.IsBanned(ai.ID) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			retrying := func(err error) {
				if events != nil {
					mu.Lock()
					defer mu.Unlock()
					events(FetchEvent{Kind: FetchPeerUnreachable, Peer: ai.ID, Block: -1, Err: err})
				}
			}
			if err := p.connectRetry(ctx, ai, retrying); err != nil {
				p.log.Info("peer unreachable", "peer", ai.ID, "err", err)
				return
			}
			p.nd.AwaitDirect(ctx, ai.ID) // give hole punching a chance first
			mu.Lock()
			ok = append(ok, ai.ID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, id := range known {
		if id != p.h.ID() && !p.guard.IsBanned(id) {
			ok = append(ok, id)
		}
	}
	sort.Slice(ok, func(i, j int) bool { return ok[i] < ok[j] })
	return dedup(ok)
}

// connectRetry dials ai, and again after a growing random pause (from about
// 50 ms to 2 s) while dials fail, for up to 15 s. Two hosts that dial each
// other at the same moment from their listening ports (TCP with port reuse)
// can meet in one "simultaneous open" connection in which both run the TLS
// client side and both dials fail; the random pause lets one of them win
// the next time. A host under load refuses handshakes for a while; the
// growing pause waits it out. The swarm's dial backoff for ai is cleared
// before a retry (on a host built on go-libp2p's swarm), or the retry would
// not dial at all. retrying hears of the first failed dial.
func (p *client) connectRetry(ctx context.Context, ai lpeer.AddrInfo, retrying func(error)) error {
	cctx, cancel := clock.WithTimeout(ctx, p.clk, 15*time.Second)
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

func dedup(ids []lpeer.ID) []lpeer.ID {
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}
