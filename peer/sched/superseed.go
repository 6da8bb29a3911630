package sched

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// SuperSeed is the offer policy of a seed that spreads its upload over the
// file (BitTorrent's super-seeding, WithSuperSeeding): it offers each fetcher
// only a few blocks at a time, those it has sent least often, so that while
// its upload is the swarm's scarcest resource (one seed, many fetchers) it
// sends every block once before any block twice and the fetchers trade the
// rest among themselves.
//
// A fetcher that watches the seed (Hello.Watch) is a watcher: the seed deals
// out its blocks among the watchers (pump), each holding at most superOpen
// offers it has not asked for yet, the watchers that were sent the fewest
// blocks first and a block offered to one watcher not offered to another,
// and offers a watcher the next block as soon as it asks for one (so a
// watcher asks for as many as its window to the seed allows, and the seed's
// upload stays busy while watchers ask) or tells the seed it got one
// elsewhere (a have frame). A watcher that neither asks for a block nor is
// sent one for superSeedHold loses its offers to the others. So the seed sends every
// block once before any twice, and no watcher is handed several of the
// rarest blocks at once while others have none. A fetcher that does not
// watch gets superSeedOffer blocks per reconciliation (trim).
type SuperSeed[K comparable] struct {
	mu      sync.Mutex
	sent    []int32     // times each block was sent
	asked   []int32     // requests of each block being served
	offered []time.Time // when each block was last offered by trim
	offers  []int32     // watchers each block is offered to now
	unsent  int         // blocks never sent
	rng     *rand.Rand
	now     func() time.Time
	scratch []superSeedRank
	// Hold is how long an offer is held (SuperSeedHold), on the clock now reads.
	Hold time.Duration

	watchers map[K]*SuperWatch[K]
}

// SuperWatch is the state of one watcher of a super-seed (under
// superSeed.mu).
type SuperWatch[K comparable] struct {
	id K
	// lacks holds the blocks it lacks as far as the seed knows: those its
	// reconciliation found (no false negatives), less those it was sent or
	// said it got.
	lacks []bool
	// open holds the blocks offered to it and not yet asked for, got or
	// expired, with when they were offered.
	open map[int]time.Time
	// got counts the blocks sent to it; pending those it asked for that
	// are not yet sent (or refused).
	got, pending int
	// asked is when it last asked for a block or was sent one it asked
	// for (or began to watch).
	asked time.Time
	// gained is when it last gained a block, from the seed or elsewhere
	// (or began to watch): one that lacks only blocks sent before is
	// offered one of them again only once it gained nothing for Hold.
	gained time.Time
	// out holds offers made and not yet written to its stream (take).
	out []int
	// Wake has a value when out has offers.
	Wake chan struct{}
}

// SuperSeedOffer is how many blocks one answer of a super-seed offers a
// fetcher that does not watch it.
const SuperSeedOffer = 4

// SuperOpen is how many offers a watcher of a super-seed holds that it has
// not asked for yet; SuperOpenAlone how many a lone watcher comes to hold.
// A watcher asks only for blocks it was offered, so its open offers bound
// the blocks it has in flight from the seed: a lone fetcher is served at
// its window's pace, as by a seed that does not super-seed, only with more
// (a lone fetch of 256 MiB on loopback took 1.35 times as long with
// SuperOpen). A lone watcher's offers grow with the blocks it was sent
// (SuperOpen more than those, up to SuperOpenAlone), as a swarm's first
// fetchers come within moments of each other; once a second watcher comes,
// the first's offers beyond SuperOpen go back. (Sharing SuperOpenAlone
// among a few watchers from the start made the 60-peer testnet 1.5 times
// slower: the first watchers held many offers each over their slow links
// while the others waited.)
const (
	SuperOpen      = 2
	SuperOpenAlone = 32
)

// openCap is how many open offers watcher w holds while n watch.
func openCap[K comparable](w *SuperWatch[K], n int) int {
	if n <= 1 {
		return min(SuperOpenAlone, SuperOpen+w.got)
	}
	return SuperOpen
}

// SuperSeedHold is how long a block offered to one peer is not offered to
// another while blocks sent as often are left: about a wide-area round trip
// and a block's queueing, the time the peer takes to ask for it.
const SuperSeedHold = 2 * time.Second

type superSeedRank struct {
	i      uint32
	load   int32 // sends, requests being served and a recent offer
	recent bool
	tie    uint32
}

// NewSuperSeed returns the policy of a seed of blocks blocks whose offers
// are held for hold (SuperSeedHold, the default); now is
// its clock.
func NewSuperSeed[K comparable](blocks int, hold time.Duration, now func() time.Time) *SuperSeed[K] {
	return &SuperSeed[K]{Hold: hold, sent: make([]int32, blocks), asked: make([]int32, blocks), offered: make([]time.Time, blocks),
		offers: make([]int32, blocks), unsent: blocks, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), now: now,
		watchers: make(map[K]*SuperWatch[K])}
}

