package sched

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"
)

// BlockChoice is how a fetch chooses, among the blocks a source offered,
// which to ask it for first.
type BlockChoice int

const (
	// BlockRarest asks first for the blocks the fewest of the fetch's
	// sources offered (ties in random order): the counts are exact, from
	// each source's last reconciliation answer. Blocks only one source holds
	// (the seed's, early on) are fetched from it while the others are left
	// to the peers that hold them too, so rare blocks spread first.
	BlockRarest BlockChoice = iota
	// BlockInOrder asks for the offered blocks in index order from a random
	// starting place (the choice before BlockRarest, kept for comparison).
	BlockInOrder
	// BlockRandom asks for the offered blocks in random order (for
	// comparison with the rarest-first choices).
	BlockRandom
	// BlockRarestFilters asks first for the blocks the fewest neighbours
	// hold by the sum of the counting Bloom filters this peer's watchers
	// sent it (the algebra's T8; see cbfalgebra.Tally), kept up to date
	// with their have frames: rarity from the filters alone, never below
	// the true count, equal to it unless the filters are loaded.
	BlockRarestFilters
)

// String names the choice.
func (c BlockChoice) String() string {
	switch c {
	case BlockRarest:
		return "rarest"
	case BlockInOrder:
		return "in-order"
	case BlockRandom:
		return "random"
	case BlockRarestFilters:
		return "rarest-filters"
	}
	return "unknown"
}

// Rarest reports whether c orders blocks by rarity.
func (c BlockChoice) Rarest() bool { return c == BlockRarest || c == BlockRarestFilters }

// Picker decides which source fetches which unit (block, or coded block) of
// a fetch: a unit is claimed by one source at a time, so no two peers are
// asked for the same unit unless one fails, stalls or lacks it; then the
// claim is released and the unit goes to another source that offered it.
// It does no IO and takes no lock: the fetch holds its own lock around every
// call. The request strategy of anacrolix/torrent is kept apart from its
// connections in the same way.
type Picker[K comparable] struct {
	// has reports whether a unit is already held (and so never claimed).
	has func(i int) bool
	// Limit bounds the units claimed at once over all sources (the blocks a
	// fetch holds in flight, queued or being written).
	Limit int

	Claimed map[int]K
	// Releases counts releases: a source whose offers were deferred because
	// other sources held their claims looks at them again once it moves.
	Releases uint64

	// choice orders each source's queue (see BlockChoice); rarityOf, when
	// set, is the rarity of BlockRarestFilters (the count of is used
	// otherwise).
	choice   BlockChoice
	RarityOf func(i int) int
	// count holds, per unit, how many sources' current offers hold it;
	// gen changes whenever count does.
	count map[int]int32
	gen   uint64
	rng   *rand.Rand
	// partial counts, per unit, the offers of sources that are not full
	// (see offers.full) nor away; full is the number of full sources.
	partial map[int]int32
	full    int
	// direct counts, per unit, the offers of sources that are not relayed
	// (Offers.Relayed) nor away: a relayed source is not given a unit a direct one
	// offers, so that a relay carries only what no direct path brings.
	direct map[int]int32
	// second holds the endgame's second claims: unit -> the other source
	// asked for it (see endgame).
	second map[int]K
	// Redundant counts the endgame's second claims.
	Redundant int
	// Hold, when set, reports the units left to other means for now (the
	// pushes of stripe trees): they are deferred, not claimed. It is given
	// the unit's deadline (see; zero when it has none, past once it has
	// passed): seen keeps them until the unit arrives, seenLog (each
	// once) until the deadline has passed, and only while Hold is set.
	Hold    func(i int, deadline time.Time) bool
	seen    map[int]time.Time
	seenLog []int
}

// EndgameBlocks bounds the blocks an endgame asks of a second source at once.
const EndgameBlocks = 8

// EndgameWait is how long a fetch goes without storing a block before its
// last blocks are asked of a second source: a fetch whose last blocks are
// merely on their way does not pay for them twice.
const EndgameWait = 2 * time.Second

