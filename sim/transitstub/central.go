package transitstub

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// The central schedule (SwarmConfig.Central) is not a protocol: it is a
// scheduler that knows which blocks every peer holds and which are on
// their way, and whose decisions reach the peers in no time. Only blocks
// take time: a peer's uplink sends one block at a time, the block crosses
// the route's delay, the receiver's downlink delivers it, and only then
// can the receiver pass it on. Whenever a peer's uplink is free the
// scheduler gives it the block it holds that the fewest peers hold or
// await (ties at random), for the peer that holds and awaits the fewest
// blocks among those lacking it (ties: the nearest), skipping peers that
// centralSenders uplinks are sending to already (their downlinks are
// full). Every peer may send to every other unless Neighbours says not.
//
// Its completion times are those of a real schedule on the same access
// links and latencies, so they bound from above what the best schedule
// could do, where T* (FluidBound, which ignores latency and blocks) bounds
// it from below: the two together say how much of a protocol's distance to
// T* any protocol could win back. Its variants (CentralSchedule) take one
// ingredient away at a time, to show which ones the figure owes to: the
// knowledge (Lag), the reach (Neighbours), the receiver and the block
// choices.

// CentralSchedule configures the central schedule (SwarmConfig.Central).
// The zero value is the schedule as described in central.go.
type CentralSchedule struct {
	// Lag makes each decision see the other peers as a push protocol over
	// announcements would: a peer learns of a block pushed to it when the
	// sender's notice arrives (a one-way delay after the send starts) and
	// tells every peer, which learns of it a delay later; a sender knows its
	// own sends at once. A block pushed to a peer that holds or awaits it
	// already arrives redundant, and rarity counts only what the sender
	// knows of.
	Lag bool
	// Neighbours lets a peer send only to its overlay neighbours and to the
	// peers that have it as one (and count rarity over them with Lag).
	Neighbours bool
	// Receiver chooses among the peers lacking the block: "neediest" (or
	// ""), "random" or "nearest" (the shortest one-way delay, ties the
	// neediest).
	Receiver string
	// RandomBlocks makes a sender take a random block of those it holds
	// that a receiver lacks, instead of the rarest: with it, the seed no
	// longer sends every block once before sending any twice.
	RandomBlocks bool
}

// validate checks c's receiver choice.
func (c *CentralSchedule) validate() error {
	switch c.Receiver {
	case "", "neediest", "random", "nearest":
		return nil
	}
	return fmt.Errorf("%w: central receiver %q: want neediest, random or nearest", ErrParams, c.Receiver)
}

// name is c's part of SwarmResult.Model.
func (c *CentralSchedule) name() string {
	s := "central"
	if c.Lag {
		s += "+lag"
	}
	if c.Neighbours {
		s += "+neighbours"
	}
	if c.Receiver != "" && c.Receiver != "neediest" {
		s += "+" + c.Receiver + "-receiver"
	}
	if c.RandomBlocks {
		s += "+random-blocks"
	}
	return s
}

// centralSenders is how many uplinks the central schedule lets send to one
// peer at once: more than enough to fill a downlink five times an uplink's
// capacity (the testnet's 100 and 20 Mbit/s).
const centralSenders = 6

// centralModel runs the central schedule on RunSwarm's peers and clock.
type centralModel struct {
	CentralSchedule
	sim      *Sim
	peers    []swarmPeer
	u        int
	rng      *rand.Rand
	blockLen int
	noDelay  bool
	res      *SwarmResult
	route    func(a, b int) topology.Route
	transfer func(x, y int, route topology.Route, b int, now float64, arrived func()) float64
	complete func(a int)
	seedOut  *seedOut

	// count is, per block, the peers holding it or awaiting it.
	count []int32
	// awaits marks, per peer, the blocks on their way to it; inflight
	// counts them. told is, per peer and block, when the peer knew it would
	// hold the block (-Inf: from the start, +Inf: not yet), and from the
	// sender of the first copy sent to it (-1: none).
	awaits   [][]bool
	inflight []int
	told     [][]float64
	from     [][]int32
	// again marks the redundant sends (Lag): their senders know of them.
	again map[int64]bool
	// sending counts, per peer, the uplinks sending it a block; idle marks
	// peers whose uplink is free with nothing to send.
	sending []int
	idle    []bool
	// reach lists, per peer, the peers it may send to.
	reach [][]int32
	// Scratch of a decision: the sender's blocks, their rarity and the
	// blocks it knows each peer to hold or await (Lag).
	order  []int
	rarity []int32
	known  []int
}

