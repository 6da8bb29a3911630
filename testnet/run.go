package testnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// Result is the outcome of one run.
type Result struct {
	Method     string  `json:"method"`
	Transport  string  `json:"transport"`
	Latency    string  `json:"latency"`
	Neighbours string  `json:"neighbours"`
	Nodes      int     `json:"nodes"`
	Hold       float64 `json:"hold"`
	Seed       uint64  `json:"seed"`
	// Root is the root id of the file.
	Root string `json:"root"`
	// Blocks, BlockSize and Bytes describe the file; Units is the number of
	// units reconciled (blocks, or coded blocks for Byers).
	Blocks    int   `json:"blocks"`
	BlockSize int   `json:"block_size"`
	Bytes     int64 `json:"bytes"`
	Units     int   `json:"units"`
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
	// (transitstub.FluidBound of the file size, the seed's upload and the
	// fetchers' links); 0 when it does not apply (no access links, or peers
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
	// rejoining peers found in their stores on coming back.
	Churn         Churn `json:"churn"`
	Left          int   `json:"left"`
	Rejoined      int   `json:"rejoined"`
	LateJoined    int   `json:"late_joined"`
	ResumedBlocks int64 `json:"resumed_blocks"`
	// Liars counts the lying peers, CorruptLiars and PhantomLiars of each
	// kind (LiarKind). LiedCorrupt and LiedMissing count the block frames
	// they corrupted, or answered "missing" for a block they had offered.
	// CorruptReceived counts the corrupt blocks the honest fetches received
	// (and discarded); Bans the peers they banned, HonestBans those of them
	// that were honest (should be 0).
	Liars           int   `json:"liars"`
	CorruptLiars    int   `json:"corrupt_liars"`
	PhantomLiars    int   `json:"phantom_liars"`
	LiedCorrupt     int64 `json:"lied_corrupt"`
	LiedMissing     int64 `json:"lied_missing"`
	CorruptReceived int64 `json:"corrupt_received"`
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

// fileName is the name of the file distributed in every store.
const fileName = "content.bin"

// node is one peer of a run.
type node struct {
	p     *peer.Service
	store *chunker.Store
	units holdings
	// fetch is set for the peers that fetch (the seed of the one-seed
	// scenario does not).
	fetch bool
	dir   string
	// seed is set for the seed of the one-seed scenario (it does not fetch).
	seed bool
}

// Run starts cfg.Nodes peers, distributes a file of cfg.Size random bytes among
// them as the scenario says and returns the figures. It fails with ErrConfig
// for bad settings and with ErrIncomplete (and the Result) when some peer did
// not end with a file that re-hashes to the root id.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Transport == TransportTCP {
		// Real sockets: no added latency or bandwidth cap.
		cfg.Latency, cfg.Bandwidth = LatencyNone, 0
	}
	t0 := time.Now()
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x7465_73746e6574))
	net, err := ts.NewNetwork(cfg.Topology, ts.DefaultBandwidth, cfg.Nodes, ts.ChordConfig{Successors: cfg.Successors}, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("testnet: topology: %w", err)
	}
	ov := buildOverlay(cfg, net, rng)

	// The file: random bytes drawn from the seed.
	data := make([]byte, cfg.Size)
	cha := rand.NewChaCha8(seed32(cfg.Seed))
	_, _ = cha.Read(data)
	m, err := chunker.ChunkReader(ctx, fileName, 0o644, bytes.NewReader(data), cfg.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("testnet: chunk: %w", err)
	}
	runDir := filepath.Join(cfg.Dir, cfg.Method.String())
	res := &Result{Method: cfg.Method.String(), Transport: cfg.Transport.String(), Latency: cfg.Latency.String(),
		Neighbours: cfg.Neighbours.String(), Nodes: cfg.Nodes, Hold: cfg.Hold, Seed: cfg.Seed, Root: m.ID().String(),
		Blocks: m.BlockCount(), BlockSize: m.BlockSize(), Bytes: m.TotalSize(), Links: len(ov.pairs),
		BandwidthBps: cfg.Bandwidth, Identical: -1, Churn: cfg.Churn}
	for _, p := range ov.pairs {
		res.MeanLatencyMS += float64(p.latency) / float64(time.Millisecond) / float64(len(ov.pairs))
	}
	res.MeanDegree = 2 * float64(len(ov.pairs)) / float64(cfg.Nodes)

	var fab fabric
	if cfg.Transport == TransportTCP {
		fab, err = newTCPFabric(cfg.Nodes)
	} else {
		fab, err = newMockFabric(cfg.Nodes)
	}
	if err != nil {
		return nil, err
	}
	defer fab.close()

	// The source store holds the whole file; the seed serves it in place and
	// the Byers coder codes it.
	src, err := chunker.CreateStore(ctx, filepath.Join(runDir, "source"), m, chunker.WithSyncEvery(1<<30))
	if err != nil {
		return nil, fmt.Errorf("testnet: source store: %w", err)
	}
	for i := range m.BlockCount() {
		if err := src.PutBlock(i, blockOf(data, m, i)); err != nil {
			src.Close()
			return nil, fmt.Errorf("testnet: source store: %w", err)
		}
	}
	if err := src.Close(); err != nil {
		return nil, fmt.Errorf("testnet: source store: %w", err)
	}
	srcPath := filepath.Join(runDir, "source", fileName)

	cnt := &counters{}
	nodes := make([]*node, cfg.Nodes)
	byID := make(map[lpeer.ID]int, cfg.Nodes)
	for i := range nodes {
		byID[fab.host(i).ID()] = i
	}
	// Every answer is audited against the fetcher's holdings.
	var nodesMu sync.Mutex
	holdingsOf := func(remote lpeer.ID) holdings {
		j, ok := byID[remote]
		if !ok {
			return nil
		}
		nodesMu.Lock()
		defer nodesMu.Unlock()
		if nodes[j] == nil {
			return nil
		}
		return nodes[j].units
	}
	seedNode := -1
	if cfg.Hold == 0 {
		seedNode = rng.IntN(cfg.Nodes)
	}
	// Liars and churn: their own random stream too.
	roles := planRoles(cfg, seedNode, rand.New(rand.NewPCG(cfg.Seed, 0x6c696172)))
	isLiar := map[lpeer.ID]bool{}
	for i, r := range roles {
		if r.liar {
			isLiar[fab.host(i).ID()] = true
		}
	}
	// Access links: their own random stream, so that the rest of the run is
	// the same with or without them.
	var acc *access
	up, down := cfg.accessRates(seedNode, rand.New(rand.NewPCG(cfg.Seed, 0x616363657373)))
	if cfg.hasAccess() {
		acc = &access{links: ts.NewLinks(up, down), index: byID, t0: time.Now(), sent: make([]atomic.Int64, cfg.Nodes)}
		res.UpBps, res.DownBps, res.Classes = cfg.Up, cfg.Down, cfg.Classes
		if seedNode >= 0 {
			res.SeedUpBps = up[seedNode]
			var fu, fd []float64
			for i := range up {
				if i != seedNode {
					fu, fd = append(fu, up[i]), append(fd, down[i])
				}
			}
			res.TStarS = ts.FluidBound(float64(m.TotalSize()), up[seedNode], fu, fd)
		}
	}
	newService := func(i int) (*peer.Service, error) {
		o := []peer.Option{peer.WithLogger(cfg.Logger), peer.WithMaxSources(cfg.MaxSources), peer.WithServeObserver(cnt.audit(holdingsOf))}
		if cfg.Window > 0 {
			o = append(o, peer.WithWindow(cfg.Window))
		}
		s, err := peer.NewService(&countingHost{Host: fab.host(i), c: cnt, access: acc, self: i, liar: roles[i].liar, lie: roles[i].lie,
			sendBuffer: cfg.Transport == TransportMock}, o...)
		if err != nil {
			return nil, fmt.Errorf("testnet: peer: %w", err)
		}
		return s, nil
	}
	setNode := func(i int, n *node) {
		nodesMu.Lock()
		nodes[i] = n
		nodesMu.Unlock()
	}
	defer func() {
		for _, n := range nodes {
			if n != nil {
				n.p.Close()
			}
		}
	}()

	var seedOpts []peer.SeedOption
	seedOpts = append(seedOpts, peer.WithBlockSize(cfg.BlockSize))
	if cfg.Method == reconcile.Byers {
		seedOpts = append(seedOpts, peer.WithByers(cfg.Byers))
	}
	// The Byers coder: the seed itself, or a peer connected to nobody.
	var coded *peer.CodedSet
	units := m.BlockCount()
	if cfg.Method == reconcile.Byers {
		var coder *peer.Service
		if seedNode >= 0 {
			if coder, err = newService(seedNode); err != nil {
				return nil, err
			}
			setNode(seedNode, &node{p: coder, seed: true, dir: filepath.Dir(srcPath)})
		} else {
			h, err := fab.spare()
			if err != nil {
				return nil, err
			}
			if coder, err = peer.NewService(h); err != nil {
				return nil, fmt.Errorf("testnet: peer: %w", err)
			}
			defer coder.Close()
		}
		t, err := coder.Seed(ctx, srcPath, seedOpts...)
		if err != nil {
			return nil, fmt.Errorf("testnet: byers seed: %w", err)
		}
		if t.Root != m.ID() {
			return nil, fmt.Errorf("testnet: the seed's root %s is not the file's %s", t.Root, m.ID())
		}
		var ok bool
		if coded, ok = coder.CodedSet(m.ID()); !ok {
			return nil, errors.New("testnet: the byers seed serves no coded blocks")
		}
		units = coded.Count()
		if seedNode >= 0 {
			nodes[seedNode].units = coded
		}
	}
	res.Units = units
	hold := holdingsPlan(cfg, units, m.BlockCount(), seedNode, roles, rng)

	for i := range nodes {
		if nodes[i] != nil {
			continue
		}
		p, err := newService(i)
		if err != nil {
			return nil, err
		}
		n := &node{p: p}
		setNode(i, n)
		if i == seedNode {
			t, err := p.Seed(ctx, srcPath, seedOpts...)
			if err != nil {
				return nil, fmt.Errorf("testnet: seed: %w", err)
			}
			if t.Root != m.ID() {
				return nil, fmt.Errorf("testnet: the seed's root %s is not the file's %s", t.Root, m.ID())
			}
			n.seed, n.dir, n.units = true, filepath.Dir(srcPath), allHeld(units)
			continue
		}
		n.dir = filepath.Join(runDir, fmt.Sprintf("node%04d", i))
		s, err := chunker.CreateStore(ctx, n.dir, m, chunker.WithSyncEvery(1<<30))
		if err != nil {
			return nil, fmt.Errorf("testnet: store: %w", err)
		}
		var held []int
		phantom := roles[i].liar && roles[i].lie == LiarPhantom
		if phantom {
			// It claims the whole file: its filters and offers name every
			// block (and it answers each as missing).
			hold[i] = hold[i][:0]
			for u := range units {
				hold[i] = append(hold[i], u)
			}
		}
		if cfg.Method == reconcile.Byers {
			held = hold[i]
		} else {
			for _, u := range hold[i] {
				if err := s.PutBlock(u, blockOf(data, m, u)); err != nil {
					s.Close()
					return nil, fmt.Errorf("testnet: store: %w", err)
				}
			}
		}
		// Every peer serves what it holds before any fetch starts: a
		// neighbour's first request must not find it absent.
		var sopts []peer.ServeOption
		if cfg.Method == reconcile.Byers {
			sopts = append(sopts, peer.WithCoded(coded, held))
		}
		if _, err := p.Serve(s, sopts...); err != nil {
			s.Close()
			return nil, fmt.Errorf("testnet: serve: %w", err)
		}
		n.store, n.fetch = s, !phantom
		if cfg.Method == reconcile.Byers {
			own, ok := p.CodedSet(m.ID())
			if !ok {
				return nil, errors.New("testnet: a byers peer serves no coded blocks")
			}
			n.units = own
		} else {
			n.units = n.store
		}
	}
	data = nil
	w := &swarm{cfg: cfg, fab: fab, ov: ov, roles: roles, root: m.ID(), cnt: cnt, nodes: nodes, nodesMu: &nodesMu,
		newService: newService, isLiar: isLiar}
	w.init()
	// Join the neighbours (all but the late joiners): every peer serves by
	// now.
	if err := linkAll(ctx, fab, w.initialPairs(), cfg.Bandwidth); err != nil {
		return nil, err
	}
	runtime.GC()
	res.SetupSeconds = time.Since(t0).Seconds()

	// Fetch: every honest fetcher's life (swarm.life), the liars' fetches,
	// and the late joins as the swarm progresses.
	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	lctx, lcancel := context.WithCancel(rctx)
	defer lcancel()
	start := time.Now()
	w.ctx, w.start = rctx, start
	var wg, liars sync.WaitGroup
	joins := make([]chan struct{}, cfg.Nodes)
	var startHonest int64
	for i, n := range nodes {
		r := roles[i]
		switch {
		case !n.fetch:
			continue
		case r.liar:
			// A corrupt liar fetches too, until the honest peers are done.
			liars.Add(1)
			go func() {
				defer liars.Done()
				_, _ = n.p.FetchServed(lctx, m.ID(), peer.WithSources(w.sources(i)...), peer.WithMethod(cfg.Method), peer.WithNoPeerTimeout(cfg.Timeout))
			}()
			continue
		}
		if r.needed() {
			res.Fetchers++
		}
		if r.lateAt > 0 {
			joins[i] = make(chan struct{})
		} else {
			startHonest++
			w.running.Add(1) // before it starts, so that late joins wait for it
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.life(i, joins[i])
		}()
	}
	// What the honest fetchers that start with the run need, for the late
	// joins.
	need := max(1, startHonest*int64(m.BlockCount()))
	for i, n := range nodes {
		if n.fetch && roles[i].lateAt == 0 && !roles[i].liar {
			need -= int64(n.store.HeldCount())
		}
	}
	need = max(1, need)
	stopSampling := sampleMemory(&res.PeakMemMiB)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(20 * time.Millisecond)
	progress := func() {
		if cfg.Progress != nil {
			cfg.Progress(Progress{Done: int(w.done.Load()), Fetchers: res.Fetchers, Blocks: w.blocks.Load(), Elapsed: time.Since(start)})
		}
	}
	lastProgress := start
