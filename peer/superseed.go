package peer

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// superSeed is the offer policy of a seed that spreads its upload over the
// file (BitTorrent's super-seeding, WithSuperSeeding): each reconciliation
// answer offers only the few blocks, among those the fetcher lacks, that this
// peer has sent least often. Until every block has been sent once, it offers
// only blocks that nobody has been sent, is being sent or was offered a
// moment ago (an answer may then offer nothing); after, the least sent. While
// a seed's upload is the swarm's scarcest resource (one seed, many
// fetchers), it then sends every block once before any block twice, and the
// fetchers trade the rest among themselves. A fetcher that has only this peer
// to fetch from gets superSeedOffer blocks per reconciliation, so it is for
// seeding to many, not to one.
type superSeed struct {
	mu      sync.Mutex
	sent    []int32     // times each block was sent
	asked   []int32     // requests of each block being served
	offered []time.Time // when each block was last offered
	unsent  int         // blocks never sent
	rng     *rand.Rand
	now     func() time.Time
	scratch []superSeedRank
}

// superSeedOffer is how many blocks one answer of a super-seed offers.
const superSeedOffer = 4

// superSeedHold is how long a block offered to one peer is not offered to
// another while blocks sent as often are left: about a wide-area round trip
// and a block's queueing, the time the peer takes to ask for it.
const superSeedHold = 2 * time.Second

type superSeedRank struct {
	i      uint32
	load   int32 // sends, requests being served and a recent offer
	recent bool
	tie    uint32
}

func newSuperSeed(blocks int) *superSeed {
	return &superSeed{sent: make([]int32, blocks), asked: make([]int32, blocks), offered: make([]time.Time, blocks),
		unsent: blocks, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), now: time.Now}
}

// trim returns the blocks to offer out of lacking (the blocks the fetcher
// lacks, increasing): at most superSeedOffer of them, the least loaded first
// (sends, requests being served and a recent offer each count one), ties in
// random order, and only unloaded ones while some block was never sent;
// increasing, as offers are. It notes them offered.
func (ss *superSeed) trim(lacking []uint32) []uint32 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	rank := ss.scratch[:0]
	for _, i := range lacking {
		if int(i) >= len(ss.sent) {
			continue
		}
		t := ss.offered[i]
		recent := !t.IsZero() && now.Sub(t) < superSeedHold
		load := ss.sent[i] + ss.asked[i]
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
	out := make([]uint32, 0, superSeedOffer)
	for _, r := range rank[:min(len(rank), superSeedOffer)] {
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

// noteSent counts block i as sent once more.
func (ss *superSeed) noteSent(i int) {
	ss.mu.Lock()
	if i >= 0 && i < len(ss.sent) {
		if ss.sent[i] == 0 {
			ss.unsent--
		}
		ss.sent[i]++
	}
	ss.mu.Unlock()
}

// ask counts the requests of the blocks idx as being served (until done).
func (ss *superSeed) ask(idx []int) { ss.addAsked(idx, 1) }

// done ends the requests of idx counted by ask.
func (ss *superSeed) done(idx []int) { ss.addAsked(idx, -1) }

func (ss *superSeed) addAsked(idx []int, d int32) {
	ss.mu.Lock()
	for _, i := range idx {
		if i >= 0 && i < len(ss.asked) {
			ss.asked[i] = max(0, ss.asked[i]+d)
		}
	}
	ss.mu.Unlock()
}
