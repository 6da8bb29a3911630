package testnet

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
	"github.com/reconcile-p2p/reconcile/testnet/natmodel"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrConfig means a Config field is out of range.
	ErrConfig = errors.New("testnet: invalid configuration")
	// ErrIncomplete means some peers did not end with the whole file, or a
	// peer's file did not re-hash to the seed's root id.
	ErrIncomplete = errors.New("testnet: not every peer ended with the file")
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
	// Fetchers counts the honest peers that must end with the whole file
	// (Result.Fetchers), Done those of them whose fetching has ended.
	Done, Fetchers int
	// Blocks counts the blocks (or coded blocks) stored by the honest
	// fetches so far.
	Blocks int64
	// Need is the blocks (or coded blocks) the honest fetches lacked when
	// the fetches started, in all, late joiners' included, and for a peer
	// that leaves for good up to the share it leaves at: Blocks ends about
	// there, a measure of the run's progress where Done stays near 0 until
	// the last seconds.
	Need int64
	// Elapsed is the time since the fetches started.
	Elapsed time.Duration
}

// Config configures Run. Zero fields take the defaults documented on each.
type Config struct {
	// Clock is the clock of the run's own timers and measurements: its
	// link model, progress, churn pauses and run times. Default the wall
	// clock. The peers run on the wall clock slowed by the time scale
	// (peer.WithTimeScale, a clock.Scaled), whatever Clock is.
	Clock clock.Clock
	// Nodes is the number of peers. Default 200.
	Nodes int
	// Size is the size of the file in bytes. Default 16 MiB.
	Size int64
	// BlockSize is the block size. Default chunker.DefaultBlockSize (256 KiB).
	BlockSize int
	// Chunking, when not zero, cuts the file into content-defined blocks by
	// that rule (chunker.WithChunking; chunker.DefaultChunking averages
	// about 121 KiB) instead of BlockSize's: a block method's only (not
	// Byers, whose code needs fixed-size blocks). Default: fixed-size.
	Chunking chunker.Chunking
	// Update, when positive, runs the update scenario (package
	// testnet/update): every fetching peer holds version 1, the run's file,
	// and the one seed (Hold 0) serves version 2, the file with Update of
	// its bytes (a share in (0, 1]) overwritten in UpdatePlaces places
	// spread evenly (update.Edit, from Seed). Each fetcher's store of
	// version 2, staged beside version 1 (as package peer's Fetch into an
	// older version), takes the blocks they share from version 1's file
	// (chunker.Store.Reuse) before the fetches start, and fetches the rest
	// from the swarm; version 2 replaces version 1 at its final name
	// (Store.Publish) once the fetches are over. T* and the completion
	// ratios are then those of the new blocks' bytes (Result.Update).
	// Block methods only, without churn, liars or stripe trees. Default 0:
	// every fetcher starts empty.
	Update float64
	// UpdatePlaces is the number of places Update's bytes are overwritten
	// in. Default 10.
	UpdatePlaces int
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
	// Up and Down are every peer's access-link capacities, bytes per second
	// shared by all its connections (upload: what it writes; download: what
	// is written to it), on top of the links' latency and Bandwidth; 0 (the
	// default) means no cap. Classes, when set, replaces them.
	Up, Down float64
	// Classes gives the peers heterogeneous access links: each class's share
	// of the peers (assigned at random from Seed) gets its Up and Down.
	Classes []ts.AccessClass
	// SeedUp, when positive, is the seed's upload capacity in the one-seed
	// scenario, instead of its class's.
	SeedUp float64
	// Topology are the Transit-Stub parameters. Default topology.Paper().
	Topology topology.Params
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
	// MaxSources bounds the peers one fetch downloads from and watches at
	// once (package peer's WithMaxSources). Default 16, not package peer's
	// 32, which would make nearly every Chord neighbour a source (24 on
	// average with 200 peers) for the machine's CPU to carry. In the
	// 200-peer run (20/100 Mbit/s, transit-stub latency) 16 took 2.16x T*,
	// 8 2.37x and 24 2.16x: a peer that few fetches watch has few to upload
	// to, and idles.
	MaxSources int
	// Choice is how the fetches choose which offered block to ask for first
	// (package peer's WithBlockChoice): rarest-first from their sources'
	// exact offers (the default), rarest-first from the sum of their
	// neighbours' filters, or random.
	Choice peer.BlockChoice
	// SuperSeed makes the one seed (Hold 0) super-seed (package peer's
	// WithSuperSeeding): each answer offers the few blocks it sent least
	// often, so it sends every block once before any twice. Default off.
	SuperSeed bool
	// SeedLeaves makes the one seed (Hold 0) leave the swarm (its service
	// closes) once it has sent every block at least once and every block
	// is stored by some other peer (Result.SeedLeftS): the fetchers then
	// complete from each other alone, as behind a BitTorrent super-seed
	// that leaves after its first copy. It is the case rarest-first is
	// meant for: a block's only copy must spread before its holder's
	// uplink is taken by common ones. Not with churn or liars (a block
	// stored only by a peer that leaves or lies would be lost), nor with
	// Byers.
	SeedLeaves bool
	// SkipVerify skips re-hashing every peer's file after the run; by default
	// each is re-hashed and its root id compared with the seed's
	// (Result.Identical).
	SkipVerify bool
	// Churn makes peers leave mid-fetch, come back and resume, and join late
	// (see Churn). Default: none. Not with the Byers method.
	Churn Churn
	// Liars is the share of the peers, never the seed, that lie (see
	// LiarKind), in [0, 1). They are left out of the completion and
	// byte-identical checks, and every unit is held by some honest peer.
	// Default 0. Not with the Byers method.
	Liars float64
	// LiarKind is what the liars do. Default LiarMixed.
	LiarKind LiarKind
	// StuckAfter is how long an honest fetch may go without storing a block
	// before it is cancelled and started again on its store (it resumes;
	// Result.Restarts counts these). Default 30 s.
	StuckAfter time.Duration
	// Progress, when set, is called about every 200 ms during the fetches.
	Progress func(Progress)
	// Logger receives the peers' logs. Default: discard.
	Logger *slog.Logger
	// TimeScale runs the network that many times slower than the one the
	// configuration describes (link rates divided by it, latencies times
	// it, every peer's timers stretched by it: package peer's
	// WithTimeScale), and reports every completion time in the described
	// network's seconds (divided by it). A machine that cannot move the
	// run's bytes as fast as the described network would (200 peers of 16
	// MiB at 20 Mbit/s: 3.2 GiB hashed and stored in about 7 s, some 25
	// CPU-seconds here) would otherwise measure its own CPU, not the
	// protocol. 0 picks one from the bytes and blocks to move, the sources
	// of a fetch, the time the network needs for them (T*) and the
	// machine's cores (AutoTimeScale); 1 runs in real time.
	TimeScale float64
	// Trees, when positive, gives the peers places in that many stripe
	// trees (stripes.Plan, every fetcher placed under the
	// parent it would hear from first; peer.Service.Push): the seed pushes
	// each block once to its stripe's root and every peer passes each block
	// it gains on to its children in that stripe, while the fetches ask
	// their sources only for the blocks of stripes whose pushes stopped
	// (RepairAfter): the repair of peers that leave or lie. It needs one
	// seed (Hold 0) and a block method.
	Trees int
	// Join, when positive, has the seed place the fetchers in that many
	// stripe trees as they join (peer.WithTrees, as reconcile seed
	// --trees does): no membership list, no delays; a placed pair that is
	// not neighbours yet is linked as the seed places it. It needs one
	// seed (Hold 0) and a block method, and excludes Trees.
	Join int
	// RepairAfter is peer.Stripes.RepairAfter with Trees (0: the package's
	// default), in the described network's time.
	RepairAfter time.Duration
	// NAT puts a share of the peers behind NATs, with hole punches between
	// two NATed peers that succeed with a probability drawn per pair, and
	// relays with go-libp2p's limits for the pairs whose punch fails (see
	// package testnet/natmodel; zero: no NAT; Punch has no default, 0
	// means every punch fails, natmodel.DefaultPunch is the field figure).
	// A relayed pair's bytes cross the relay's access links (down, then
	// up: the peers' Up and Down, the largest class's with Classes) and the
	// latencies to and from it, and its connections carry a circuit
	// address, so that package peer sees them relayed; without relays,
	// such a pair cannot talk. T* is the same as without NATs. Mock
	// transport only.
	NAT natmodel.Config
	// Trace, when set, receives a line for every unit a node sends or
	// pushes, every reconciliation it answers, and the run's plan (roles,
	// tree places) and events (see the format in package tracestats' Writer), for
	// studying a run's schedule afterwards (package testnet/tracestats
	// reads it).
	Trace io.Writer
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	if c.Nodes == 0 {
		c.Nodes = 200
	}
	if c.Size == 0 {
		c.Size = 16 << 20
	}
	if c.BlockSize == 0 {
		c.BlockSize = chunker.DefaultBlockSize
	}
	if c.UpdatePlaces == 0 {
		c.UpdatePlaces = 10
	}
	if c.Method == 0 {
		c.Method = reconcile.Complete
	}
	if c.Topology == (topology.Params{}) {
		c.Topology = topology.Paper()
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
		c.MaxSources = 16
	}
	if c.StuckAfter == 0 {
		c.StuckAfter = 30 * time.Second
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
	case !okRate(c.Up) || !okRate(c.Down) || !okRate(c.SeedUp):
		return fmt.Errorf("%w: access links up %g, down %g, seed up %g", ErrConfig, c.Up, c.Down, c.SeedUp)
	case c.Degree < 0 || c.Successors < 0:
		return fmt.Errorf("%w: degree %d, successors %d", ErrConfig, c.Degree, c.Successors)
	case c.Neighbours == NeighboursRandom && c.Degree >= c.Nodes:
		return fmt.Errorf("%w: %d random neighbours among %d nodes", ErrConfig, c.Degree, c.Nodes)
	case c.Dir == "":
		return fmt.Errorf("%w: no Dir for the stores", ErrConfig)
	case c.TimeScale < 0 || math.IsNaN(c.TimeScale) || math.IsInf(c.TimeScale, 0):
		return fmt.Errorf("%w: time scale %g", ErrConfig, c.TimeScale)
	case c.Window < 0 || c.MaxSources < 0 || c.StuckAfter < 0:
		return fmt.Errorf("%w: window %d, max sources %d, stuck after %v", ErrConfig, c.Window, c.MaxSources, c.StuckAfter)
	case !(c.Liars >= 0 && c.Liars < 1) || c.LiarKind > LiarPhantom:
		return fmt.Errorf("%w: liars %g (want [0, 1)), kind %d", ErrConfig, c.Liars, c.LiarKind)
	case (c.Liars > 0 || c.Churn != Churn{}) && c.Method == reconcile.Byers:
		return fmt.Errorf("%w: churn and liars need a block method, not byers", ErrConfig)
	case c.SeedLeaves && (c.Hold != 0 || c.Method == reconcile.Byers || c.Liars > 0 || c.Churn != Churn{}):
		return fmt.Errorf("%w: the seed leaving needs one seed (hold 0), a block method, and no churn or liars (a block only a leaver or a liar held would be lost)", ErrConfig)
	case c.Join < 0 || c.Join > 0 && (c.Hold != 0 || c.Method == reconcile.Byers || c.Trees > 0):
		return fmt.Errorf("%w: %d joined stripe trees: they need one seed (hold 0), a block method and no planned trees", ErrConfig, c.Join)
	case c.Trees < 0 || c.Trees > 0 && (c.Hold != 0 || c.Method == reconcile.Byers) || c.RepairAfter < 0:
		return fmt.Errorf("%w: %d stripe trees, repair after %v: they need one seed (hold 0) and a block method", ErrConfig, c.Trees, c.RepairAfter)
	case !c.Chunking.IsZero() && (c.Chunking.Check() != nil || c.Method == reconcile.Byers):
		return fmt.Errorf("%w: content-defined blocks %s: want a valid rule and a block method, not byers", ErrConfig, c.Chunking)
	case !(c.Update >= 0 && c.Update <= 1) || c.UpdatePlaces < 1:
		return fmt.Errorf("%w: update %g in %d places: want a share in [0, 1] and a place at least", ErrConfig, c.Update, c.UpdatePlaces)
	case c.Update > 0 && (c.Hold != 0 || c.Method == reconcile.Byers || c.Liars > 0 || c.Churn != Churn{} || c.Trees > 0):
		return fmt.Errorf("%w: the update scenario needs one seed (hold 0), a block method, and no churn, liars or stripe trees", ErrConfig)
	}
	if err := c.NAT.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.NAT.On() && c.Transport == TransportTCP {
		return fmt.Errorf("%w: NATs are modelled on the mock transport only, not tcp", ErrConfig)
	}
	if err := c.Churn.validate(); err != nil {
		return err
	}
	if err := ts.ValidateClasses(c.Classes); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c.Topology.Validate()
}