wait:
	for {
		select {
		case <-finished:
			break wait
		case <-tick.C:
			share := float64(w.honest.Load()) / float64(need)
			idle := w.running.Load() == 0
			for i, c := range joins {
				if c != nil && (share >= roles[i].lateAt || idle) {
					close(c)
					joins[i] = nil
				}
			}
			if time.Since(lastProgress) >= 200*time.Millisecond {
				progress()
				lastProgress = time.Now()
			}
		}
	}
	tick.Stop()
	res.RunSeconds = time.Since(start).Seconds()
	lcancel()
	liars.Wait()
	stopSampling()
	progress()

	var checked []int
	if seedNode >= 0 {
		checked = append(checked, seedNode)
	}
	for i, o := range w.outs {
		n, r := nodes[i], roles[i]
		if !n.fetch || r.liar {
			continue
		}
		for _, sum := range o.sums {
			if sum == nil {
				continue
			}
			res.BlocksReceived += (sum.Received + int64(m.BlockSize()) - 1) / int64(m.BlockSize())
			res.Redundant += int64(sum.Redundant)
			res.FalseOffers += int64(sum.FalseOffers)
			res.Rejected += int64(sum.Rejected)
			res.DecodeSeconds += sum.DecodeSeconds
		}
		if o.left {
			res.Left++
		}
		if o.late {
			res.LateJoined++
		}
		if o.rejoined {
			res.Rejoined++
			if len(o.sums) == 2 && o.sums[1] != nil {
				res.ResumedBlocks += int64(o.sums[1].Resumed)
			}
		}
		if !r.needed() {
			continue
		}
		checked = append(checked, i)
		if o.err != nil {
			if len(res.Errors) < 10 {
				res.Errors = append(res.Errors, fmt.Sprintf("node %d: %v", i, o.err))
			}
			continue
		}
		if nodes[i].store.Complete() {
			res.Completed++
			res.Completions = append(res.Completions, o.at.Seconds())
		}
	}
	for _, r := range roles {
		if r.liar {
			res.Liars++
			if r.lie == LiarCorrupt {
				res.CorruptLiars++
			} else {
				res.PhantomLiars++
			}
		}
	}
	res.LiedCorrupt, res.LiedMissing = cnt.liedCorrupt.Load(), cnt.liedMissing.Load()
	res.CorruptReceived, res.Bans, res.HonestBans = cnt.corrupt.Load(), cnt.bans.Load(), cnt.honestBans.Load()
	res.Restarts = cnt.restarts.Load()
	sort.Float64s(res.Completions)
	res.MedianS = quantile(res.Completions, 0.5)
	res.P95S = quantile(res.Completions, 0.95)
	res.MaxS = quantile(res.Completions, 1)
	res.MeanS = mean(res.Completions)
	if acc != nil {
		var sent int64
		capacity := 0.0
		for i := range acc.sent {
			sent += acc.sent[i].Load()
			capacity += up[i] * res.MaxS
			if up[i] <= 0 {
				capacity = math.Inf(1)
			}
		}
		if seedNode >= 0 {
			res.SeedSentBytes = acc.sent[seedNode].Load()
		}
		if capacity > 0 && !math.IsInf(capacity, 1) {
			res.UploadUse = float64(sent) / capacity
		}
	}
	if res.TStarS > 0 {
		res.MedianTStar, res.P95TStar, res.MaxTStar = res.MedianS/res.TStarS, res.P95S/res.TStarS, res.MaxS/res.TStarS
	}
	res.Wire = cnt.wire()
	res.FilterBytes, res.BlockBytes = res.Wire[WireFilter], res.Wire[WireBlocks]
	if t := res.FilterBytes + res.BlockBytes; t > 0 {
		res.FilterShare = float64(res.FilterBytes) / float64(t)
	}
	res.Sessions, res.Offered, res.Missed = cnt.sessions.Load(), cnt.offered.Load(), cnt.missed.Load()

	// Every peer's file must re-hash to the root.
	if !cfg.SkipVerify {
		t1 := time.Now()
		res.Identical = 0
		for _, i := range checked {
			n := nodes[i]
			mm, err := chunker.ChunkPath(ctx, filepath.Join(n.dir, fileName), cfg.BlockSize)
			switch {
			case err != nil:
				if len(res.Errors) < 10 {
					res.Errors = append(res.Errors, fmt.Sprintf("node %d: verify: %v", i, err))
				}
			case mm.ID() != m.ID():
				if len(res.Errors) < 10 {
					res.Errors = append(res.Errors, fmt.Sprintf("node %d: root %s, want %s", i, mm.ID(), m.ID()))
				}
			default:
				res.Identical++
			}
		}
		res.VerifySeconds = time.Since(t1).Seconds()
	}
	res.Checked = len(checked)
	if res.Completed < res.Fetchers || (res.Identical >= 0 && res.Identical < res.Checked) {
		return res, fmt.Errorf("%w: %d of %d fetchers completed, %d of %d files identical", ErrIncomplete,
			res.Completed, res.Fetchers, res.Identical, res.Checked)
	}
	return res, nil
}

