package transitstub

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
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
//
// This file holds the model's state, its start and the rotation of idle
// sources; watch_fetch.go the fetchers' side, watch_serve.go the
// sources' uplinks, watch_superseed.go the seed's offers.

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
	route        topology.Route // between them (no delay with NoDelay)
	offered      []bool         // blocks the source offered or announced
	queue        []int32        // offered blocks not yet asked for
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
	route    func(a, b int) topology.Route
	// transfer is RunSwarm's: it moves bytes over the access links and a
	// route, and returns when the sender's uplink has sent them.
	transfer func(x, y int, route topology.Route, b int, now float64, arrived func()) float64
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
func (m *watchModel) linkRoute(a, b int) topology.Route {
	r := m.route(a, b)
	if m.noDelay {
		r.DelayMS = 0
	}
	return r
}

// watches reports whether fetcher a watches peer s.
func (m *watchModel) watches(a, s int) bool {
	return slices.ContainsFunc(m.nodes[a].links, func(l *watchLink) bool { return l.src == s })
}

// left reports whether peer s is a seed that has left (SeedLeaves).
func (m *watchModel) left(s int) bool { return m.gone && m.peers[s].seed }

// allDone reports whether every peer holds the file.
func (m *watchModel) allDone() bool {
	for i := range m.peers {
		if !m.peers[i].done {
			return false
		}
	}
	return true
}