// Churn says which peers leave, come back and join late during a run. Each
// share is of the fetching peers (the peers other than the seed), rounded to
// a whole number of peers; they are drawn at random from Config.Seed among
// the honest fetchers, so the liars and the seed never churn.
//
// A leaving peer leaves mid-fetch, once it holds a random share (in [0.2,
// 0.8]) of the blocks: its service is closed (its fetch ends, its streams are
// reset, its store is closed) and its host is cut from all its neighbours.
// A rejoining one (a leaver) comes back after a pause as long again as it
// had run, times a random factor in [0.5, 1]: a new service on the same host
// and identity, relinked to its neighbours, reopens its store re-hashing the
// blocks on disk (as package peer's resume does), serves them and fetches
// the rest. A late joiner is cut off from the start and joins once the
// swarm's fetchers hold a random share (in [0.1, 0.5]) of the blocks they
// need. Completion times are from the start of the run for every peer.
type Churn struct {
	// Leave is the share of the fetching peers that leave mid-fetch.
	Leave float64 `json:"leave"`
	// Rejoin is the share of the fetching peers that leave and come back
	// (part of Leave, at most Leave).
	Rejoin float64 `json:"rejoin"`
	// Late is the share of the fetching peers that join late (none of
	// them leaves).
	Late float64 `json:"late"`
}

