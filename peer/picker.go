package peer

import lpeer "github.com/libp2p/go-libp2p/core/peer"

// picker decides which source fetches which unit (block, or coded block) of
// a fetch: a unit is claimed by one source at a time, so no two peers are
// asked for the same unit unless one fails, stalls or lacks it; then the
// claim is released and the unit goes to another source that offered it.
// It does no IO and takes no lock: the fetch holds its own lock around every
// call. The request strategy of anacrolix/torrent is kept apart from its
// connections in the same way.
type picker struct {
	// has reports whether a unit is already held (and so never claimed).
	has func(i int) bool
	// limit bounds the units claimed at once over all sources (the blocks a
	// fetch holds in flight, queued or being written).
	limit int

	claimed map[int]lpeer.ID
	// release counts releases: a source whose offers were deferred because
	// other sources held their claims looks at them again once it moves.
	release uint64
}

// offers are the units one source offered and has not yet been given.
type offers struct {
	queue    []int  // offered units not yet tried
	deferred []int  // offered units claimed by other sources when tried
	seen     uint64 // picker.release when deferred was last moved to queue
}

func newPicker(has func(int) bool, limit int) *picker {
	return &picker{has: has, limit: max(limit, 1), claimed: make(map[int]lpeer.ID)}
}

// offer replaces the offers of a source with a new reconciliation answer.
func (pk *picker) offer(o *offers, units []int) {
	o.queue, o.deferred, o.seen = units, nil, pk.release
}

// claim gives source id up to n of its offered units that nobody holds or
// has claimed, in the order offered.
func (pk *picker) claim(id lpeer.ID, o *offers, n int) []int {
	n = min(n, pk.limit-len(pk.claimed))
	if len(o.queue) == 0 && o.seen != pk.release {
		o.queue, o.deferred = o.deferred, nil
		o.seen = pk.release
	}
	var out []int
	for n > 0 && len(o.queue) > 0 {
		i := o.queue[0]
		o.queue = o.queue[1:]
		if pk.has(i) {
			continue
		}
		if _, c := pk.claimed[i]; c {
			o.deferred = append(o.deferred, i)
			continue
		}
		pk.claimed[i] = id
		out = append(out, i)
		n--
	}
	return out
}

// unclaim releases the claims id holds on units (that did not arrive), for
// other sources; id keeps them among its own offers, deferred.
func (pk *picker) unclaim(id lpeer.ID, o *offers, units []int) {
	for _, i := range units {
		if pk.claimed[i] == id {
			delete(pk.claimed, i)
		}
		o.deferred = append(o.deferred, i)
	}
	if len(units) > 0 {
		pk.release++
	}
}

// drop releases id's claim on unit i without keeping it among id's offers
// (the source lacks it after all).
func (pk *picker) drop(id lpeer.ID, i int) {
	if pk.claimed[i] == id {
		delete(pk.claimed, i)
		pk.release++
	}
}

// done ends the claim on unit i, which arrived. If it is still needed
// (it failed verification or could not be stored), retry makes the sources
// that deferred it look again.
func (pk *picker) done(i int, retry bool) {
	delete(pk.claimed, i)
	if retry {
		pk.release++
	}
}

// claimable reports whether o holds deferred units that are now free.
func (pk *picker) claimable(o *offers) bool {
	if o.seen == pk.release {
		return false
	}
	for _, i := range o.deferred {
		if _, c := pk.claimed[i]; !c && !pk.has(i) {
			return true
		}
	}
	return false
}

// inFlight is the number of units claimed.
func (pk *picker) inFlight() int { return len(pk.claimed) }
