package transitstub

import (
	"fmt"
	"math/rand/v2"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// SwarmConfig configures RunSwarm.
type SwarmConfig struct {
	Filter FilterConfig
	// Blocks is the number of source blocks of the file (kk); 0 means 5000.
	Blocks int
	// Share is the fraction of Blocks each peer starts with (complete: that many
	// random source blocks; Byers: that many random coded blocks); 0 means 0.25.
	Share float64
	// Method is the reconciliation protocol; 0 means complete. The swarm models
	// complete, byers, bitfield and ccbf; iblt (several round trips an exchange)
	// runs in RunTable4 only.
	Method reconcile.Method
	// Seed drives the initial shares, the neighbour order and the start jitter.
	Seed uint64
	// StartJitterMS spreads the peers' first reconciliations over [0, StartJitterMS);
	// 0 means 100.
	StartJitterMS float64
	// MaxReconciliations stops a run that does not converge; 0 means 1000 per peer.
	MaxReconciliations int
	// DecodeReps is the number of timed runs of the decode measurement (default 3).
	DecodeReps int
	// OneSeed starts one random peer with the whole file (every coded block
	// for Byers) and the others empty, as testnet's one-seed scenario; Share
	// is then unused.
	OneSeed bool
	// Up and Down are every peer's access-link capacities in bytes per second
	// (0: no cap), Classes heterogeneous ones (replacing Up and Down), SeedUp
	// the seed's upload when positive (OneSeed). With any of them set, a
	// message's time is its access links' (Links: each peer's uplink and
	// downlink shared by all its transfers) plus the route's delay, and the
	// route's bottleneck bandwidth is not used.
	Up, Down float64
	Classes  []AccessClass
	SeedUp   float64
	// Parallel is the number of exchanges a peer runs at once, each with a
	// different neighbour (package peer's sources); 0 means 1.
	Parallel int
	// MaxBlocks caps the blocks one exchange carries (package peer's window):
	// the fetcher takes a random MaxBlocks of those offered, leaving out the
	// blocks it already awaits from another exchange; 0 means no cap.
	MaxBlocks int
	// RarestFirst makes that choice the MaxBlocks blocks held by the fewest of
	// the fetcher's neighbours (exact counts, as from bitfields; ties at
	// random) instead of a random MaxBlocks: a model of what rarest-first
	// block choice would gain.
	RarestFirst bool
	// RarityFromFilters makes RarestFirst count, per block, the minimum of
	// its counters in the sum of the neighbours' CBFs (cbfalgebra.Tally, T8)
	// instead of the neighbours holding it: rarity from the filters alone,
	// never below the exact count. Complete, ccbf and bitfield only (their
	// peers keep CBFs).
	RarityFromFilters bool
	// LeastServed makes the sender rank the blocks it offers by how often it
	// has sent each (fewest first, before rarity and ties at random): a model
	// of a seed that spreads its upload over the file ("super-seeding").
	LeastServed bool
	// UploadSlots, when positive, is how many exchanges a peer serves blocks
	// to at once (BitTorrent's unchoke slots): a peer asked while all are
	// taken sends nothing, and the fetcher moves on to its next neighbour.
	UploadSlots int
	// Watch models package peer's fetches as they are (see watch.go): one
	// reconciliation with each of Parallel sources keeps a watch, over
	// which each side hears of the other's new blocks a one-way delay after
	// they are stored; the fetcher asks each source for up to MaxBlocks
	// blocks (its window; required), rarest first with RarestFirst; a
	// source serves UploadSlots fetchers at once (0: package peer's 2) and
	// answers others busy; a seed (OneSeed) super-seeds. Without it, peers
	// reconcile again and again in rounds, as they did before watches.
	// Complete, bitfield and ccbf only.
	Watch bool
	// NoSuperSeed makes the watch model's seed offer every block to every
	// watcher and answer busy as any other source (testnet's
	// --super-seed=false) instead of super-seeding: which of its blocks
	// leave it first is then the fetchers' choice (RarestFirst).
	NoSuperSeed bool
	// SeedLeaves makes the watch model's seed (OneSeed) leave once every
	// block is held by a fetcher (testnet's --seed-leaves): its watches
	// end, the blocks still on its uplink are lost, and the fetchers finish
	// from each other.
	SeedLeaves bool
	// NoDelay makes the watch model's routes cross in no time, as the
	// testnet's --latency none: only the access links take time.
	NoDelay bool
	// FreeControl makes the watch model's messages other than filters and
	// blocks (haves, requests, answers, offers, busy replies) cross in no
	// time while blocks still take the route's delay: the best any scheme
	// of announcing blocks (pushing them, promising them before they are
	// in) could do with the same schedule.
	FreeControl bool
	// UploadRarest makes each source of the watch model send the blocks
	// asked of it one at a time, the one fewest of its watchers hold first
	// (known at once, the best case), instead of in the order asked: a
	// what-if of an upload scheduler across a peer's streams (package peer
	// sends each stream's blocks in the order asked).
	UploadRarest bool
	// Central, when set, replaces the peers' protocol by the central
	// schedule (see central.go): a scheduler that knows every peer's blocks
	// and every block on its way, whose decisions cost nothing, keeps every
	// uplink sending the rarest block it holds to the neediest peer lacking
	// it. Not a protocol but a schedule on the same links and latencies:
	// what the best protocol could come close to. Needs OneSeed and access
	// links; NoDelay applies.
	Central *CentralSchedule
	// Trees, when positive, replaces the peers' protocol by pushes down
	// that many stripe trees (see trees.go): a protocol that needs no
	// knowledge of which blocks other peers hold, each fetcher an inner
	// node of one tree and a leaf of the others; TreesByDelay places each
	// fetcher under the parent it would hear from first, where the trees
	// are otherwise breadth first in random order. Needs OneSeed and access
	// links; NoDelay applies.
	Trees        int
	TreesByDelay bool
}

// SeedPeer returns the peer, of peers, that seeds a one-seed swarm
// (SwarmConfig.OneSeed) run with seed: RunSwarm's choice and package
// testnet's, so that a model and the testnet with the same seed start from
// the same peer of the same overlay. (Where the seed sits decides how soon
// its neighbours hear from it: with a different seed peer for the same seed,
// the watch model's 200-peer median had been 11 % above the testnet's.)
func SeedPeer(seed uint64, peers int) int {
	return rand.New(rand.NewPCG(seed, seed^0x7465_73746e6574)).IntN(peers) // "testnet"
}

// model names what RunSwarm times (SwarmResult.Model).
func (c *SwarmConfig) model() string {
	if c.Trees > 0 {
		m := fmt.Sprintf("trees-%d", c.Trees)
		if c.TreesByDelay {
			m += "+by-delay"
		}
		if c.NoDelay {
			m += "+no-delay"
		}
		return m
	}
	if c.Central != nil {
		if c.NoDelay {
			return c.Central.name() + "+no-delay"
		}
		return c.Central.name()
	}
	if !c.Watch {
		return "rounds"
	}
	m := "watch"
	for _, o := range []struct {
		on   bool
		name string
	}{{c.NoDelay, "+no-delay"}, {c.FreeControl, "+free-control"}, {c.UploadRarest, "+upload-rarest"}, {c.NoSuperSeed, "+no-super-seed"}, {c.SeedLeaves, "+seed-leaves"}} {
		if o.on {
			m += o.name
		}
	}
	return m
}

// choice names the block choice of windowed exchanges (SwarmResult.Choice).
func (c *SwarmConfig) choice() string {
	switch {
	case c.RarityFromFilters:
		return "rarest-filters"
	case c.RarestFirst:
		return "rarest-exact"
	}
	return "random"
}

// HasAccessLinks reports whether c caps the peers' access links (Up, Down,
// Classes or SeedUp), as T* and the central schedule need.
func (c *SwarmConfig) HasAccessLinks() bool {
	return c.Up > 0 || c.Down > 0 || len(c.Classes) > 0 || c.SeedUp > 0
}

func (c *SwarmConfig) defaults(peers int) {
	if c.Filter == (FilterConfig{}) {
		c.Filter = PaperFilter()
	}
	if c.Blocks == 0 {
		c.Blocks = 5000
	}
	if c.Share == 0 {
		c.Share = 0.25
	}
	if c.Method == 0 {
		c.Method = reconcile.Complete
	}
	if c.StartJitterMS == 0 {
		c.StartJitterMS = 100
	}
	if c.Parallel == 0 {
		c.Parallel = 1
	}
	if c.MaxReconciliations == 0 {
		c.MaxReconciliations = 1000 * peers * c.Parallel
	}
	if c.DecodeReps == 0 {
		c.DecodeReps = 3
	}
}

// SwarmResult summarises a swarm run.
type SwarmResult struct {
	Method reconcile.Method `json:"method"`
	// Choice is how a windowed fetcher chose its blocks: "random",
	// "rarest-exact" or "rarest-filters" (RarestFirst, RarityFromFilters).
	Choice string `json:"choice"`
	// Model is what was timed: "rounds" (repeated reconciliations),
	// "watch" (SwarmConfig.Watch), followed by "+no-delay",
	// "+free-control", "+upload-rarest", "+no-super-seed" and
	// "+seed-leaves" for those options; "central"
	// (SwarmConfig.Central) followed by "+lag", "+neighbours",
	// "+random-receiver" or "+nearest-receiver", "+random-blocks" and
	// "+no-delay"; or "trees-K" (SwarmConfig.Trees) followed by "+by-delay"
	// and "+no-delay".
	Model  string `json:"model"`
	Peers  int    `json:"peers"`
	Blocks int    `json:"blocks"`
	// Completed is the number of peers that ended holding the whole file (with
	// OneSeed: of the Fetchers, the peers other than the seed).
	Completed int `json:"completed"`
	// Fetchers is the number of peers that started without the file: all
	// but the seed with OneSeed, else all the peers.
	Fetchers int `json:"fetchers"`
	// FileBytes is Blocks times the block size.
	FileBytes int64 `json:"file_bytes"`
	// TStarMS is the fluid lower bound T* (FluidBound) in ms, with OneSeed
	// and access links (else 0); MedianTStar, P95TStar and MaxTStar the
	// completion times over it.
	TStarMS     float64 `json:"tstar_ms"`
	MedianTStar float64 `json:"median_over_tstar,omitempty"`
	P95TStar    float64 `json:"p95_over_tstar,omitempty"`
	MaxTStar    float64 `json:"max_over_tstar,omitempty"`
	// SeedSentBytes is what the seed sent (OneSeed, access links); UploadUse
	// the bytes all peers sent over what their capped uplinks could have
	// carried until the last completion (0 if any is uncapped); as testnet's.
	SeedSentBytes int64   `json:"seed_sent_bytes,omitempty"`
	UploadUse     float64 `json:"upload_use,omitempty"`
	// SeedOutMS is when the seed's uplink had sent every block at least once
	// (OneSeed; the watch model, the central schedule and the trees): no
	// peer can complete before it plus a delay, and T* takes it to be the
	// file over the seed's upload.
	SeedOutMS float64 `json:"seed_out_ms,omitempty"`
	// SeedLeftMS is when the seed left (SwarmConfig.SeedLeaves), 0 if it
	// did not.
	SeedLeftMS float64 `json:"seed_left_ms,omitempty"`
	// Completion time per peer, ms from the start.
	MedianMS float64 `json:"median_ms"`
	P95MS    float64 `json:"p95_ms"`
	MaxMS    float64 `json:"max_ms"`
	MeanMS   float64 `json:"mean_ms"`
	// Reconciliations is the number of filter/blocks exchanges; MeanRounds per peer.
	Reconciliations int     `json:"reconciliations"`
	MeanRounds      float64 `json:"mean_rounds"`
	// Bytes on the wire by message type ("filter", "blocks").
	Bytes map[string]int64 `json:"bytes"`
	// BlocksSent counts blocks carried by blocks messages; RedundantBlocks those the
	// receiver already held; MissedBlocks blocks of S_B \ S_A a Bloom filter false
	// positive withheld (Byers).
	BlocksSent      int64 `json:"blocks_sent"`
	RedundantBlocks int64 `json:"redundant_blocks"`
	MissedBlocks    int64 `json:"missed_blocks"`
	// Events is the number of simulation events; WallSeconds the run's real time.
	Events      int     `json:"events"`
	WallSeconds float64 `json:"wall_seconds"`
	// Completions are the per-peer completion times in ms (peer order).
	Completions []float64 `json:"-"`
}
