package transitstub

import (
	"cmp"
	"slices"
)

// The watch model's super-seeding seed (package peer's superSeed): offers
// dealt out to its watchers a few at a time, the least sent blocks first,
// and taken back from watchers that stay idle.

// superSeeds reports whether peer a super-seeds: it is the seed, and
// SwarmConfig.NoSuperSeed is not set.
func (m *watchModel) superSeeds(a int) bool { return m.peers[a].seed && m.superSeed }

// gotElsewhere tells seed s that its watcher w holds block i.
func (m *watchModel) gotElsewhere(s int, w *superWatcher, i int32) {
	m.nodes[s].holds(w, i)
	m.pump(s, nil)
}

// pump takes back seed s's offers not asked for within watchSuperHoldMS
// and deals offers out to its watchers with room, one at a time to those
// sent the fewest blocks first (package peer's superSeed.pumpLocked), until
// none can take one. It sends each watcher its new offers, but those of
// first, a watcher starting its watch, which it returns (to answer with).
func (m *watchModel) pump(s int, first *superWatcher) []int32 {
	sn := &m.nodes[s]
	sn.dropStale(m.sim.Now())
	var order []*superWatcher
	for _, w := range sn.supers {
		if len(w.open) < watchSuperOpen && !m.peers[w.link.fetcher].done {
			order = append(order, w)
		}
	}
	m.rng.Shuffle(len(order), func(x, y int) { order[x], order[y] = order[y], order[x] })
	slices.SortStableFunc(order, func(a, b *superWatcher) int { return cmp.Compare(a.got, b.got) })
	deals := make([][]int32, len(order))
	for dealt := true; dealt; {
		dealt = false
		for k, w := range order {
			if len(w.open) >= watchSuperOpen {
				continue
			}
			i := m.pickFor(sn, w)
			if i < 0 {
				continue
			}
			w.open[i] = struct{}{}
			sn.offers[i]++
			deals[k] = append(deals[k], i)
			dealt = true
		}
	}
	var firsts []int32
	for k, w := range order {
		switch {
		case w == first:
			firsts = deals[k]
		case len(deals[k]) > 0:
			l, deal := w.link, deals[k]
			m.sim.After(m.ctl(l.delay()), func() { m.have(l, deal) })
		}
	}
	// Offers not asked for expire: look again then.
	m.sim.After(watchSuperHoldMS, func() {
		if !m.allDone() {
			m.expire(s)
		}
	})
	return firsts
}

// pickFor returns the block seed node sn offers watcher w next, or -1:
// among those w lacks, one offered to nobody and sent least often (only a
// never sent one while some are), ties at random (package peer's
// superSeed.pickFor).
func (m *watchModel) pickFor(sn *watchNode, w *superWatcher) int32 {
	best, bestLoad, ties := int32(-1), int32(0), 0
	for i, lacks := range w.lacks {
		if !lacks || sn.offers[i] > 0 {
			continue
		}
		load := sn.sent[i]
		if sn.unsent > 0 && load > 0 {
			continue
		}
		switch {
		case best < 0 || load < bestLoad:
			best, bestLoad, ties = int32(i), load, 1
		case load == bestLoad:
			ties++
			if m.rng.IntN(ties) == 0 {
				best = int32(i)
			}
		}
	}
	return best
}

// expire takes back seed s's stale offers and deals again, if any expired.
func (m *watchModel) expire(s int) {
	if m.nodes[s].dropStale(m.sim.Now()) {
		m.pump(s, nil)
	}
}

// holds notes that the seed's watcher w holds block i (sent it, or got it
// elsewhere): it lacks it no more, and an offer of it is taken back.
func (sn *watchNode) holds(w *superWatcher, i int32) {
	w.lacks[i] = false
	if _, ok := w.open[i]; ok {
		delete(w.open, i)
		sn.offers[i]--
	}
}

// dropStale takes back the offers of the seed's watchers that were not
// active (asked for a block, or were sent one they asked for) within
// watchSuperHoldMS of now and reports whether there were any.
func (sn *watchNode) dropStale(now float64) bool {
	dropped := false
	for _, w := range sn.supers {
		if now-w.active < watchSuperHoldMS || sn.pendingBy[w.link.fetcher] > 0 {
			continue
		}
		for i := range w.open {
			delete(w.open, i)
			sn.offers[i]--
			dropped = true
		}
	}
	return dropped
}
