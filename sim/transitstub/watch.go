package transitstub

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// The watch model (SwarmConfig.Watch) times the exchanges of package peer's
// fetches as they are now, where RunSwarm's rounds model the repeated
// reconciliations they made before watches:
//
//   - a fetcher reconciles once with each of its sources (up to Parallel of
//     its neighbours, taken in random order): its filter crosses to the
//     source, the source answers with the blocks the fetcher lacks, and the
//     stream stays open as a watch;
//   - from then on the source tells the fetcher of each block it stores by a
//     have message, a one-way delay later, and the fetcher tells its own
//     watchers of each block it stores;
//   - the fetcher asks each source for up to MaxBlocks blocks at a time
//     (its window), topped up once half have arrived, choosing among those
//     the source offered and no other source is asked for (rarest first by
//     the exact count of its sources offering each, ties at random, or at
//     random);
//   - a source sends the blocks asked in the order asked, each booked on its
//     uplink as the request arrives (with UploadRarest, one at a time, the
//     one fewest of its watchers hold first); a fetcher with nothing queued is
//     answered busy while UploadSlots other fetchers have blocks on the
//     uplink, and asks that source again after a pause that doubles from
//     watchBusyMS to a second;
//   - the seed super-seeds as package peer's superSeed: it offers each
//     watcher at most watchSuperOpen blocks it has not asked for yet, one
//     at a time to the watchers sent the fewest blocks first, each the
//     block it sent least often among those offered to nobody (only never
//     sent ones while some are), deals a new one when a watcher asks for
//     one or says it got one, takes back the offers of a watcher that
//     neither asked for a block nor was sent one for watchSuperHoldMS, and
//     answers nobody busy (with NoSuperSeed it offers every block and
//     answers busy as any source); with SeedLeaves it leaves once every
//     block is held by a fetcher, and what its uplink had not sent is lost;
//   - a source that had nothing to give for watchRotateMS leaves its place
//     to a spare peer: a neighbour not watched yet, or a peer that watches
//     the fetcher.
//
// Not modelled: CPU (the testnet's time scale takes it out of its figures),
// the endgame, and the link time of messages other than filters and blocks
// (haves, wants and answers cross in a one-way delay and take no link
// time). With the testnet's parameters the model lands within about 10 % of
// its median completion (README, "The watch model").

// Constants of the watch model, package peer's values.
const (
	// watchBusyMS is the first pause after a busy answer.
	watchBusyMS = 250
	// watchBusyMaxMS is the longest pause after busy answers.
	watchBusyMaxMS = 1000
	// watchSuperOpen is superOpen: offers a seed's watcher holds unasked.
	watchSuperOpen = 2
	// watchSuperHoldMS is superSeedHold.
	watchSuperHoldMS = 2000
	// watchUploadQueue is uploadQueue: the default of UploadSlots.
	watchUploadQueue = 2
)

// watchLink is a fetcher's watch of one source.
type watchLink struct {
	fetcher, src int
	route        Route   // between them (no delay with NoDelay)
	offered      []bool  // blocks the source offered or announced
	queue        []int32 // offered blocks not yet asked for
	inflight     int
	retryAt      float64 // when the source may be asked again after busy
	backoff      float64
	retrying     bool    // a retry is scheduled
	watching     bool    // the answer arrived: offers and haves come in
	closed       bool    // rotated out: haves and offers go unheard
	useful       float64 // when it was last asked for blocks or sent one
	// The window's state, as package peer's flowWindow: the moving average
	// of the gaps between blocks, the last arrival (or request into an
	// empty pipe) and the gaps seen.
	gap, last float64
	gaps      int
	super     *superWatcher
}

// window is the blocks to keep asked of l's source, as package peer's
// flowWindow sizes it: two round trips' worth at the rate the source
// delivers, plus one, at most max; 2 until a gap is known.
func (l *watchLink) window(max int) int {
	if l.gaps == 0 || l.gap <= 0 {
		return min(max, 2)
	}
	rtt := 2 * l.delay()
	return min(max, 1+int(math.Ceil(2*rtt/l.gap)))
}

// delay is the one-way delay between l's fetcher and source, in ms.
func (l *watchLink) delay() float64 { return float64(l.route.DelayMS) }

