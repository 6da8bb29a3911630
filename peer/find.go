package peer

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"

	"github.com/reconcile-p2p/reconcile/peer/hostkit"
	"github.com/reconcile-p2p/reconcile/peer/swarm"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// FindProviders looks for peers that serve root: providers in the DHT and
// peers of this tool on the LAN (WithDiscovery). It returns those found
// within wait, or as soon as one is found and a further second has passed.
// It fails with ErrNoPeers if none is found.
func (p *Service) FindProviders(ctx context.Context, root chunker.ID, wait time.Duration) ([]AddrInfo, error) {
	return p.findProviders(ctx, root, wait, nil)
}

// Lookup is the progress of a search for a content's providers
// (WithLookupProgress). It is hostkit.Lookup.
type Lookup = hostkit.Lookup

// WithLookupProgress sets a callback for the search for providers of
// FetchRoot, called about every 200 ms from its start until the fetch
// starts. Default: none.
func WithLookupProgress(fn func(Lookup)) FetchOption {
	return func(c *swarm.FetchConfig) error { c.Lookup = fn; return nil }
}

func (p *Service) findProviders(ctx context.Context, root chunker.ID, wait time.Duration, progress func(Lookup)) ([]AddrInfo, error) {
	ds := p.discoveryOf()
	if ds == nil {
		return nil, fmt.Errorf("%w: no DHT and no mDNS to look up %s", ErrNoPeers, root)
	}
	ctx, cancel := clock.WithTimeout(ctx, p.clk, wait)
	defer cancel()
	start := p.clk.Now()
	var asked, nfound atomic.Int64
	report := func() {
		if progress == nil {
			return
		}
		l := Lookup{Asked: int(asked.Load()), Found: int(nfound.Load()), Seconds: p.clk.Since(start).Seconds()}
		if d := ds.DHT(); d != nil {
			l.Known = d.RoutingTable().Size()
		}
		progress(l)
	}
	found := make(chan AddrInfo, 16)
	go func() {
		defer close(found)
		tick := p.clk.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			report()
			if ds.DHT() != nil {
				lctx, lcancel := clock.WithTimeout(ctx, p.clk, 3*time.Second)
				lctx, events := routing.RegisterForQueryEvents(lctx)
				go func() {
					for ev := range events {
						if ev.Type == routing.SendingQuery {
							asked.Add(1)
						}
					}
				}()
				ds.Providers(lctx, root, func(ai AddrInfo) {
					select {
					case found <- ai:
					case <-ctx.Done():
					}
				})
				lcancel()
			}
			for _, id := range ds.LANPeers() {
				select {
				case found <- AddrInfo{ID: id, Addrs: p.h.Peerstore().Addrs(id)}:
				case <-ctx.Done():
				}
			}
			select {
			case <-ctx.Done():
			case <-tick.Chan():
			}
		}
	}()
	seen := make(map[lpeer.ID]bool)
	var out []AddrInfo
	var grace <-chan time.Time
	for {
		select {
		case ai, ok := <-found:
			if !ok {
				if len(out) == 0 {
					return nil, fmt.Errorf("%w: no provider of %s found in %v", ErrNoPeers, root, wait)
				}
				return out, nil
			}
			if seen[ai.ID] || ai.ID == p.h.ID() {
				continue
			}
			seen[ai.ID] = true
			out = append(out, ai)
			nfound.Store(int64(len(out)))
			if grace == nil {
				grace = p.clk.After(500 * time.Millisecond)
			}
		case <-grace:
			cancel()
			for range found {
			}
			return out, nil
		}
	}
}

// FetchRoot fetches the content with the given root id alone, as Fetch
// does, from the providers FindProviders finds (waiting up to a minute for
// the first). It starts as soon as one of them is connected; the others,
// and providers found later, join as the fetch runs.
func (p *Service) FetchRoot(ctx context.Context, root chunker.ID, out string, opts ...FetchOption) (*Summary, error) {
	fc, err := newFetchConfig(opts)
	if err != nil {
		return nil, err
	}
	infos, err := p.findProviders(ctx, root, time.Minute, fc.Lookup)
	if err != nil {
		return nil, err
	}
	connected := make(chan AddrInfo, len(infos))
	cctx, cancel := clock.WithTimeout(ctx, p.clk, 15*time.Second)
	defer cancel()
	for _, ai := range infos {
		go func() {
			if err := p.nd.ConnectProvider(cctx, ai); err != nil {
				p.log.Info("provider unreachable", "peer", ai.ID, "err", err)
				ai.ID = ""
			}
			connected <- ai
		}()
	}
	var reached []AddrInfo
	var grace <-chan time.Time
	for range infos {
		var ai AddrInfo
		select {
		case ai = <-connected:
		case <-grace:
		}
		if grace != nil && ai.ID == "" && len(reached) > 0 {
			break
		}
		if ai.ID != "" {
			reached = append(reached, ai)
			if grace == nil {
				grace = p.clk.After(500 * time.Millisecond)
			}
		}
	}
	if len(reached) == 0 {
		reached = infos // let Fetch report why
	}
	return p.fetch(ctx, Ticket{Root: root, Peers: reached}, out, false, opts)
}

// fallbackLookup is how long a fetch that reached none of its ticket's
// peers looks for other providers of the content. When its DHT knows no
// peer, only the LAN is looked at, for as long as the ticket's peers are
// dialled again (DialRetryFor).
const fallbackLookup = 30 * time.Second

// providerSources looks up providers of root (DHT, LAN) for up to
// fallbackLookup, as FetchRoot does, and returns those it connects to. A
// peer late takes (one of the ticket's, reached at last) ends the lookup.
func (p *Service) providerSources(ctx context.Context, root chunker.ID, fc swarm.FetchConfig, late *lateSources) []lpeer.ID {
	wait := fallbackLookup
	if d := p.DHT(); d == nil || d.RoutingTable().Size() == 0 {
		wait = DialRetryFor
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(late.reached, cancel)
	defer stop()
	infos, err := p.findProviders(ctx, root, wait, fc.Lookup)
	if err != nil {
		p.log.Info("no other provider", "root", root, "err", err)
		return nil
	}
	return p.cl.connectAll(ctx, infos, nil, nil, dialHooks{events: fc.Events, late: late.add})
}
