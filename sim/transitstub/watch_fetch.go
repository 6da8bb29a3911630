package transitstub

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// The watch model's fetcher side: the first reconciliation with a source,
// the haves it hears, the requests it sends within its window and what
// becomes of them (blocks in, busy answers, blocks lost with a seed that
// left).

// reconcile runs the first reconciliation of l's fetcher with its source:
// the filter crosses, the source answers and keeps the watch.
func (m *watchModel) reconcile(l *watchLink) {
	if m.res.Reconciliations >= m.maxRecon {
		m.err = fmt.Errorf("transitstub: swarm did not converge within %d reconciliations", m.maxRecon)
		return
	}
	fb, err := m.filterBytes(l.fetcher)
	if err != nil {
		m.err = err
		return
	}
	m.res.Bytes[reconcile.MsgFilter.String()] += int64(fb)
	m.res.Reconciliations++
	m.peers[l.fetcher].rounds++
	m.transfer(l.fetcher, l.src, l.route, fb, m.sim.Now(), func() {
		s, a := &m.peers[l.src], &m.peers[l.fetcher]
		if m.left(l.src) {
			// No answer: the watch is dead, and rotate gives its place
			// to a spare.
			l.watching, l.closed = true, true
			return
		}
		var offer []int32
		for _, i := range s.set.Indices() {
			if !a.set.Has(i) {
				offer = append(offer, int32(i))
			}
		}
		comp := m.answerMS(s.set.Len(), len(offer))
		sn := &m.nodes[l.src]
		if m.superSeeds(l.src) {
			w := &superWatcher{link: l, lacks: make([]bool, m.u), open: make(map[int32]struct{}), active: m.sim.Now()}
			for _, i := range offer {
				w.lacks[i] = true
			}
			sn.supers = append(sn.supers, w)
			l.super = w
			// The answer carries the first offers (package peer's
			// superSeed.watch); the others are dealt out by pump.
			offer = m.pump(l.src, w)
		}
		sn.watchers = append(sn.watchers, l)
		if !s.done && !s.seed && sn.spare != nil && !m.watches(l.src, l.fetcher) {
			if _, ok := sn.spare[l.fetcher]; !ok {
				sn.spare[l.fetcher] = 0
			}
			if !sn.rotating {
				sn.rotating = true
				m.sim.After(watchRotateMS/4, func() { m.rotate(l.src) })
			}
		}
		m.sim.After(comp+m.ctl(l.delay()), func() {
			if l.closed {
				return
			}
			l.useful = m.sim.Now()
			l.watching = true
			m.have(l, offer)
		})
	})
}

// have tells l's fetcher, now, that its source holds the blocks idx.
func (m *watchModel) have(l *watchLink, idx []int32) {
	a := &m.peers[l.fetcher]
	nd := &m.nodes[l.fetcher]
	if a.done || l.closed {
		return
	}
	for _, i := range idx {
		if a.set.Has(int(i)) || l.offered[i] {
			continue
		}
		l.offered[i] = true
		l.queue = append(l.queue, i)
		nd.count[i]++
	}
	m.ask(l)
}

// ask sends l's source a request for the blocks it offered that nobody is
// asked for, up to the window, once half the window has come in.
func (m *watchModel) ask(l *watchLink) {
	a := &m.peers[l.fetcher]
	nd := &m.nodes[l.fetcher]
	now := m.sim.Now()
	window := l.window(m.window)
	slack := (window + 3) / 4
	if window >= 8 {
		slack = window / 2
	}
	if a.done || l.closed || !l.watching || l.inflight > window-slack || m.err != nil {
		return
	}
	if now < l.retryAt {
		if !l.retrying {
			l.retrying = true
			m.sim.At(l.retryAt, func() { l.retrying = false; m.ask(l) })
		}
		return
	}
	l.queue = slices.DeleteFunc(l.queue, func(i int32) bool { return a.set.Has(int(i)) })
	if len(l.queue) == 0 {
		return
	}
	m.rng.Shuffle(len(l.queue), func(x, y int) { l.queue[x], l.queue[y] = l.queue[y], l.queue[x] })
	if m.rarest {
		slices.SortStableFunc(l.queue, func(x, y int32) int { return cmp.Compare(nd.count[x], nd.count[y]) })
	}
	var batch []int32
	keep := l.queue[:0]
	for _, i := range l.queue {
		if len(batch) < window-l.inflight && !nd.claimed[i] {
			nd.claimed[i] = true
			batch = append(batch, i)
		} else {
			keep = append(keep, i)
		}
	}
	l.queue = keep
	if len(batch) == 0 {
		return
	}
	if l.inflight == 0 {
		l.last = now
	}
	l.inflight += len(batch)
	l.useful = now
	m.sim.After(m.ctl(l.delay()), func() { m.serve(l, batch) })
}

// busy takes back, at the fetcher, the claims of a request answered busy.
func (m *watchModel) busy(l *watchLink, batch []int32) {
	nd := &m.nodes[l.fetcher]
	l.inflight -= len(batch)
	for _, i := range batch {
		nd.claimed[i] = false
		l.queue = append(l.queue, i)
	}
	l.retryAt = m.sim.Now() + l.backoff
	l.backoff = min(2*l.backoff, watchBusyMaxMS)
	m.askAll(l.fetcher)
}

// arrived stores block i at l's fetcher.
func (m *watchModel) arrived(l *watchLink, i int32) {
	a := &m.peers[l.fetcher]
	nd := &m.nodes[l.fetcher]
	l.inflight--
	l.backoff = watchBusyMS
	l.arrivedAt(m.sim.Now())
	nd.claimed[i] = false
	if !a.set.Add(int(i)) {
		m.res.RedundantBlocks++
		m.ask(l)
		return
	}
	if !m.elsewhere[i] {
		m.elsewhere[i] = true
		m.notElsewhere--
		m.maybeLeave()
	}
	for _, w := range nd.watchers {
		m.sim.After(m.ctl(w.delay()), func() { m.have(w, []int32{i}) })
	}
	for _, src := range nd.links {
		if m.peers[src.src].seed && src.super != nil {
			m.sim.After(m.ctl(src.delay()), func() { m.gotElsewhere(src.src, src.super, i) })
		}
	}
	if a.set.Len() == m.u {
		m.complete(l.fetcher)
		return
	}
	m.askAll(l.fetcher)
}

// lost takes back, at l's fetcher, the claim of block i, which l's source
// (a seed that left) will not send, and asks the other sources.
func (m *watchModel) lost(l *watchLink, i int32) {
	l.inflight--
	m.nodes[l.fetcher].claimed[i] = false
	m.askAll(l.fetcher)
}

// askAll asks every source of fetcher a for what it may.
func (m *watchModel) askAll(a int) {
	for _, l := range m.nodes[a].links {
		m.ask(l)
	}
}

// maybeLeave makes the seed leave (SeedLeaves) once each block is held by
// a fetcher (so the seed has sent every block), as testnet's seed: its
// watches end, it is no fetcher's spare any more, the blocks its uplink has
// not sent yet are lost (sendBlock) and requests that reach it after go
// unanswered (serve).
func (m *watchModel) maybeLeave() {
	if !m.leaves || m.gone || m.notElsewhere > 0 {
		return
	}
	s := slices.IndexFunc(m.peers, func(p swarmPeer) bool { return p.seed })
	m.gone = true
	m.res.SeedLeftMS = m.sim.Now()
	for _, l := range slices.Clone(m.nodes[s].watchers) {
		m.close(l)
	}
	for a := range m.nodes {
		delete(m.nodes[a].spare, s)
	}
}
