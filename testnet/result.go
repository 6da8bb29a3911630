package testnet

import (
	"runtime/metrics"
	"sync"
	"time"

	"github.com/reconcile-p2p/reconcile/internal/cputime"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/testnet/natmodel"
	"github.com/reconcile-p2p/reconcile/testnet/update"
)

// Result is the outcome of one run.
type Result struct {
	Method string `json:"method"`
	// Choice is the fetches' block choice (Config.Choice).
	Choice string `json:"choice"`
	// Dir is the folder of the run's stores (under Config.Dir).
	Dir        string  `json:"dir"`
	Transport  string  `json:"transport"`
	Latency    string  `json:"latency"`
	Neighbours string  `json:"neighbours"`
	Nodes      int     `json:"nodes"`
	Hold       float64 `json:"hold"`
	Seed       uint64  `json:"seed"`
	// Root is the root id of the file.
	Root string `json:"root"`
	// Blocks, BlockSize and Bytes describe the file (BlockSize is the
	// average block of content-defined blocks, whose rule Chunking gives);
	// Units is the number of units reconciled (blocks, or coded blocks for
	// Byers).
	Blocks    int    `json:"blocks"`
	BlockSize int    `json:"block_size"`
	Chunking  string `json:"chunking,omitempty"`
	Bytes     int64  `json:"bytes"`
	Units     int    `json:"units"`
	// Update holds the update scenario's figures (Config.Update; nil
	// otherwise): the file is then version 2, and T* is that of the bytes
	// of its blocks that version 1 lacks.
	Update *update.Figures `json:"update,omitempty"`
	// NAT holds the NATs' and relays' figures (Config.NAT; nil without):
	// the NATed peers, the neighbour pairs by path, what the relays carried
	// (NAT.Circuits.Bytes) and its share of the block bytes
	// (NAT.RelayedShare), and what the fetches saw come over relays.
	NAT *natmodel.Figures `json:"nat,omitempty"`
	// Links is the number of neighbour pairs; MeanDegree the mean number of
	// neighbours per peer; MeanLatencyMS the mean one-way latency of a link.
	Links         int     `json:"links"`
	MeanDegree    float64 `json:"mean_degree"`
	MeanLatencyMS float64 `json:"mean_latency_ms"`
	// BandwidthBps is the cap per link in bytes per second (0: none).
	BandwidthBps float64 `json:"bandwidth_bps"`
	// UpBps and DownBps are the peers' access-link capacities in bytes per
	// second (0: no cap), or Classes their classes; SeedUpBps is the seed's
	// upload capacity (one-seed scenario).
	UpBps     float64          `json:"up_bps"`
	DownBps   float64          `json:"down_bps"`
	Classes   []ts.AccessClass `json:"classes,omitempty"`
	SeedUpBps float64          `json:"seed_up_bps"`
	// TStarS is the fluid lower bound T* on the completion time, seconds
	// (transitstub.FluidBound of the file size, or of the new blocks' bytes
	// with Config.Update, the seed's upload and the fetchers' links); 0 when it does not apply (no access links, or peers
	// starting with a share). MedianTStar, P95TStar and MaxTStar are the
	// completion times over T*.
	TStarS      float64 `json:"tstar_s"`
	MedianTStar float64 `json:"median_over_tstar,omitempty"`
	P95TStar    float64 `json:"p95_over_tstar,omitempty"`
	MaxTStar    float64 `json:"max_over_tstar,omitempty"`
	// SeedSentBytes is what the seed wrote through its uplink (access links,
	// one seed); over the file size it is the number of copies the seed
	// served. UploadUse is the bytes all peers wrote through their uplinks
	// over what their capped uplinks could have carried until the last
	// completion (0 if any uplink is uncapped).
	SeedSentBytes int64   `json:"seed_sent_bytes,omitempty"`
	UploadUse     float64 `json:"upload_use,omitempty"`
	// SeedOutS is when the seed had sent every block at least once, in
	// seconds from the start of the fetches (one seed; not byers, whose
	// seed sends coded blocks): no fetcher can complete before it plus a
	// latency, and T* takes it to be the file over the seed's upload.
	SeedOutS float64 `json:"seed_out_s,omitempty"`
	// SeedLeftS is when the seed left (Config.SeedLeaves), in seconds of
	// the described network from the start of the fetches; 0 if it did not.
	SeedLeftS float64 `json:"seed_left_s,omitempty"`
	// TimeScale is the time scale the run used (Config.TimeScale, or the
	// one AutoTimeScale picked): completion times are in the described
	// network's seconds, RunSeconds in this machine's. CPUUse is the
	// process's CPU time during the fetches over what the machine's cores
	// could give in that time: near 1, the run measured the machine more
	// than the protocol (raise the time scale).
	TimeScale float64 `json:"time_scale"`
	CPUUse    float64 `json:"cpu_use"`
	// SchedP99S is the 99th percentile of the time the process's
	// goroutines waited, runnable, for a CPU during the fetches, in this
	// machine's seconds (over TimeScale: the delay it added to messages in
	// the described network, whose one-way delays are hundreds of
	// milliseconds). Other work on the machine shows here first.
	SchedP99S float64 `json:"sched_p99_s"`
	// Fetchers is the number of honest peers that had to end with the whole
	// file: those that started without it or joined late, less the peers
	// that left for good (without churn and liars, every peer but the
	// seed). Completed counts those that did; Checked the peers whose file
	// was re-hashed (the seed and the Fetchers); Identical those whose file
	// re-hashed to Root (-1 if not verified).
	Fetchers  int `json:"fetchers"`
	Completed int `json:"completed"`
	Checked   int `json:"checked"`
	Identical int `json:"identical"`
	// Churn is the churn asked for (Config.Churn). Left counts the peers
	// that left mid-fetch, Rejoined those of them that came back, LateJoined
	// the peers that joined late; ResumedBlocks the verified blocks the
	// rejoining peers found in their stores on coming back. StayedMaxS is
	// the last completion of the peers that never left (late joiners
	// included; a peer that came back counts its pause), StayedMaxTStar
	// that over T*. BackMaxS is the last completion of the peers that came
	// back less the time each was away (the time it spent in the swarm: the
	// churn brings some back after 2x T* has passed), BackMaxTStar that
	// over T*.
	Churn          Churn   `json:"churn"`
	Left           int     `json:"left"`
	Rejoined       int     `json:"rejoined"`
	LateJoined     int     `json:"late_joined"`
	ResumedBlocks  int64   `json:"resumed_blocks"`
	StayedMaxS     float64 `json:"stayed_max_s,omitempty"`
	StayedMaxTStar float64 `json:"stayed_max_over_tstar,omitempty"`
	BackMaxS       float64 `json:"back_max_s,omitempty"`
	BackMaxTStar   float64 `json:"back_max_over_tstar,omitempty"`
	// Liars counts the lying peers, CorruptLiars and PhantomLiars of each
	// kind (LiarKind). LiedCorrupt and LiedMissing count the block frames
	// they corrupted, or answered "missing" for a block they had offered.
	// CorruptReceived counts the corrupt blocks the honest fetches received
	// (and discarded), as reported by their fetch events (a peer's corrupt
	// blocks after its third are rejected without one); BackCorrupt the
	// blocks the peers that came back rejected after their return (their
	// fetches' Summary.Rejected; a returner's fetch bans again the liars its
	// store's ban file names: peer.BanFile); Bans the peers they banned,
	// HonestBans those of them that were honest (should be 0).
	Liars           int   `json:"liars"`
	CorruptLiars    int   `json:"corrupt_liars"`
	PhantomLiars    int   `json:"phantom_liars"`
	LiedCorrupt     int64 `json:"lied_corrupt"`
	LiedMissing     int64 `json:"lied_missing"`
	CorruptReceived int64 `json:"corrupt_received"`
	BackCorrupt     int64 `json:"back_corrupt"`
	Bans            int64 `json:"bans"`
	HonestBans      int64 `json:"honest_bans"`
	// Restarts counts the honest fetches that stored no block for
	// Config.StuckAfter and were started again (resuming their stores).
	Restarts int64 `json:"restarts"`
	// Completion time of the fetchers, seconds from the start of the fetches.
	MedianS float64 `json:"median_s"`
	P95S    float64 `json:"p95_s"`
	MaxS    float64 `json:"max_s"`
	MeanS   float64 `json:"mean_s"`
	// Completions are the fetchers' completion times in seconds, sorted.
	Completions []float64 `json:"completions_s"`
	// Wire is the payload bytes written on streams, by message type (WireFilter, ...).
	Wire map[string]int64 `json:"wire_bytes"`
	// FilterBytes and BlockBytes are Wire's filter and blocks counts;
	// FilterShare is FilterBytes / (FilterBytes + BlockBytes).
	FilterBytes int64   `json:"filter_bytes"`
	BlockBytes  int64   `json:"block_bytes"`
	FilterShare float64 `json:"filter_share"`
	// BlocksReceived counts the units received by the fetches; Redundant those
	// already held on arrival; Missed the units an answering peer held, the
	// fetcher lacked and the answer did not offer; FalseOffers the offered
	// units the fetcher already held; Rejected units that failed verification.
	BlocksReceived int64 `json:"blocks_received"`
	Redundant      int64 `json:"redundant_blocks"`
	Missed         int64 `json:"missed_blocks"`
	FalseOffers    int64 `json:"false_offers"`
	Rejected       int64 `json:"rejected_blocks"`
	// Pushed counts the blocks that came down the stripe trees
	// (Config.Trees) rather than fetched; Adopted the orphans adopted in
	// them (a peer whose parent left or lied, package peer's ProtoAdopt).
	Pushed  int64 `json:"pushed_blocks,omitempty"`
	Adopted int64 `json:"adopted,omitempty"`
	// Sessions is the number of reconciliation answers audited; Offered the
	// units they offered.
	Sessions int64 `json:"sessions"`
	Offered  int64 `json:"offered"`
	// DecodeSeconds is the total erasure-decoding time of the fetchers (Byers).
	DecodeSeconds float64 `json:"decode_seconds,omitempty"`
	// PeakMemMiB is the peak of the memory the Go runtime held from the OS and
	// had not returned, during the run (sampled every 50 ms).
	PeakMemMiB float64 `json:"peak_mem_mib"`
	// SetupSeconds covers the topology, the file, the stores and the hosts;
	// RunSeconds the fetches; VerifySeconds the re-hashing.
	SetupSeconds  float64 `json:"setup_seconds"`
	RunSeconds    float64 `json:"run_seconds"`
	VerifySeconds float64 `json:"verify_seconds"`
	// Errors are the first errors of failed fetches or verifications.
	Errors []string `json:"errors,omitempty"`
}

// sampleMemory records the peak of the memory the runtime holds from the OS,
// less what it has returned (about its resident size), into *peak (MiB) until the returned function is called.
func sampleMemory(clk clock.Clock, peak *float64) (stop func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	read := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[1].Value.Kind() == metrics.KindUint64 {
			*peak = max(*peak, float64(sample[0].Value.Uint64()-sample[1].Value.Uint64())/(1<<20))
		}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := clk.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-quit:
				return
			case <-t.Chan():
			}
		}
	}()
	return func() { close(quit); wg.Wait(); read() }
}

// quantile returns the q-quantile of sorted xs (nearest rank), 0 if empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// cpuTime returns the CPU time (user and system) the process has used, 0
// where the platform cannot tell (CPUUse is then 0).
func cpuTime() time.Duration {
	d, _ := cputime.Self()
	return d
}
