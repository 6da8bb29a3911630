package testnet

import (
	"cmp"
	"slices"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// placed links fetcher a to b, its parent in the seed's joined trees
// (Config.Join), when they are not linked yet: the seed places fetchers
// that need not be neighbours, and reports each placement (peer's
// EventPlaced) before it tells them. A new pair gets its latency (place)
// and is cut with its nodes (churn); a pair whose NATs fail their punch
// is left unlinked (the child pulls the stripe, as when its parent left).
func (w *swarm) placed(a, b int) {
	if a == b || a < 0 || b < 0 {
		return
	}
	k := [2]int{min(a, b), max(a, b)}
	w.linkMu.Lock()
	defer w.linkMu.Unlock()
	if w.pairIndex == nil {
		w.pairIndex = make(map[[2]int]int, len(w.ov.pairs))
		for j, p := range w.ov.pairs {
			w.pairIndex[[2]int{p.a, p.b}] = j
		}
	}
	j, ok := w.pairIndex[k]
	if !ok {
		if w.direct != nil && !w.direct(a, b) {
			return
		}
		p := pair{a: k[0], b: k[1], latency: w.latency(k[0], k[1])}
		j = len(w.ov.pairs)
		w.ov.pairs, w.linked = append(w.ov.pairs, p), append(w.linked, false)
		w.pairsOf[a], w.pairsOf[b] = append(w.pairsOf[a], j), append(w.pairsOf[b], j)
		w.pairIndex[k] = j
		if w.shape != nil {
			w.shape.addPair(p)
		}
	}
	if w.linked[j] || !w.present[a] || !w.present[b] {
		return
	}
	// Allowed, not connected: this runs under the seed's lock of its
	// trees, and the child's first stream dials.
	if err := w.fab.allow(w.ov.pairs[j], w.cfg.Bandwidth); err == nil {
		w.linked[j] = true
	}
}

// placedPair returns the nodes of a placement the seed reports (peer's
// EventPlaced): the child and its parent.
func placedPair(ev peer.ServeEvent, byID map[lpeer.ID]int) (child, parent int, ok bool) {
	if ev.Kind != peer.EventPlaced {
		return 0, 0, false
	}
	a, okA := byID[ev.Peer]
	b, okB := byID[ev.Parent]
	return a, b, okA && okB
}

// pairLatency returns the one-way latency of a pair of nodes: the
// transit-stub route's between them, or none (cfg.Latency).
func pairLatency(cfg Config, net *ts.Network) func(a, b int) time.Duration {
	return func(a, b int) time.Duration {
		if cfg.Latency != LatencyTransitStub {
			return 0
		}
		return time.Duration(net.Overlay.Route(a, b).DelayMS) * time.Millisecond
	}
}

// seedOptions are the seed's options: its chunking, super-seeding, the
// Byers baseline's coded blocks, joined trees.
func seedOptions(cfg Config, file *content) []peer.SeedOption {
	opts := []peer.SeedOption{file.seedOption()}
	if cfg.SuperSeed && cfg.Method != reconcile.Byers {
		opts = append(opts, peer.WithSuperSeeding())
	}
	if cfg.Method == reconcile.Byers {
		opts = append(opts, peer.WithByers(cfg.Byers))
	}
	if cfg.Join > 0 {
		opts = append(opts, peer.WithTrees(cfg.Join))
	}
	return opts
}

// joinOverlay links the seed with every node (with cfg.Join only), as a ticket names it to a
// fetch: with joined trees (Config.Join) each fetcher asks it to be
// placed (peer.WithJoinAt). The seed stays out of the nodes' neighbour
// lists, their sources: as every fetch's source, its 199 watches of 16
// KiB blocks took the CPU the 200-peer testnet runs on.
func joinOverlay(cfg Config, ov *overlay, seed int, latency func(a, b int) time.Duration) {
	if cfg.Join <= 0 {
		return
	}
	have := make(map[[2]int]bool, len(ov.pairs))
	for _, p := range ov.pairs {
		have[[2]int{p.a, p.b}] = true
	}
	for i := range ov.out {
		if i == seed {
			continue
		}
		if k := [2]int{min(i, seed), max(i, seed)}; !have[k] {
			ov.pairs = append(ov.pairs, pair{a: k[0], b: k[1], latency: latency(k[0], k[1])})
		}
	}
	slices.SortFunc(ov.pairs, func(x, y pair) int { return cmp.Or(x.a-y.a, x.b-y.b) })
}

// joinAt returns the peers the fetches ask to place them: the seed, with
// joined trees (cfg.Join), none otherwise.
func joinAt(cfg Config, fab fabric, seed int) []lpeer.ID {
	if cfg.Join <= 0 || seed < 0 {
		return nil
	}
	return []lpeer.ID{fab.host(seed).ID()}
}