// Trim returns the blocks to offer out of lacking (the blocks a fetcher that
// does not watch lacks, increasing): at most superSeedOffer of them, the
// least loaded first (sends, requests being served and offers each count
// one), ties in random order, and only unloaded ones while some block was
// never sent; increasing, as offers are. It notes them offered.
func (ss *SuperSeed[K]) Trim(lacking []uint32) []uint32 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	rank := ss.scratch[:0]
	for _, i := range lacking {
		if int(i) >= len(ss.sent) {
			continue
		}
		t := ss.offered[i]
		recent := !t.IsZero() && now.Sub(t) < ss.Hold
		load := ss.sent[i] + ss.asked[i] + ss.offers[i]
		if recent {
			load++
		}
		if ss.unsent > 0 && load > 0 {
			continue // first copies first
		}
		rank = append(rank, superSeedRank{i: i, load: load, recent: recent, tie: ss.rng.Uint32()})
	}
	slices.SortFunc(rank, func(a, b superSeedRank) int {
		return cmp.Or(cmp.Compare(a.load, b.load), cmp.Compare(b2i(a.recent), b2i(b.recent)), cmp.Compare(a.tie, b.tie))
	})
	out := make([]uint32, 0, SuperSeedOffer)
	for _, r := range rank[:min(len(rank), SuperSeedOffer)] {
		out = append(out, r.i)
		ss.offered[r.i] = now
	}
	ss.scratch = rank[:0]
	slices.Sort(out)
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Watch makes id a watcher that lacks the blocks found (in place of any
// earlier Watch of id), deals out offers and returns it with the offers it
// got (increasing), to answer its reconciliation with.
func (ss *SuperSeed[K]) Watch(id K, found []uint32) (*SuperWatch[K], []uint32) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if old := ss.watchers[id]; old != nil {
		ss.unwatchLocked(old)
	}
	w := &SuperWatch[K]{id: id, lacks: make([]bool, len(ss.sent)), open: make(map[int]time.Time), Wake: make(chan struct{}, 1), asked: ss.now(), gained: ss.now()}
	for _, i := range found {
		if int(i) < len(w.lacks) {
			w.lacks[i] = true
		}
	}
	ss.watchers[id] = w
	ss.pumpLocked()
	first := make([]uint32, 0, len(w.out))
	for _, i := range w.out {
		first = append(first, uint32(i))
	}
	w.out = w.out[:0]
	slices.Sort(first)
	return w, first
}

// Unwatch ends w's watch: its open offers go back to the others.
func (ss *SuperSeed[K]) Unwatch(w *SuperWatch[K]) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.watchers[w.id] == w {
		ss.unwatchLocked(w)
		ss.pumpLocked()
	}
}

func (ss *SuperSeed[K]) unwatchLocked(w *SuperWatch[K]) {
	for i := range w.open {
		ss.offers[i]--
	}
	clear(w.open)
	delete(ss.watchers, w.id)
}

// Take returns the offers dealt to w since the last Take.
func (ss *SuperSeed[K]) Take(w *SuperWatch[K]) []int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := slices.Clone(w.out)
	w.out = w.out[:0]
	return out
}

// Has notes that w holds the blocks idx (its have frame).
func (ss *SuperSeed[K]) Has(w *SuperWatch[K], idx []int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, i := range idx {
		if i >= 0 && i < len(w.lacks) {
			w.lacks[i] = false
			w.gained = ss.now()
			ss.closeOffer(w, i)
		}
	}
	ss.pumpLocked()
}

// Pump deals out offers (see pumpLocked), so that offers that expired
// make room even when nothing else happens.
func (ss *SuperSeed[K]) Pump() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.pumpLocked()
}

// closeOffer ends w's open offer of block i, if any.
func (ss *SuperSeed[K]) closeOffer(w *SuperWatch[K], i int) {
	if _, ok := w.open[i]; ok {
		delete(w.open, i)
		ss.offers[i]--
	}
}