// start counts the blocks held and sets every uplink to work.
func (m *centralModel) start() {
	n := len(m.peers)
	m.count = make([]int32, m.u)
	m.awaits, m.told, m.from = make([][]bool, n), make([][]float64, n), make([][]int32, n)
	m.inflight, m.sending, m.idle = make([]int, n), make([]int, n), make([]bool, n)
	m.rarity, m.known, m.again = make([]int32, m.u), make([]int, n), map[int64]bool{}
	for a := range m.peers {
		m.awaits[a], m.told[a], m.from[a] = make([]bool, m.u), make([]float64, m.u), make([]int32, m.u)
		for b := range m.u {
			m.told[a][b], m.from[a][b] = math.Inf(1), -1
		}
		for _, b := range m.peers[a].set.Indices() {
			m.count[b]++
			m.told[a][b] = math.Inf(-1)
		}
	}
	m.reach = make([][]int32, n)
	if m.Neighbours {
		for a := range m.peers {
			for _, y := range m.peers[a].nbrs {
				m.reach[a] = append(m.reach[a], y)
				m.reach[y] = append(m.reach[y], int32(a))
			}
		}
		for a := range m.reach {
			slices.Sort(m.reach[a])
			m.reach[a] = slices.Compact(m.reach[a])
		}
	} else {
		for a := range m.peers {
			for y := range n {
				if y != a {
					m.reach[a] = append(m.reach[a], int32(y))
				}
			}
		}
	}
	for a := range m.peers {
		m.next(a)
	}
}

// knows reports whether sender a knows that peer y holds or awaits block b.
func (m *centralModel) knows(a, y, b int) bool {
	if !m.Lag {
		return m.awaits[y][b] || m.peers[y].set.Has(b)
	}
	return int(m.from[y][b]) == a || m.told[y][b]+float64(m.delay(y, a)) <= m.sim.Now() || m.again[m.key(a, y, b)]
}

// key names sender a's send of block b to peer y in again.
func (m *centralModel) key(a, y, b int) int64 {
	return (int64(a)*int64(len(m.peers))+int64(y))*int64(m.u) + int64(b)
}

// have is how many blocks a knows peer y to hold or await.
func (m *centralModel) have(a, y int) int {
	if !m.Lag {
		return m.peers[y].set.Len() + m.inflight[y]
	}
	return m.known[y]
}

// survey fills, for a decision of sender a, the rarity of each block (the
// peers holding or awaiting it, as far as a knows, among those a reaches)
// and, with Lag, the blocks a knows each peer to hold or await.
func (m *centralModel) survey(a int) {
	if !m.Lag {
		copy(m.rarity, m.count)
		return
	}
	clear(m.rarity)
	now := m.sim.Now()
	for _, y := range m.reach[a] {
		k, d := 0, float64(m.delay(int(y), a))
		from, told := m.from[y], m.told[y]
		for b := range m.u {
			if int(from[b]) == a || told[b]+d <= now || (len(m.again) > 0 && m.again[m.key(a, int(y), b)]) { // knows(a, y, b)
				m.rarity[b]++
				k++
			}
		}
		m.known[y] = k
	}
}

// next gives peer a's free uplink its next block, or marks it idle.
func (m *centralModel) next(a int) {
	p := &m.peers[a]
	m.idle[a] = true
	if p.set.Len() == 0 {
		return
	}
	m.survey(a)
	m.order = p.set.AppendIndices(m.order[:0])
	m.rng.Shuffle(len(m.order), func(x, y int) { m.order[x], m.order[y] = m.order[y], m.order[x] })
	if !m.RandomBlocks {
		slices.SortStableFunc(m.order, func(x, y int) int { return cmp.Compare(m.rarity[x], m.rarity[y]) })
	}
	for _, b := range m.order {
		if to := m.receiver(a, b); to >= 0 {
			m.send(a, to, b)
			return
		}
	}
}