// arrivedAt notes a block's arrival at t in the window's gaps.
func (l *watchLink) arrivedAt(t float64) {
	l.useful = t
	g := t - l.last
	l.last = t
	if l.gaps == 0 {
		l.gap = g
	} else {
		l.gap = (3*l.gap + g) / 4
	}
	l.gaps++
}

// superWatcher is a seed's state of one watcher.
type superWatcher struct {
	link  *watchLink
	lacks []bool
	open  map[int32]struct{} // offered and not yet asked for
	got   int                // blocks the seed sent it
	// active is when it last asked for blocks or the seed's uplink will
	// have sent the last block it asked for, whichever is later: its
	// offers are taken back watchSuperHoldMS after (package peer's
	// superWatch.asked and pending).
	active float64
}

// watchNode is the watch model's state of one peer.
type watchNode struct {
	links []*watchLink // its watches of its sources
	// spare holds peers that may take an idle source's place: neighbours
	// not watched, and peers that watch it, with when each was rotated out
	// (0: never tried).
	spare    map[int]float64
	rotating bool         // a rotate event is scheduled
	claimed  []bool       // blocks asked of a source and not yet in
	count    []int32      // sources offering each block
	watchers []*watchLink // watches of it, the fetchers' links
	// queued holds, per fetcher, when its last block asked leaves the
	// uplink (the upload queue's count).
	queued map[int]float64
	// With UploadRarest: the blocks asked and not yet sent, how many per
	// fetcher, and whether the uplink is sending one.
	pending   []upReq
	pendingBy map[int]int
	upBusy    bool
	// Seed only: the sends and current offers of each block, the blocks
	// never sent, and its watchers' states.
	sent, offers []int32
	unsent       int
	supers       []*superWatcher
}

// watchModel runs the watch model on RunSwarm's peers, links and clock.
type watchModel struct {
	sim      *Sim
	peers    []swarmPeer
	nodes    []watchNode
	u        int
	window   int
	slots    int
	rarest   bool
	rng      *rand.Rand
	blockLen int
	sources  int
	maxRecon int // SwarmConfig.MaxReconciliations
	// noDelay, freeControl and rarestUp are SwarmConfig's NoDelay,
	// FreeControl and UploadRarest, superSeed is !NoSuperSeed.
	noDelay, freeControl, rarestUp, superSeed bool
	res                                       *SwarmResult
	// filterBytes is the size of a peer's filter message (by method).
	filterBytes func(a int) (int, error)
	// answerMS is the source's compute for an answer over its set.
	answerMS func(setB, newBlocks int) float64
	complete func(a int)
	route    func(a, b int) Route
	// transfer is RunSwarm's: it moves bytes over the access links and a
	// route, and returns when the sender's uplink has sent them.
	transfer func(x, y int, route Route, b int, now float64, arrived func()) float64
	seedOut  *seedOut
	// leaves is SwarmConfig.SeedLeaves (one seed, the fetchers empty);
	// gone says the seed has left; elsewhere marks the blocks some fetcher
	// holds, notElsewhere counts the others.
	leaves, gone bool
	elsewhere    []bool
	notElsewhere int
	err          error
}

// start sets up every fetcher's sources and schedules its first
// reconciliations within jitterMS.
func (m *watchModel) start(jitterMS float64) {
	m.nodes = make([]watchNode, len(m.peers))
	m.elsewhere, m.notElsewhere = make([]bool, m.u), m.u
	for i := range m.nodes {
		m.nodes[i].queued = make(map[int]float64)
		m.nodes[i].pendingBy = make(map[int]int)
		if m.peers[i].seed {
			m.nodes[i].sent, m.nodes[i].offers, m.nodes[i].unsent = make([]int32, m.u), make([]int32, m.u), m.u
		}
	}
	for a := range m.peers {
		p := &m.peers[a]
		if p.done {
			continue
		}
		nd := &m.nodes[a]
		nd.claimed, nd.count = make([]bool, m.u), make([]int32, m.u)
		nbrs := slices.Clone(p.nbrs)
		m.rng.Shuffle(len(nbrs), func(x, y int) { nbrs[x], nbrs[y] = nbrs[y], nbrs[x] })
		nd.spare = make(map[int]float64)
		for _, s := range nbrs[min(len(nbrs), m.sources):] {
			nd.spare[int(s)] = 0
		}
		nbrs = nbrs[:min(len(nbrs), m.sources)]
		for _, s := range nbrs {
			l := &watchLink{fetcher: a, src: int(s), route: m.linkRoute(a, int(s)), offered: make([]bool, m.u), backoff: watchBusyMS}
			nd.links = append(nd.links, l)
		}
		at := m.rng.Float64() * jitterMS
		for _, l := range nd.links {
			m.sim.At(at, func() { m.reconcile(l) })
		}
		nd.rotating = true
		m.sim.At(at+watchRotateMS, func() { m.rotate(a) })
	}
}

