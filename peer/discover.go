package peer

import (
	"context"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// finder is a fetch's search for more sources: the peers its sources know
// (ProtoPeers), providers in the DHT and peers on the LAN.
type finder struct{ *fetch }

// discover asks the sources for other peers of the content every second and
// downloads from the new ones too (a swarm).
func (f finder) discover() {
	defer f.wg.Done()
	t := f.p.clk.NewTicker(time.Second)
	defer t.Stop()
	asked := make(map[lpeer.ID]time.Time)
	f.discoverMore() // peer/find.go: DHT providers and LAN peers too
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
			infos, err := f.p.cl.askPeers(f.ctx, id, f.c.Man.ID())
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

// askPeers asks id for other peers of root.
func (p *client) askPeers(ctx context.Context, id lpeer.ID, root chunker.ID) ([]lpeer.AddrInfo, error) {
	ctx, cancel := clock.WithTimeout(ctx, p.clk, p.cfg.StreamIdle)
	defer cancel()
	cs, err := p.request(ctx, id, ProtoPeers, root, false)
	if err != nil {
		return nil, err
	}
	defer cs.close()
	if err := cs.flush(); err != nil {
		return nil, err
	}
	fr, err := cs.next(64 << 10)
	if err != nil {
		cs.reset()
		return nil, err
	}
	return wire.DecodePeers(fr)
}
