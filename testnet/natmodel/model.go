package natmodel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// ErrConfig means a Config field is out of range.
var ErrConfig = errors.New("natmodel: invalid configuration")

// DefaultPunch is the share of hole punches between two NATed peers that
// succeed in the field: 70 % ± 7 % of 4.4 million DCUtR attempts in the
// IPFS network, TCP and QUIC alike (Trautwein et al. 2025, arXiv
// 2510.27500). It is the command's default; Config's zero Punch means every
// punch fails.
const DefaultPunch = 0.7

// Limits are what a relay allows one relayed connection (a circuit), as
// go-libp2p's circuit v2 relay service limits it (relay.RelayLimit): the
// bytes it carries in each direction and how long it lasts. Zero means no
// limit.
type Limits struct {
	// Data is the most bytes a circuit carries in each direction.
	Data int64 `json:"data_bytes"`
	// Duration is how long a circuit lasts.
	Duration time.Duration `json:"duration_ns"`
}

// DefaultLimits are go-libp2p's relay defaults (relay.DefaultResources):
// 128 KiB in each direction and 2 minutes per circuit.
var DefaultLimits = Limits{Data: 128 << 10, Duration: 2 * time.Minute}

// Config says how many peers sit behind NATs, how often their punches
// succeed and what relays there are.
type Config struct {
	// Share is the share of the peers behind NATs, in [0, 1]; rounded to
	// a whole number of peers.
	Share float64 `json:"share"`
	// Punch is the probability that a hole punch between two NATed peers
	// succeeds, in [0, 1] (DefaultPunch is the field figure).
	Punch float64 `json:"punch"`
	// Relays is the number of relays; 0 leaves the pairs whose punch fails
	// unable to talk.
	Relays int `json:"relays"`
	// Limits are each relay's limits per circuit.
	Limits Limits `json:"limits"`
}

// On says whether the model changes anything: some peer is behind a NAT.
func (c Config) On() bool { return c.Share > 0 }

// Validate checks every field's range, naming the one out of it.
func (c Config) Validate() error {
	switch {
	case !(c.Share >= 0 && c.Share <= 1):
		return fmt.Errorf("%w: NAT share %g not in [0, 1]", ErrConfig, c.Share)
	case !(c.Punch >= 0 && c.Punch <= 1):
		return fmt.Errorf("%w: punch success %g not in [0, 1]", ErrConfig, c.Punch)
	case c.Relays < 0:
		return fmt.Errorf("%w: %d relays, want 0 or more", ErrConfig, c.Relays)
	case c.Limits.Data < 0 || c.Limits.Duration < 0:
		return fmt.Errorf("%w: relay limits %d bytes, %v: want 0 (no limit) or more", ErrConfig, c.Limits.Data, c.Limits.Duration)
	}
	return nil
}

// Path is how two peers reach each other.
type Path uint8

const (
	// Direct is a connection between two peers of which one at least is
	// public.
	Direct Path = iota
	// Punched is a direct connection between two NATed peers whose hole
	// punch succeeded.
	Punched
	// Relayed is a connection through a relay, between two NATed peers
	// whose punch failed.
	Relayed
	// Unreachable is a pair of NATed peers whose punch failed, in a run
	// without relays: they cannot talk.
	Unreachable
)

// String returns "direct", "punched", "relayed" or "unreachable".
func (p Path) String() string {
	switch p {
	case Punched:
		return "punched"
	case Relayed:
		return "relayed"
	case Unreachable:
		return "unreachable"
	}
	return "direct"
}

// Model is the NATs and relays of one run of n peers. It is immutable, so
// safe for concurrent use.
type Model struct {
	cfg   Config
	seed  uint64
	nated []bool
	relay []int // the relay of each NATed peer's reservation; -1 for public peers
}

// New draws which of n peers sit behind NATs and the relay of each, from
// seed; the punches are drawn per pair when asked (Punched).
func New(cfg Config, n int, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("%w: %d peers", ErrConfig, n)
	}
	m := &Model{cfg: cfg, seed: seed, nated: make([]bool, n), relay: make([]int, n)}
	rng := rand.New(rand.NewPCG(seed, 0x6e6174))
	k := int(math.Round(cfg.Share * float64(n)))
	for _, i := range rng.Perm(n)[:k] {
		m.nated[i] = true
	}
	for i := range m.relay {
		m.relay[i] = -1
		if m.nated[i] && cfg.Relays > 0 {
			m.relay[i] = rng.IntN(cfg.Relays)
		}
	}
	return m, nil
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// NATed says whether peer i sits behind a NAT.
func (m *Model) NATed(i int) bool { return m.nated[i] }

// CountNATed returns the number of peers behind NATs.
func (m *Model) CountNATed() int {
	k := 0
	for _, b := range m.nated {
		if b {
			k++
		}
	}
	return k
}

// Punched says whether the hole punch between NATed peers a and b
// succeeds: a draw of its own for every unordered pair, from the seed and
// the pair alone (so Punched(a, b) == Punched(b, a), whatever else was
// asked before). It is false for a peer with itself.
func (m *Model) Punched(a, b int) bool {
	if a == b {
		return false
	}
	lo, hi := uint64(min(a, b)), uint64(max(a, b))
	r := rand.New(rand.NewPCG(m.seed^0x70756e6368, lo<<32|hi))
	return r.Float64() < m.cfg.Punch
}

// Path says how peers a and b reach each other.
func (m *Model) Path(a, b int) Path {
	switch {
	case !m.nated[a] || !m.nated[b]:
		return Direct
	case m.Punched(a, b):
		return Punched
	case m.cfg.Relays > 0:
		return Relayed
	}
	return Unreachable
}

// Relay returns the relay that carries the circuit of a and b (that of
// the one of them with the larger number), or -1 if their path is not
// Relayed.
func (m *Model) Relay(a, b int) int {
	if m.Path(a, b) != Relayed {
		return -1
	}
	return m.relay[max(a, b)]
}
