package testnet

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrConfig means a Config field is out of range.
	ErrConfig = errors.New("testnet: invalid configuration")
	// ErrIncomplete means some peers did not end with the whole file, or a
	// peer's file did not re-hash to the seed's root id.
	ErrIncomplete = errors.New("testnet: not every peer ended with the file")
	// ErrRate means a rate string could not be parsed.
	ErrRate = errors.New("testnet: bad rate")
)

// Transport is how the peers are connected.
type Transport uint8

const (
	// TransportMock is go-libp2p's in-process mock network (p2p/net/mock) with
	// per-link latency and bandwidth.
	TransportMock Transport = iota
	// TransportTCP is real loopback TCP (Noise/TLS, yamux), without added latency.
	TransportTCP
)

// String returns "mock" or "tcp".
func (t Transport) String() string {
	if t == TransportTCP {
		return "tcp"
	}
	return "mock"
}

// ParseTransport parses "mock" or "tcp".
func ParseTransport(s string) (Transport, error) {
	switch strings.ToLower(s) {
	case "mock", "":
		return TransportMock, nil
	case "tcp":
		return TransportTCP, nil
	}
	return 0, fmt.Errorf("%w: transport %q (want mock or tcp)", ErrConfig, s)
}

// Latency is how the latency of a link between two peers is chosen.
type Latency uint8

const (
	// LatencyTransitStub sets a link's latency to the underlay's shortest-path
	// delay between the two peers' routers.
	LatencyTransitStub Latency = iota
	// LatencyNone gives every link zero latency.
	LatencyNone
)

// String returns "transitstub" or "none".
func (l Latency) String() string {
	if l == LatencyNone {
		return "none"
	}
	return "transitstub"
}

// ParseLatency parses "transitstub" or "none".
func ParseLatency(s string) (Latency, error) {
	switch strings.ToLower(s) {
	case "transitstub", "transit-stub", "":
		return LatencyTransitStub, nil
	case "none", "0":
		return LatencyNone, nil
	}
	return 0, fmt.Errorf("%w: latency %q (want transitstub or none)", ErrConfig, s)
}

// Neighbours is how a peer's neighbours are chosen.
type Neighbours uint8

const (
	// NeighboursChord are a peer's Chord fingers and successor list.
	NeighboursChord Neighbours = iota
	// NeighboursRandom are Degree random other peers.
	NeighboursRandom
)

// String returns "chord" or "random".
func (n Neighbours) String() string {
	if n == NeighboursRandom {
		return "random"
	}
	return "chord"
}

// ParseNeighbours parses "chord" or "random".
func ParseNeighbours(s string) (Neighbours, error) {
	switch strings.ToLower(s) {
	case "chord", "":
		return NeighboursChord, nil
	case "random":
		return NeighboursRandom, nil
	}
	return 0, fmt.Errorf("%w: neighbours %q (want chord or random)", ErrConfig, s)
}

// Progress is a snapshot of a running testnet, given to Config.Progress.
type Progress struct {
	// Done and Fetchers count the peers that hold the whole file and the peers
	// that started without it.
	Done, Fetchers int
	// Blocks counts the blocks (or coded blocks) stored by all fetches so far.
	Blocks int64
	// Elapsed is the time since the fetches started.
	Elapsed time.Duration
}

