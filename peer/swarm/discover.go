package swarm

import (
	"context"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// finder is a fetch's search for more sources: the peers its sources know
// (wire.ProtoPeers), providers in the DHT and peers on the LAN.
type finder struct{ *fetch }

// discover asks the sources for other peers of the content every second and
// downloads from the new ones too (a swarm).
func (f finder) discover() {
	defer f.wg.Done()
	t := f.p.clk.NewTicker(time.Second)
	defer t.Stop()
	asked := make(map[lpeer.ID]time.Time)
	f.discoverMore() // DHT providers and LAN peers too (below)
	for {
		f.mu.Lock()
		var ids []lpeer.ID
		for id := range f.sources {
			if f.p.clk.Since(asked[id]) > time.Second {
				ids = append(ids, id)
			}
		}
		f.mu.Unlock()
		for _, id := range ids {
			asked[id] = f.p.clk.Now()
			infos, err := f.p.AskPeers(f.ctx, id, f.c.Man.ID())
			if err != nil {
				continue
			}
			for _, ai := range infos {
				if ai.ID == f.p.h.ID() || f.known(ai.ID) {
					continue
				}
				cctx, cancel := clock.WithTimeout(f.ctx, f.p.clk, 5*time.Second)
				err := f.p.h.Connect(cctx, ai)
				cancel()
				if err == nil {
					f.AddSource(ai.ID)
				}
			}
		}
		select {
		case <-f.ctx.Done():
			return
		case <-t.Chan():
		}
	}
}

func (f finder) known(id lpeer.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, a := f.sources[id]
	_, b := f.banned[id]
	return a || b
}

// AskPeers asks id for other peers of root.
func (p *Node) AskPeers(ctx context.Context, id lpeer.ID, root chunker.ID) ([]lpeer.AddrInfo, error) {
	ctx, cancel := clock.WithTimeout(ctx, p.clk, p.cfg.StreamIdle)
	defer cancel()
	cs, err := p.Request(ctx, id, wire.ProtoPeers, root, false)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	if err := cs.Flush(); err != nil {
		return nil, err
	}
	fr, err := cs.Next(64 << 10)
	if err != nil {
		cs.Reset()
		return nil, err
	}
	return wire.DecodePeers(fr)
}

// providerLookupEvery is the pause between DHT lookups of a running fetch.
const providerLookupEvery = 10 * time.Second

// discoverMore starts the fetch's DHT and LAN discovery, if the peer runs
// any: providers of the root (and of the older versions' roots,
// FetchConfig.Older) found in the DHT, and peers found on the LAN by mDNS,
// become sources as they are found.
func (f finder) discoverMore() {
	ds := f.p.discoveryOf()
	if ds == nil {
		return
	}
	root := f.c.Man.ID()
	add := func(ai lpeer.AddrInfo) {
		if ai.ID == f.p.h.ID() || f.known(ai.ID) || f.p.guard.IsBanned(ai.ID) {
			return
		}
		cctx, cancel := clock.WithTimeout(f.ctx, f.p.clk, 10*time.Second)
		defer cancel()
		if err := f.p.ConnectProvider(cctx, ai); err == nil {
			f.p.AwaitDirect(f.ctx, ai.ID)
			f.AddSource(ai.ID)
		}
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		t := f.p.clk.NewTicker(time.Second)
		defer t.Stop()
		var last time.Time
		for {
			for _, id := range ds.LANPeers() {
				add(lpeer.AddrInfo{ID: id})
			}
			if ds.DHT() != nil && f.p.clk.Since(last) > providerLookupEvery {
				last = f.p.clk.Now()
				ctx, cancel := clock.WithTimeout(f.ctx, f.p.clk, providerLookupEvery)
				for _, r := range append([]chunker.ID{root}, f.fc.Older...) {
					ds.Providers(ctx, r, func(ai lpeer.AddrInfo) { go add(ai) })
				}
				cancel()
			}
			select {
			case <-f.ctx.Done():
				return
			case <-t.Chan():
			}
		}
	}()
}

// ConnectProvider connects to a provider found in the DHT or on the LAN. If
// the addresses found fail (a record announced before the provider had a
// relay address), it asks the DHT for the provider's current addresses and
// tries those.
func (p *Node) ConnectProvider(ctx context.Context, ai lpeer.AddrInfo) error {
	err := p.h.Connect(ctx, ai)
	if err == nil {
		return nil
	}
	ds := p.discoveryOf()
	if ds == nil || ds.DHT() == nil || ctx.Err() != nil {
		return err
	}
	found, ferr := ds.DHT().FindPeer(ctx, ai.ID)
	if ferr != nil || len(found.Addrs) == 0 {
		return err
	}
	p.log.Info("provider's addresses from the DHT", "peer", ai.ID, "addrs", found.Addrs)
	return p.h.Connect(ctx, found)
}