// watchRotateMS is rotateIdle: how long a source may have nothing to give
// before it leaves its place to a spare peer.
const watchRotateMS = 2000

// rotate replaces, while fetcher a is not done, each source that had
// nothing to give it for watchRotateMS by a spare peer (those never tried
// first, then those rotated out longest ago), as package peer's fetches
// do, and looks again every quarter of that.
func (m *watchModel) rotate(a int) {
	nd := &m.nodes[a]
	if m.peers[a].done || m.err != nil || len(nd.spare) == 0 {
		// Nothing to rotate to: reconcile starts it again when a spare
		// comes.
		nd.rotating = false
		return
	}
	nd.rotating = true
	now := m.sim.Now()
	for k, l := range nd.links {
		if len(nd.spare) == 0 {
			break
		}
		if !l.watching || now-l.useful < watchRotateMS || l.inflight > 0 || m.claimable(l) {
			continue
		}
		m.close(l)
		if !m.left(l.src) {
			nd.spare[l.src] = now
		}
		next, first := -1, 0.0
		for p, t := range nd.spare {
			if next < 0 || t < first || (t == first && p < next) {
				next, first = p, t
			}
		}
		delete(nd.spare, next)
		nl := &watchLink{fetcher: a, src: next, route: m.linkRoute(a, next), offered: make([]bool, m.u), backoff: watchBusyMS, useful: now}
		nd.links[k] = nl
		m.reconcile(nl)
	}
	m.sim.After(watchRotateMS/4, func() { m.rotate(a) })
}

// claimable reports whether l's source offered a block its fetcher lacks
// and asks nobody for.
func (m *watchModel) claimable(l *watchLink) bool {
	a := &m.peers[l.fetcher]
	nd := &m.nodes[l.fetcher]
	for _, i := range l.queue {
		if !a.set.Has(int(i)) && !nd.claimed[i] {
			return true
		}
	}
	return false
}

// superSeeds reports whether peer a super-seeds: it is the seed, and
// SwarmConfig.NoSuperSeed is not set.
func (m *watchModel) superSeeds(a int) bool { return m.peers[a].seed && m.superSeed }

// close ends watch l, unless it has ended: its offers leave the rarity
// counts, a seed takes back what it offered on it.
func (m *watchModel) close(l *watchLink) {
	if l.closed {
		return
	}
	l.closed = true
	nd := &m.nodes[l.fetcher]
	for i, ok := range l.offered {
		if ok {
			nd.count[i]--
		}
	}
	l.queue = nil
	if w := l.super; w != nil {
		sn := &m.nodes[l.src]
		for i := range w.open {
			sn.offers[i]--
		}
		w.open = nil
		sn.supers = slices.DeleteFunc(sn.supers, func(x *superWatcher) bool { return x == w })
	}
	sn := &m.nodes[l.src]
	sn.watchers = slices.DeleteFunc(sn.watchers, func(x *watchLink) bool { return x == l })
}

// ctl is how long a message other than a filter or blocks takes over a
// one-way delay of d ms: d, or nothing with FreeControl.
func (m *watchModel) ctl(d float64) float64 {
	if m.freeControl {
		return 0
	}
	return d
}

// linkRoute is the route between peers a and b, without its delay with
// NoDelay.
func (m *watchModel) linkRoute(a, b int) Route {
	r := m.route(a, b)
	if m.noDelay {
		r.DelayMS = 0
	}
	return r
}

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