// ParseChurn parses a churn rate: "LEAVE" (a share in [0, 1]: that share of
// the fetching peers leave mid-run, half of them come back, and half as many
// again join late, so "0.1" is 10 % leave, 5 % rejoin and 5 % join late) or
// "LEAVE,REJOIN,LATE" with every share given. "", "0" and "none" mean no
// churn.
func ParseChurn(s string) (Churn, error) {
	t := strings.TrimSpace(s)
	if t == "" || t == "0" || strings.EqualFold(t, "none") {
		return Churn{}, nil
	}
	parts := strings.Split(t, ",")
	if len(parts) != 1 && len(parts) != 3 {
		return Churn{}, fmt.Errorf("%w: churn %q: want LEAVE or LEAVE,REJOIN,LATE (shares of the peers, e.g. 0.1 or 0.1,0.05,0.05)", ErrConfig, s)
	}
	v := make([]float64, len(parts))
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return Churn{}, fmt.Errorf("%w: churn %q: %q is not a number", ErrConfig, s, p)
		}
		v[i] = f
	}
	c := Churn{Leave: v[0], Rejoin: v[0] / 2, Late: v[0] / 2}
	if len(v) == 3 {
		c.Rejoin, c.Late = v[1], v[2]
	}
	if err := c.validate(); err != nil {
		return Churn{}, fmt.Errorf("%w (churn %q)", err, s)
	}
	return c, nil
}