// linkAll joins every neighbour pair, a few at a time.
func linkAll(ctx context.Context, fab fabric, pairs []pair, bandwidth float64) error {
	var wg sync.WaitGroup
	errs := make([]error, len(pairs))
	sem := make(chan struct{}, 16)
	for k, p := range pairs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[k] = fab.link(ctx, p, bandwidth)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// holdingsPlan returns the units each node starts with: nothing but the seed's
// whole file (seedNode >= 0), or a random cfg.Hold share each, every unit held
// by at least one stable node (honest, there from start to end: see roles).
func holdingsPlan(cfg Config, units, blocks, seedNode int, roles []role, rng *rand.Rand) [][]int {
	hold := make([][]int, cfg.Nodes)
	if seedNode >= 0 {
		return hold
	}
	share := int(cfg.Hold*float64(units) + 0.5)
	if cfg.Method == reconcile.Byers {
		// As the simulator: a Byers peer holds as many coded blocks as a
		// complete peer holds source blocks.
		share = min(units, int(cfg.Hold*float64(blocks)+0.5))
	}
	share = max(1, share)
	covered := make([]bool, units)
	var stable []int
	for i := range hold {
		hold[i] = rng.Perm(units)[:share]
		if !roles[i].stable() {
			continue
		}
		stable = append(stable, i)
		for _, u := range hold[i] {
			covered[u] = true
		}
	}
	for u, ok := range covered {
		if !ok {
			i := stable[rng.IntN(len(stable))]
			hold[i] = append(hold[i], u)
		}
	}
	for _, h := range hold {
		slices.Sort(h)
	}
	return hold
}

// blockOf returns block i of data.
func blockOf(data []byte, m *chunker.Manifest, i int) []byte {
	bs := int64(m.BlockSize())
	lo := int64(i) * bs
	return data[lo:min(lo+bs, int64(len(data)))]
}

// allHeld are the holdings of a seed of n units.
type allHeld int

func (a allHeld) Has(i int) bool { return i >= 0 && i < int(a) }

// seed32 stretches a seed to a ChaCha8 key.
func seed32(s uint64) [32]byte {
	var k [32]byte
	for i := range 4 {
		binary.LittleEndian.PutUint64(k[8*i:], s+uint64(i)*0x9e3779b97f4a7c15)
	}
	return k
}

// sampleMemory records the peak of the memory the runtime holds from the OS,
// less what it has returned (about its resident size), into *peak (MiB) until the returned function is called.
func sampleMemory(peak *float64) (stop func()) {
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
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-quit:
				return
			case <-t.C:
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