// Offers are the units one source offered and has not yet been given.
type Offers struct {
	Queue    []int            // offered units not yet tried
	deferred []int            // offered units claimed by other sources when tried
	seen     uint64           // picker.release when deferred was last moved to queue
	all      []int            // the units of the last offer and its haves, counted in picker.count
	in       map[int]struct{} // the units of all, once haves were added
	sorted   uint64           // picker.gen when queue was last sorted by rarity
	// Full says the source offered every unit the fetch lacked: a seed, or
	// a peer done with its own download.
	Full bool
	// Relayed says the source is reached through a relay only, set by the
	// caller before OfferFrom: it is given only the units no direct source
	// offers (see direct). relayed is its value at the last offer.
	Relayed bool
	relayed bool
	// away says the source's last request failed or was refused (busy):
	// its offers are left out of partial and direct (see Away).
	away bool
}

// NewPicker makes a picker that claims offered units in the order offered
// (BlockInOrder); setChoice changes that.
func NewPicker[K comparable](has func(int) bool, limit int) *Picker[K] {
	return &Picker[K]{has: has, Limit: max(limit, 1), Claimed: make(map[int]K), choice: BlockInOrder,
		count: make(map[int]int32), partial: make(map[int]int32), direct: make(map[int]int32), second: make(map[int]K), rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// SetChoice sets how units are chosen; rng (nil: a random one) breaks ties.
func (pk *Picker[K]) SetChoice(c BlockChoice, rng *rand.Rand) {
	pk.choice = c
	if rng != nil {
		pk.rng = rng
	}
}

// Offer replaces the offers of a source with a new reconciliation answer.
// It takes units over.
func (pk *Picker[K]) Offer(o *Offers, units []int) { pk.OfferFrom(o, units, false) }

// OfferFrom is offer for a source that offered every unit the fetch lacks
// (full) or not.
//
// While a fetch has one full source only (the seed, early in a swarm),
// BlockRarest spares it: it is not given units that a source that is not
// full offered too, so that the seed's upload, the swarm's scarcest, goes to
// blocks no other peer near this one can send. Once several sources are
// full (peers done with their download), none is spared.
func (pk *Picker[K]) OfferFrom(o *Offers, units []int, full bool) {
	pk.forget(o)
	o.all = append(o.all[:0], units...)
	o.Full, o.relayed = full, o.Relayed
	if full {
		pk.full++
	}
	for _, i := range o.all {
		pk.count[i]++
		if !full && !o.away {
			pk.partial[i]++
		}
		if !o.relayed && !o.away {
			pk.direct[i]++
		}
	}
	pk.gen++
	if pk.choice != BlockInOrder {
		// Shuffled first, so that a stable sort by rarity leaves ties in
		// random order.
		pk.rng.Shuffle(len(units), func(a, b int) { units[a], units[b] = units[b], units[a] })
	}
	o.Queue, o.deferred, o.seen, o.sorted = units, nil, pk.Releases, 0
}

// Add adds the units a source announced since its last offer (the have
// frames of its watch) to its offers; those offered already are left out.
func (pk *Picker[K]) Add(o *Offers, units []int) {
	if len(units) == 0 {
		return
	}
	if o.in == nil {
		o.in = make(map[int]struct{}, len(o.all)+len(units))
		for _, i := range o.all {
			o.in[i] = struct{}{}
		}
	}
	added := false
	for _, i := range units {
		if _, ok := o.in[i]; ok {
			continue
		}
		o.in[i] = struct{}{}
		o.all = append(o.all, i)
		o.Queue = append(o.Queue, i)
		pk.count[i]++
		if !o.Full && !o.away {
			pk.partial[i]++
		}
		if !o.relayed && !o.away {
			pk.direct[i]++
		}
		added = true
	}
	if added {
		pk.gen++
	}
}

// See gives unit i the deadline d (for hold), unless it has an earlier
// one or is held.
func (pk *Picker[K]) See(i int, d time.Time) {
	if pk.Hold == nil || pk.has(i) {
		return
	}
	if pk.seen == nil {
		pk.seen = make(map[int]time.Time)
	}
	old, ok := pk.seen[i]
	if !ok {
		pk.seenLog = append(pk.seenLog, i)
	}
	if !ok || d.Before(old) {
		pk.seen[i] = d
	}
}

// Held reports whether unit i is left to other means for now (hold).
func (pk *Picker[K]) Held(i int) bool {
	return pk.Hold != nil && pk.Hold(i, pk.seen[i])
}

// Forget takes the offers of a source that left the fetch out of the
// rarity counts. The units that a spared seed or a relayed source deferred
// because this one offered them too are theirs again: it counts as a
// release, as they may have no other (the last blocks of a fetch whose
// partial sources all left).
func (pk *Picker[K]) Forget(o *Offers) {
	if pk.forget(o) {
		pk.Releases++
	}
}

// forget is Forget without the release (for a source about to offer anew);
// it reports whether a unit not held lost its last partial or direct offer.
func (pk *Picker[K]) forget(o *Offers) (freed bool) {
	for _, i := range o.all {
		if pk.count[i]--; pk.count[i] <= 0 {
			delete(pk.count, i)
		}
		if o.away {
			continue
		}
		freed = pk.uncount(i, !o.relayed, !o.Full) || freed
	}
	if o.Full {
		pk.full--
	}
	if len(o.all) > 0 || o.Full {
		pk.gen++
	}
	o.all, o.Full, o.in = o.all[:0], false, nil
	return freed
}

// uncount takes one offer of unit i out of direct and partial, and reports
// whether i, not held, lost its last offer there.
func (pk *Picker[K]) uncount(i int, direct, partial bool) (freed bool) {
	if direct {
		if pk.direct[i]--; pk.direct[i] <= 0 {
			delete(pk.direct, i)
			freed = !pk.has(i)
		}
	}
	if partial {
		if pk.partial[i]--; pk.partial[i] <= 0 {
			delete(pk.partial, i)
			freed = freed || !pk.has(i)
		}
	}
	return freed
}

// Away marks the source of o as away (its last request failed or was
// refused: busy, stalled, unreachable) or back. An away source's offers do
// not spare the seed nor hold a relayed source back: else a fetch whose
// last blocks are offered by busy peers, or by peers that left and are
// still being dialled, never asks the seed for them (bench swarm --leave
// --super-seed=false: the last fetcher gave up with the seed connected).
// It reports whether units came free for those sources (a release: the
// caller wakes them).
func (pk *Picker[K]) Away(o *Offers, away bool) bool {
	if o.away == away {
		return false
	}
	o.away = away
	freed := false
	for _, i := range o.all {
		if away {
			freed = pk.uncount(i, !o.relayed, !o.Full) || freed
			continue
		}
		if !o.relayed {
			pk.direct[i]++
		}
		if !o.Full {
			pk.partial[i]++
		}
	}
	if freed {
		pk.Releases++
	}
	return freed
}

// Rarity is how many sources' current offers hold unit i.
func (pk *Picker[K]) Rarity(i int) int { return int(pk.count[i]) }

// Claim gives source id up to n of its offered units that nobody holds or
// has claimed, in the order offered.
func (pk *Picker[K]) Claim(id K, o *Offers, n int) []int {
	n = min(n, pk.Limit-len(pk.Claimed))
	if len(o.Queue) == 0 && o.seen != pk.Releases {
		o.Queue, o.deferred = o.deferred, nil
		o.seen = pk.Releases
		o.sorted = 0
	}
	if o.sorted != pk.gen && len(o.Queue) > 1 {
		switch {
		case pk.choice == BlockRandom:
			pk.rng.Shuffle(len(o.Queue), func(a, b int) { o.Queue[a], o.Queue[b] = o.Queue[b], o.Queue[a] })
		case pk.choice == BlockRarestFilters && pk.RarityOf != nil:
			rank := make(map[int]int, len(o.Queue))
			for _, i := range o.Queue {
				rank[i] = pk.RarityOf(i)
			}
			slices.SortStableFunc(o.Queue, func(a, b int) int { return cmp.Compare(rank[a], rank[b]) })
		case pk.choice.Rarest():
			slices.SortStableFunc(o.Queue, func(a, b int) int { return cmp.Compare(pk.count[a], pk.count[b]) })
		}
		o.sorted = pk.gen
	}
	spare := pk.spares(o)
	var out []int
	for n > 0 && len(o.Queue) > 0 {
		i := o.Queue[0]
		o.Queue = o.Queue[1:]
		if pk.has(i) {
			continue
		}
		if spare && pk.partial[i] > 0 || o.relayed && pk.direct[i] > 0 || pk.Held(i) {
			// Another source offered it: the seed is spared, or a relay
			// (they are looked at again on a release, or at the next
			// reconciliation). Or it is held for its pushes.
			o.deferred = append(o.deferred, i)
			continue
		}
		if _, c := pk.Claimed[i]; c {
			o.deferred = append(o.deferred, i)
			continue
		}
		pk.Claimed[i] = id
		out = append(out, i)
		n--
	}
	return out
}

// Unclaim releases the claims id holds on units (that did not arrive), for
// other sources; id keeps them among its own offers, deferred.
func (pk *Picker[K]) Unclaim(id K, o *Offers, units []int) {
	for _, i := range units {
		pk.release1(id, i)
		o.deferred = append(o.deferred, i)
	}
	if len(units) > 0 {
		pk.Releases++
	}
}

// Drop releases id's claim on unit i without keeping it among id's offers
// (the source lacks it after all).
func (pk *Picker[K]) Drop(id K, i int) {
	if pk.release1(id, i) {
		pk.Releases++
	}
}

// release1 ends id's claim on unit i, first or second; the second claimant
// of a unit whose first lets go becomes its first. It reports whether the
// unit is free now.
func (pk *Picker[K]) release1(id K, i int) bool {
	if s, ok := pk.second[i]; ok && s == id {
		delete(pk.second, i)
		return false
	}
	if pk.Claimed[i] != id {
		return false
	}
	if s, ok := pk.second[i]; ok {
		pk.Claimed[i] = s
		delete(pk.second, i)
		return false
	}
	delete(pk.Claimed, i)
	return true
}

// Endgame gives source id up to n units it offered that another source has
// claimed, as second claims, when missing (the units the fetch lacks, at
// most endgameBlocks) are all claimed: the last blocks of a fetch then come
// from whichever of two sources sends them first, rather than waiting on a
// slow one. A unit has two claims at most; the copy that arrives second is
// counted redundant and dropped. With from set, only units whose claimant
// from accepts are asked again (a claimant slower than id).
func (pk *Picker[K]) Endgame(id K, o *Offers, n, missing int, from func(claimant K) bool) []int {
	if missing <= 0 || missing > EndgameBlocks || len(pk.Claimed) < missing {
		return nil
	}
	n = min(n, EndgameBlocks-len(pk.second))
	var out []int
	for _, i := range o.all {
		if n == 0 {
			break
		}
		c, claimed := pk.Claimed[i]
		if !claimed || c == id || pk.has(i) || from != nil && !from(c) {
			continue
		}
		if _, ok := pk.second[i]; ok {
			continue
		}
		pk.second[i] = id
		pk.Redundant++
		out = append(out, i)
		n--
	}
	return out
}

// Done ends the claim on unit i, which arrived. If it is still needed
// (it failed verification or could not be stored), retry makes the sources
// that deferred it look again.
func (pk *Picker[K]) Done(i int, retry bool) {
	delete(pk.Claimed, i)
	delete(pk.second, i)
	if !retry && pk.seen != nil {
		delete(pk.seen, i) // held: its entry in seenLog goes
	}
	if retry {
		pk.Releases++
	}
}

// spares reports whether o's source is spared (see offerFrom).
func (pk *Picker[K]) spares(o *Offers) bool {
	return pk.choice.Rarest() && o.Full && pk.full == 1
}

// Claimable reports whether o holds deferred units that are now free.
func (pk *Picker[K]) Claimable(o *Offers) bool {
	if o.seen == pk.Releases {
		return false
	}
	spare := pk.spares(o)
	for _, i := range o.deferred {
		if _, c := pk.Claimed[i]; !c && !pk.has(i) && (!spare || pk.partial[i] == 0) && (!o.relayed || pk.direct[i] == 0) && !pk.Held(i) {
			return true
		}
	}
	return false
}

// InFlight is the number of units claimed.
func (pk *Picker[K]) InFlight() int { return len(pk.Claimed) }

// ExpireSeen forgets the deadlines of See that passed by now, and reports
// whether a unit not yet held was among them: it may be claimed from now
// on (Hold is given a past deadline), so the caller should make the
// sources look again (Releases++).
func (pk *Picker[K]) ExpireSeen(now time.Time) (opened bool) {
	kept := pk.seenLog[:0]
	for _, i := range pk.seenLog {
		d, ok := pk.seen[i]
		switch {
		case !ok:
		case now.Before(d):
			kept = append(kept, i)
		case !pk.has(i):
			opened = true
		}
	}
	pk.seenLog = kept
	return opened
}