// validate checks the shares: each in [0, 1], Rejoin at most Leave, Leave
// and Late together at most 1.
func (c Churn) validate() error {
	ok := func(x float64) bool { return x >= 0 && x <= 1 }
	if !ok(c.Leave) || !ok(c.Rejoin) || !ok(c.Late) || c.Rejoin > c.Leave || c.Leave+c.Late > 1 {
		return fmt.Errorf("%w: churn leave %g, rejoin %g, late %g: shares in [0, 1], rejoin at most leave, leave + late at most 1",
			ErrConfig, c.Leave, c.Rejoin, c.Late)
	}
	return nil
}

// String writes the churn as ParseChurn reads it, "none" if there is none.
func (c Churn) String() string {
	if c == (Churn{}) {
		return "none"
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return f(c.Leave) + "," + f(c.Rejoin) + "," + f(c.Late)
}

// LiarKind is what the liars of a run (Config.Liars) do.
type LiarKind uint8

const (
	// LiarMixed makes every other liar a LiarCorrupt and the rest
	// LiarPhantom (the first drawn is corrupt).
	LiarMixed LiarKind = iota
	// LiarCorrupt liars fetch like everyone else, but every block they send
	// has bytes flipped in its payload: it fails verification, and a
	// fetcher bans the liar after three.
	LiarCorrupt
	// LiarPhantom liars lie in their filters and offers: they claim the
	// whole file from the start (their filters and answers name every
	// block), but answer every block asked of them as missing.
	LiarPhantom
)

// String returns "mixed", "corrupt" or "phantom".
func (k LiarKind) String() string {
	switch k {
	case LiarCorrupt:
		return "corrupt"
	case LiarPhantom:
		return "phantom"
	}
	return "mixed"
}

// ParseLiarKind parses "mixed", "corrupt" or "phantom".
func ParseLiarKind(s string) (LiarKind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "mixed", "":
		return LiarMixed, nil
	case "corrupt":
		return LiarCorrupt, nil
	case "phantom":
		return LiarPhantom, nil
	}
	return 0, fmt.Errorf("%w: liar kind %q (want mixed, corrupt or phantom)", ErrConfig, s)
}