// pumpLocked deals out offers (ss.mu held): every watcher holding fewer
// than openCap offers it has not asked for, those sent the fewest blocks
// first, gets the least loaded block it lacks that is offered to nobody
// (only a never sent one while some are), until no watcher can take one.
// First the offers of watchers that asked for nothing for superSeedHold go
// back.
func (ss *SuperSeed[K]) pumpLocked() {
	if len(ss.watchers) == 0 {
		return
	}
	now := ss.now()
	order := make([]*SuperWatch[K], 0, len(ss.watchers))
	for _, w := range ss.watchers {
		if w.pending == 0 && now.Sub(w.asked) >= ss.Hold {
			for i := range w.open {
				ss.closeOffer(w, i)
			}
		}
		if extra := len(w.open) - openCap(w, len(ss.watchers)); extra > 0 {
			// Offers of a lone watcher beyond SuperOpen, now that others
			// watch: the latest go back.
			latest := make([]int, 0, len(w.open))
			for i := range w.open {
				latest = append(latest, i)
			}
			slices.SortFunc(latest, func(a, b int) int { return w.open[b].Compare(w.open[a]) })
			for _, i := range latest[:extra] {
				ss.closeOffer(w, i)
			}
		}
		if len(w.open) < openCap(w, len(ss.watchers)) {
			order = append(order, w)
		}
	}
	ss.rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	slices.SortStableFunc(order, func(a, b *SuperWatch[K]) int { return cmp.Compare(a.got, b.got) })
	for dealt := true; dealt; {
		dealt = false
		for _, w := range order {
			if len(w.open) >= openCap(w, len(ss.watchers)) {
				continue
			}
			i := ss.pickFor(w)
			if i < 0 {
				continue
			}
			w.open[i] = now
			ss.offers[i]++
			w.out = append(w.out, i)
			select {
			case w.Wake <- struct{}{}:
			default:
			}
			dealt = true
		}
	}
}

// pickFor returns the block to offer w next, or -1: among those it lacks and
// is not offered, one offered to nobody, the least sent and asked for (only
// a never sent one while it lacks some), ties at random. It looks from a random
// block on and stops at the first with the least load there can be (none
// while some block was never sent, else one send), so that dealing out a
// file's blocks costs about n log n steps, not n² (a lone fetch of 1 GiB in
// 16 KiB blocks would scan 65,536 blocks per offer).
func (ss *SuperSeed[K]) pickFor(w *SuperWatch[K]) int {
	n := len(w.lacks)
	if n == 0 {
		return -1
	}
	floor := int32(1)
	if ss.unsent > 0 {
		floor = 0
	}
	best, bestLoad := -1, int32(0)
	lacksUnsent := false // it lacks a block neither sent nor being sent
	start := ss.rng.IntN(n)
	for j := range n {
		i := start + j
		if i >= n {
			i -= n
		}
		if !w.lacks[i] {
			continue
		}
		load := ss.sent[i] + ss.asked[i]
		if load == 0 {
			lacksUnsent = true
		}
		if ss.offers[i] > 0 {
			continue
		}
		if load <= floor {
			return i
		}
		if best < 0 || load < bestLoad {
			best, bestLoad = i, load
		}
	}
	// While some block was never sent, a block is sent twice only to a
	// watcher that needs it: one that lacks no never-sent block (it took
	// the others from its own files, as an update or a resumed fetch does,
	// or they are being sent to a peer that is gone) and has gained
	// nothing, here or elsewhere, for Hold. Offered nothing at all, a
	// resumed fetch that lacked one block, asked for by a fetch killed
	// before, gave up after 10 s (TestE2EKillResume, 1 run in 6); offered
	// the least sent at once, the seed of an update (200 peers, 11 new
	// blocks) sent 2.75 copies of them in no less time than 1.00.
	if ss.unsent > 0 && bestLoad > 0 && (lacksUnsent || ss.now().Sub(w.gained) < ss.Hold) {
		return -1
	}
	return best
}

// NoteSent counts block i as sent to id once more.
func (ss *SuperSeed[K]) NoteSent(id K, i int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if i < 0 || i >= len(ss.sent) {
		return
	}
	if ss.sent[i] == 0 {
		ss.unsent--
	}
	ss.sent[i]++
	if w := ss.watchers[id]; w != nil {
		w.lacks[i] = false
		w.got++
		w.gained = ss.now()
	}
}

// Ask counts the requests of id for the blocks idx as being served (until
// done); they are no longer open offers to id, and count in its share until
// done.
func (ss *SuperSeed[K]) Ask(id K, idx []int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	w := ss.watchers[id]
	for _, i := range idx {
		if i >= 0 && i < len(ss.asked) {
			ss.asked[i]++
			if w != nil {
				ss.closeOffer(w, i)
				w.pending++
				w.asked = ss.now()
			}
		}
	}
	ss.pumpLocked()
}

// Done ends the requests of id for idx counted by ask (sent or not), and
// deals out the offers they make room for.
func (ss *SuperSeed[K]) Done(id K, idx []int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	w := ss.watchers[id]
	for _, i := range idx {
		if i >= 0 && i < len(ss.asked) {
			ss.asked[i] = max(0, ss.asked[i]-1)
			if w != nil {
				w.pending = max(0, w.pending-1)
				w.asked = ss.now()
			}
		}
	}
	ss.pumpLocked()
}