// watches reports whether fetcher a watches peer s.
func (m *watchModel) watches(a, s int) bool {
	return slices.ContainsFunc(m.nodes[a].links, func(l *watchLink) bool { return l.src == s })
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

// serve answers, at the source, l's request for the blocks batch.
func (m *watchModel) serve(l *watchLink, batch []int32) {
	if m.left(l.src) {
		for _, i := range batch {
			m.lost(l, i)
		}
		return
	}
	sn := &m.nodes[l.src]
	now := m.sim.Now()
	// A fetcher has blocks queued while its last block asked has not left
	// the uplink, or (UploadRarest) some wait to be sent.
	queued := func(f int) bool { return sn.queued[f] > now || sn.pendingBy[f] > 0 }
	if !m.superSeeds(l.src) && !queued(l.fetcher) {
		others := 0
		for f := range sn.queued {
			if f != l.fetcher && queued(f) {
				others++
			}
		}
		for f, n := range sn.pendingBy {
			if _, counted := sn.queued[f]; !counted && f != l.fetcher && n > 0 {
				others++
			}
		}
		if others >= m.slots {
			m.sim.After(m.ctl(l.delay()), func() { m.busy(l, batch) })
			return
		}
	}
	if w := l.super; w != nil {
		w.active = max(w.active, now)
	}
	if m.rarestUp {
		for _, i := range batch {
			sn.pending = append(sn.pending, upReq{l, i})
			sn.pendingBy[l.fetcher]++
		}
		m.kick(l.src)
		return
	}
	for _, i := range batch {
		sn.queued[l.fetcher] = m.sendBlock(l, i)
	}
	if m.superSeeds(l.src) {
		m.pump(l.src, nil)
	}
}

// sendBlock sends block i from l's source to its fetcher, now, and returns
// when the source's uplink has sent it; a seed counts the send.
func (m *watchModel) sendBlock(l *watchLink, i int32) float64 {
	sn := &m.nodes[l.src]
	first := false
	if m.peers[l.src].seed {
		first = sn.sent[i] == 0
		if first {
			sn.unsent--
		}
		sn.sent[i]++
		if w := l.super; w != nil {
			sn.holds(w, i)
			w.got++
		}
	}
	m.res.BlocksSent++
	m.res.Bytes[reconcile.MsgBlocks.String()] += int64(m.blockLen)
	var done float64
	done = m.transfer(l.src, l.fetcher, l.route, m.blockLen, m.sim.Now(), func() {
		if m.left(l.src) && done > m.res.SeedLeftMS {
			// Still on the seed's uplink when it left: lost with its
			// streams.
			m.lost(l, i)
			return
		}
		m.arrived(l, i)
	})
	if w := l.super; w != nil {
		w.active = max(w.active, done)
	}
	if first {
		m.seedOut.sent(done)
	}
	return done
}

// upReq is a block asked for and not yet sent (UploadRarest).
type upReq struct {
	l *watchLink
	i int32
}

// kick sends, with UploadRarest, the next block of source src's uplink
// queue once the uplink is free: of the blocks asked for, the one fewest of
// its watchers hold (the first asked among those).
func (m *watchModel) kick(src int) {
	sn := &m.nodes[src]
	if sn.upBusy || len(sn.pending) == 0 {
		return
	}
	best, bestN := 0, -1
	for k, r := range sn.pending {
		n := 0
		for _, w := range sn.watchers {
			if m.peers[w.fetcher].set.Has(int(r.i)) {
				n++
			}
		}
		if bestN < 0 || n < bestN {
			best, bestN = k, n
		}
	}
	r := sn.pending[best]
	sn.pending = slices.Delete(sn.pending, best, best+1)
	sn.pendingBy[r.l.fetcher]--
	done := m.sendBlock(r.l, r.i)
	sn.queued[r.l.fetcher] = done
	sn.upBusy = true
	m.sim.At(done, func() {
		sn.upBusy = false
		m.kick(src)
	})
	if m.superSeeds(src) {
		m.pump(src, nil)
	}
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

// left reports whether peer s is a seed that has left (SeedLeaves).
func (m *watchModel) left(s int) bool { return m.gone && m.peers[s].seed }

// lost takes back, at l's fetcher, the claim of block i, which l's source
// (a seed that left) will not send, and asks the other sources.
func (m *watchModel) lost(l *watchLink, i int32) {
	l.inflight--
	m.nodes[l.fetcher].claimed[i] = false
	m.askAll(l.fetcher)
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

// askAll asks every source of fetcher a for what it may.
func (m *watchModel) askAll(a int) {
	for _, l := range m.nodes[a].links {
		m.ask(l)
	}
}

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

// allDone reports whether every peer holds the file.
func (m *watchModel) allDone() bool {
	for i := range m.peers {
		if !m.peers[i].done {
			return false
		}
	}
	return true
}