// receiver chooses the peer a sends block b to, or -1 if a knows of none
// lacking it with room on its downlink.
func (m *centralModel) receiver(a, b int) int {
	to, best, bestDelay := -1, 0, int32(0)
	for _, y32 := range m.reach[a] {
		y := int(y32)
		if m.peers[y].done || m.sending[y] >= centralSenders || m.knows(a, y, b) {
			continue
		}
		key, d := m.have(a, y), m.delay(a, y)
		switch m.Receiver {
		case "random":
			key, d = m.rng.IntN(1<<20), 0
		case "nearest":
			key, d = int(d), int32(key)
		}
		if to < 0 || key < best || (key == best && d < bestDelay) {
			to, best, bestDelay = y, key, d
		}
	}
	return to
}

// delay is the one-way delay from a to b in ms (0 with NoDelay).
func (m *centralModel) delay(a, b int) int32 {
	if m.noDelay {
		return 0
	}
	return m.route(a, b).DelayMS
}

// send moves block b from a to y and gives a's uplink its next block when
// it has sent this one.
func (m *centralModel) send(a, y, b int) {
	r := m.route(a, y)
	if m.noDelay {
		r.DelayMS = 0
	}
	m.idle[a] = false
	first := !m.awaits[y][b] && !m.peers[y].set.Has(b)
	if !first {
		m.again[m.key(a, y, b)] = true
	}
	if first {
		m.count[b]++
		m.awaits[y][b] = true
		m.inflight[y]++
		m.from[y][b] = int32(a)
		m.told[y][b] = m.sim.Now() + float64(r.DelayMS) // the sender's notice
	}
	m.res.BlocksSent++
	m.res.Bytes[reconcile.MsgBlocks.String()] += int64(m.blockLen)
	m.sending[y]++
	upDone := m.transfer(a, y, r, m.blockLen, m.sim.Now(), func() { m.arrived(y, b, first) })
	if m.peers[a].seed && first && m.count[b] == 2 { // the seed's and y's: a first copy
		m.seedOut.sent(upDone)
	}
	m.sim.At(upDone, func() {
		m.sending[y]--
		m.next(a)
		m.wake(y)
	})
}

// wake offers peer y, whose downlink has room again, to the idle uplinks
// that reach it (reach is symmetric): each holding a block it does not know y to hold or await
// sends it the rarest of those.
func (m *centralModel) wake(y int) {
	for _, a32 := range m.reach[y] {
		a := int(a32)
		if m.peers[y].done || m.sending[y] >= centralSenders {
			return
		}
		if !m.idle[a] {
			continue
		}
		m.survey(a)
		best := -1
		m.order = m.peers[a].set.AppendIndices(m.order[:0])
		m.rng.Shuffle(len(m.order), func(x, y int) { m.order[x], m.order[y] = m.order[y], m.order[x] })
		for _, b := range m.order {
			if !m.knows(a, y, b) && (best < 0 || (!m.RandomBlocks && m.rarity[b] < m.rarity[best])) {
				best = b
			}
		}
		if best >= 0 {
			m.send(a, y, best)
		}
	}
}

// arrived delivers block b to peer y (a first copy, or one y holds or
// awaits already: redundant).
func (m *centralModel) arrived(y, b int, first bool) {
	q := &m.peers[y]
	if !first {
		m.res.RedundantBlocks++
		return
	}
	m.awaits[y][b] = false
	m.inflight[y]--
	q.set.Add(b)
	if q.set.Len() == m.u {
		m.complete(y)
	}
	if m.idle[y] {
		m.next(y)
	}
}

// seedOut notes when the seed's uplink has sent every block once.
type seedOut struct {
	left int      // blocks the seed has not sent yet
	at   *float64 // set when the last of them has left the uplink
}

// sent notes a block the seed sends for the first time, out of its uplink
// at done.
func (s *seedOut) sent(done float64) {
	if s.left--; s.left == 0 {
		*s.at = done
	}
}