// The CPU a run costs here, measured on this 2-core machine with 200 peers
// of 16 MiB (8 and 16 sources, 256 KiB and 64 KiB blocks, with and without
// latency): about one CPU-second per cpuBytesPerSecond bytes of the file
// moved (sent, received, hashed and stored), and cpuPerBlockSource per block
// moved and source a fetch keeps (every block stored is announced to each
// watcher, whose fetch weighs it: 8 more sources cost about 17 CPU-seconds
// with 12,736 blocks moved). The second cost is taken to grow with the
// swarm (the heap the collector scans, the goroutines the scheduler runs):
// it is counted in full at cpuSwarm peers and in proportion below.
const (
	cpuBytesPerSecond = 150e6
	cpuPerBlockSource = 150e-6
	cpuSwarm          = 200
)

// cpuShare is the share of the machine's cores a run is sized to use (the
// rest is slack, for the bursts of a swarm and for other work).
const cpuShare = 0.5

// AutoTimeScale returns the time scale for a run of nodes peers that moves
// bytes of the file in blocks blocks to fetches of sources sources each (on
// average), over a network that needs tstar seconds for it at best (the
// fluid bound), on a machine with cores cores: the smallest whole scale at
// which the run, taking 1.5 tstar of the described network, keeps the
// machine's cores cpuShare busy; 1 when tstar is 0 (rates uncapped:
// nothing to keep pace with).
func AutoTimeScale(nodes int, bytes, blocks int64, sources, tstar float64, cores int) float64 {
	if tstar <= 0 || cores < 1 {
		return 1
	}
	swarm := min(1, float64(nodes)/cpuSwarm)
	need := float64(bytes)/cpuBytesPerSecond + float64(blocks)*max(sources, 1)*cpuPerBlockSource*swarm
	return max(1, math.Ceil(need/(float64(cores)*cpuShare*1.5*tstar)))
}