// Config configures Run. Zero fields take the defaults documented on each.
type Config struct {
	// Nodes is the number of peers. Default 200.
	Nodes int
	// Size is the size of the file in bytes. Default 16 MiB.
	Size int64
	// BlockSize is the block size. Default chunker.DefaultBlockSize (256 KiB).
	BlockSize int
	// Hold is the share of the units each peer starts with, in [0, 1]; 0 (the
	// default) means one seed with the whole file and Nodes−1 empty peers.
	Hold float64
	// Method is the reconciliation method: any of reconcile.AllMethods.
	// Default reconcile.Complete.
	Method reconcile.Method
	// Byers sets the Reed–Solomon code of the Byers method (peer's defaults).
	Byers peer.ByersParams
	// Transport connects the peers. Default TransportMock.
	Transport Transport
	// Latency chooses link latencies on the mock network. Default
	// LatencyTransitStub.
	Latency Latency
	// Bandwidth caps each link of the mock network, in bytes per second shared
	// by both directions; 0 (the default) means no cap.
	Bandwidth float64
	// Topology are the Transit-Stub parameters. Default transitstub.Paper().
	Topology ts.Params
	// Neighbours chooses whom a peer may connect to. Default NeighboursChord.
	Neighbours Neighbours
	// Successors is the Chord successor-list length. Default 8 (as sim swarm).
	Successors int
	// Degree caps a peer's Chord neighbours (fingers first, then successors)
	// when positive, and is the number of random neighbours (default 8).
	Degree int
	// Seed drives the topology, the overlay, the file, the holdings and the
	// choice of the seed peer. Default 1.
	Seed uint64
	// Dir is the folder under which every peer's store is made (required; Run
	// creates one sub-folder per run and peer and leaves them there).
	Dir string
	// Timeout bounds the fetches. Default 10 minutes.
	Timeout time.Duration
	// Window is package peer's per-source window of requested blocks. Default
	// peer's (16).
	Window int
	// MaxSources bounds the peers one fetch downloads from at once (package
	// peer's WithMaxSources). Default 8, not package peer's 32: every stream in
	// flight holds a few block buffers, and with 200 peers in one process 32
	// sources each hold several GiB when every peer serves at once (--hold).
	MaxSources int
	// SkipVerify skips re-hashing every peer's file after the run; by default
	// each is re-hashed and its root id compared with the seed's
	// (Result.Identical).
	SkipVerify bool
	// Progress, when set, is called about every 200 ms during the fetches.
	Progress func(Progress)
	// Logger receives the peers' logs. Default: discard.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Nodes == 0 {
		c.Nodes = 200
	}
	if c.Size == 0 {
		c.Size = 16 << 20
	}
	if c.BlockSize == 0 {
		c.BlockSize = chunker.DefaultBlockSize
	}
	if c.Method == 0 {
		c.Method = reconcile.Complete
	}
	if c.Topology == (ts.Params{}) {
		c.Topology = ts.Paper()
	}
	if c.Successors == 0 {
		c.Successors = 8
	}
	if c.Degree == 0 && c.Neighbours == NeighboursRandom {
		c.Degree = 8
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.MaxSources == 0 {
		c.MaxSources = 8
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Nodes < 2:
		return fmt.Errorf("%w: %d nodes, need at least 2", ErrConfig, c.Nodes)
	case c.Size < 1:
		return fmt.Errorf("%w: file size %d", ErrConfig, c.Size)
	case c.BlockSize < chunker.MinBlockSize || c.BlockSize > chunker.MaxBlockSize:
		return fmt.Errorf("%w: block size %d not in [%d, %d]", ErrConfig, c.BlockSize, chunker.MinBlockSize, chunker.MaxBlockSize)
	case !(c.Hold >= 0 && c.Hold <= 1):
		return fmt.Errorf("%w: hold %g not in [0, 1]", ErrConfig, c.Hold)
	case !c.Method.Valid():
		return fmt.Errorf("%w: method %v", ErrConfig, c.Method)
	case c.Method == reconcile.Byers && c.Size > peer.MaxByersBytes:
		return fmt.Errorf("%w: byers keeps coded blocks in memory: size %d over %d", ErrConfig, c.Size, peer.MaxByersBytes)
	case c.Bandwidth < 0 || math.IsNaN(c.Bandwidth) || math.IsInf(c.Bandwidth, 0):
		return fmt.Errorf("%w: bandwidth %g", ErrConfig, c.Bandwidth)
	case c.Degree < 0 || c.Successors < 0:
		return fmt.Errorf("%w: degree %d, successors %d", ErrConfig, c.Degree, c.Successors)
	case c.Neighbours == NeighboursRandom && c.Degree >= c.Nodes:
		return fmt.Errorf("%w: %d random neighbours among %d nodes", ErrConfig, c.Degree, c.Nodes)
	case c.Dir == "":
		return fmt.Errorf("%w: no Dir for the stores", ErrConfig)
	case c.Window < 0 || c.MaxSources < 0:
		return fmt.Errorf("%w: window %d, max sources %d", ErrConfig, c.Window, c.MaxSources)
	}
	return c.Topology.Validate()
}

// ParseRate parses a rate such as "10Mbit", "10Mbps", "1.5MB/s", "512KiB/s" or
// "250000" (bytes per second) and returns bytes per second. "0", "" and "none"
// mean no cap (0). Bit units (bit, kbit, Mbit, Gbit, or bps, kbps, Mbps, Gbps;
// any case) are decimal; byte units are B, kB, MB, GB (decimal) or KiB, MiB,
// GiB (binary), exactly so spelt, with or without "/s".
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.EqualFold(t, "none") {
		return 0, nil
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: no number", ErrRate, s)
	}
	unit := strings.TrimSuffix(strings.TrimSpace(t[i:]), "/s")
	mult, ok := byteUnits[unit]
	if !ok {
		mult, ok = bitUnits[strings.ToLower(unit)]
	}
	if !ok {
		return 0, fmt.Errorf("%w: %q: unknown unit %q", ErrRate, s, unit)
	}
	r := v * mult
	if math.IsInf(r, 0) {
		return 0, fmt.Errorf("%w: %q is too large", ErrRate, s)
	}
	return r, nil
}

// byteUnits and bitUnits are bytes per second per unit.
var (
	byteUnits = map[string]float64{"": 1, "B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
	bitUnits = map[string]float64{"bit": 1.0 / 8, "bps": 1.0 / 8,
		"kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8,
		"kbps": 1e3 / 8, "mbps": 1e6 / 8, "gbps": 1e9 / 8}
)
