package natmodel

import (
	"errors"
	"sync"
	"time"
)

// Errors of Circuits.Carry: the circuit is over a limit (it is closed, and
// the next Open starts a new one), or was closed before.
var (
	// ErrDataLimit means the circuit would carry more than Limits.Data
	// bytes in one direction.
	ErrDataLimit = errors.New("natmodel: the relay's data limit ended the circuit")
	// ErrDurationLimit means the circuit has lasted Limits.Duration.
	ErrDurationLimit = errors.New("natmodel: the relay's duration limit ended the circuit")
	// ErrClosed means the circuit was closed (by a limit, or Close) and
	// carries nothing more.
	ErrClosed = errors.New("natmodel: circuit closed")
	// ErrNotRelayed means the pair's path is not Relayed.
	ErrNotRelayed = errors.New("natmodel: the pair is not relayed")
)

// IsLimit says whether err is the end of a circuit by a relay's limit
// (ErrDataLimit, ErrDurationLimit).
func IsLimit(err error) bool {
	return errors.Is(err, ErrDataLimit) || errors.Is(err, ErrDurationLimit)
}

// Circuits are the relayed connections of a run's relayed pairs, one open
// at a time per pair, each ended by its relay's limits: it carries at most
// Limits.Data bytes in each direction and lasts at most Limits.Duration
// from its Open. Circuits is safe for concurrent use.
type Circuits struct {
	m  *Model
	mu sync.Mutex
	// open is each pair's circuit, by (smaller, larger) peer.
	open  map[[2]int]*circuit
	stats CircuitStats
}

// circuit is one relayed connection.
type circuit struct {
	gen    uint64
	closed bool
	start  time.Time
	sent   [2]int64 // from the smaller peer to the larger, and back
}

// CircuitStats are what the circuits carried and how they ended.
type CircuitStats struct {
	// Opened counts the circuits opened.
	Opened int64 `json:"opened"`
	// DataLimited and DurationLimited count the circuits a limit ended.
	DataLimited     int64 `json:"data_limited"`
	DurationLimited int64 `json:"duration_limited"`
	// Bytes counts the bytes the relays carried (each byte once, though it
	// crosses the relay's downlink and uplink); PerRelay by relay.
	Bytes    int64   `json:"bytes"`
	PerRelay []int64 `json:"per_relay"`
}

// NewCircuits returns the circuits of m's relayed pairs, under m's limits.
func NewCircuits(m *Model) *Circuits {
	return &Circuits{m: m, open: make(map[[2]int]*circuit), stats: CircuitStats{PerRelay: make([]int64, m.cfg.Relays)}}
}

// Open returns the generation of the open circuit of peers a and b,
// opening one at now if theirs was closed or never opened. Carry takes
// the generation, so that the streams of a closed circuit carry nothing
// on the next one.
func (c *Circuits) Open(a, b int, now time.Time) uint64 {
	k := [2]int{min(a, b), max(a, b)}
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := c.open[k]
	if cc != nil && !cc.closed {
		return cc.gen
	}
	var gen uint64 = 1
	if cc != nil {
		gen = cc.gen + 1
	}
	c.open[k] = &circuit{gen: gen, start: now}
	c.stats.Opened++
	return gen
}

// Carry books n bytes from peer from to peer to on their circuit of
// generation gen at now, and returns how many the relay carried. All n,
// unless the circuit is over a limit: the relay then carries the bytes up
// to the data limit (or none, past the duration), ends the circuit and
// Carry returns ErrDataLimit or ErrDurationLimit. A circuit that was
// closed carries nothing (ErrClosed).
func (c *Circuits) Carry(from, to int, gen uint64, n int, now time.Time) (int, error) {
	relay := c.m.Relay(from, to)
	if relay < 0 {
		return 0, ErrNotRelayed
	}
	k := [2]int{min(from, to), max(from, to)}
	dir := 0
	if from > to {
		dir = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := c.open[k]
	if cc == nil || cc.closed || cc.gen != gen {
		return 0, ErrClosed
	}
	lim := c.m.cfg.Limits
	if lim.Duration > 0 && now.Sub(cc.start) >= lim.Duration {
		cc.closed = true
		c.stats.DurationLimited++
		return 0, ErrDurationLimit
	}
	carried, err := n, error(nil)
	if lim.Data > 0 && cc.sent[dir]+int64(n) > lim.Data {
		carried, err = int(lim.Data-cc.sent[dir]), ErrDataLimit
		cc.closed = true
		c.stats.DataLimited++
	}
	cc.sent[dir] += int64(carried)
	c.stats.Bytes += int64(carried)
	c.stats.PerRelay[relay] += int64(carried)
	return carried, err
}

// Close ends the open circuit of peers a and b, if any (the peers
// disconnected).
func (c *Circuits) Close(a, b int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc := c.open[[2]int{min(a, b), max(a, b)}]; cc != nil {
		cc.closed = true
	}
}

// Stats returns what the circuits carried so far and how they ended.
func (c *Circuits) Stats() CircuitStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.PerRelay = append([]int64(nil), s.PerRelay...)
	return s
}
