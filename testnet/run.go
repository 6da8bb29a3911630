package testnet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/stripes"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
	"github.com/reconcile-p2p/reconcile/testnet/tracestats"
	"github.com/reconcile-p2p/reconcile/testnet/update"
)

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
	t0 := cfg.Clock.Now()
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x7465_73746e6574))
	net, err := ts.NewNetwork(cfg.Topology, topology.DefaultBandwidth, cfg.Nodes, ts.ChordConfig{Successors: cfg.Successors}, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("testnet: topology: %w", err)
	}
	ov := buildOverlay(cfg, net, rng)

	// The file: random bytes drawn from the seed (version 2 of them, with
	// Update).
	file, err := makeContent(ctx, cfg)
	if err != nil {
		return nil, err
	}
	data, m := file.data, file.m
	// One folder per method (and block choice, when not the default), so
	// that runs of several share Dir.
	name := cfg.Method.String()
	if cfg.Choice != peer.BlockRarest {
		name += "-" + cfg.Choice.String()
	}
	if cfg.Trees > 0 {
		name += fmt.Sprintf("-trees-%d", cfg.Trees)
	}
	if m.ContentDefined() {
		name += "-cdc"
	}
	runDir := filepath.Join(cfg.Dir, name)
	res := &Result{Method: name, Choice: cfg.Choice.String(), Transport: cfg.Transport.String(), Latency: cfg.Latency.String(),
		Neighbours: cfg.Neighbours.String(), Nodes: cfg.Nodes, Hold: cfg.Hold, Seed: cfg.Seed, Root: m.ID().String(),
		Blocks: m.BlockCount(), BlockSize: file.unitBytes(), Bytes: m.TotalSize(), Links: len(ov.pairs),
		BandwidthBps: cfg.Bandwidth, Identical: -1, Churn: cfg.Churn, Dir: runDir}
	if m.ContentDefined() {
		res.Chunking = m.Chunking().String()
	}
	if file.old != nil {
		res.Update = update.NewFigures(cfg.Update, cfg.UpdatePlaces, file.old.ID().String(), file.delta)
	}
	movedBytes, movedBlocks := file.moved()
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
		seedNode = ts.SeedPeer(cfg.Seed, cfg.Nodes)
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
	up, down := cfg.accessRates(seedNode, rand.New(rand.NewPCG(cfg.Seed, 0x616363657373)))
	if cfg.hasAccess() {
		res.UpBps, res.DownBps, res.Classes = cfg.Up, cfg.Down, cfg.Classes
		if seedNode >= 0 {
			res.SeedUpBps = up[seedNode]
			var fu, fd []float64
			for i := range up {
				if i != seedNode {
					fu, fd = append(fu, up[i]), append(fd, down[i])
				}
			}
			res.TStarS = ts.FluidBound(float64(movedBytes), up[seedNode], fu, fd)
			if res.Update != nil {
				res.Update.FileTStarS = ts.FluidBound(float64(m.TotalSize()), up[seedNode], fu, fd)
			}
		}
	}
	// Stripe trees: their parent-child pairs join the overlay's, with their
	// latencies.
	// NATs: the trees go around relays where they can; the pairs that
	// cannot talk leave the overlay (trees' too).
	nat, err := newNATRun(cfg, fab.host)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var trees *stripes.Trees
	if cfg.Trees > 0 {
		if trees, err = buildTrees(cfg, net, &ov, seedNode, up, file.unitBytes(), roles, rand.New(rand.NewPCG(cfg.Seed, 0x7472656573)), nat.direct); err != nil {
			return nil, fmt.Errorf("testnet: stripe trees: %w", err)
		}
	}
	joinOverlay(cfg, &ov, seedNode, pairLatency(cfg, net))
	res.NAT = nat.apply(cfg, net, &ov)
	// The time scale: the network runs scale times slower than described,
	// the peers' timers and the run's own stretched to match.
	scale := cfg.TimeScale
	if scale == 0 {
		// A fetch's sources are its neighbours, up to MaxSources. With trees, their blocks come pushed, which costs
		// about what four sources' announcements would (at scale 15, 200 peers of 16 MiB in 16 KiB blocks: the
		// CPU 37 % busy, its waits 11 ms at p99 against 373 ms latencies).
		sources := min(float64(cfg.MaxSources), res.MeanDegree)
		if trees != nil || cfg.Join > 0 {
			sources = min(sources, 4)
		}
		// An update's few new bytes take the latency from the seed more
		// than T* (pathBound): the run lasts that long at least.
		scale = AutoTimeScale(cfg.Nodes, int64(cfg.Nodes-1)*movedBytes, int64(cfg.Nodes-1)*int64(movedBlocks), sources,
			max(res.TStarS, pathBound(res, ov, seedNode)), runtime.NumCPU())
	}
	res.TimeScale = scale
	cfg.Bandwidth /= scale
	cfg.Timeout = time.Duration(float64(cfg.Timeout) * scale)
	cfg.StuckAfter = time.Duration(float64(cfg.StuckAfter) * scale)
	// The network model: latency (applied here rather than by the mock
	// network, see shaper) and the access links.
	var shape *shaper
	var links *ts.Links
	if cfg.hasAccess() {
		au, ad := nat.accessRates(cfg, up, down) // the relays' after the nodes'
		su, sd := make([]float64, len(au)), make([]float64, len(ad))
		for i := range au {
			su[i], sd[i] = au[i]/scale, ad[i]/scale
		}
		links = ts.NewLinks(su, sd)
	}
	if links != nil || cfg.Transport == TransportMock {
		shape = newShaper(cfg.Clock, cfg.Nodes, links, byID, ov.pairs, scale)
		shape.nat = nat
	}
	audit := cnt.audit(holdingsOf)
	tr := tracestats.NewWriter(cfg.Trace, byID, cfg.Clock)
	defer tr.Flush()
	out := newSeedOut(cfg.Clock, m.BlockCount(), file.delta.New)
	w := new(swarm)
	newService := func(i int) (*peer.Service, error) {
		obs := audit
		if tr != nil {
			obs = func(ev peer.ServeEvent) {
				audit(ev)
				tr.Served(i, ev)
			}
		}
		if i == seedNode {
			inner := obs
			obs = func(ev peer.ServeEvent) {
				inner(ev)
				out.observe(ev)
				if a, b, ok := placedPair(ev, byID); ok {
					w.placed(a, b) // set before the fetches start
				}
			}
		}
		o := []peer.Option{peer.WithLogger(cfg.Logger), peer.WithMaxSources(cfg.MaxSources), peer.WithServeObserver(obs), peer.WithTimeScale(scale)}
		if cfg.Window > 0 {
			o = append(o, peer.WithWindow(cfg.Window))
		}
		s, err := peer.NewService(&countingHost{Host: fab.host(i), c: cnt, shape: shape, self: i, liar: roles[i].liar, lie: roles[i].lie}, o...)
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

	seedOpts := seedOptions(cfg, file)
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
		s, err := file.newStore(ctx, n.dir, res.Update)
		if err != nil {
			return nil, err
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
	data, file.data, file.oldData = nil, nil, nil
	*w = swarm{cfg: cfg, fab: fab, ov: ov, roles: roles, root: m.ID(), cnt: cnt, nodes: nodes, nodesMu: &nodesMu,
		newService: newService, isLiar: isLiar, latency: pairLatency(cfg, net), direct: nat.direct, shape: shape,
		joinAt: joinAt(cfg, fab, seedNode)}
	w.init()
	// Join the neighbours (all but the late joiners): every peer serves by
	// now.
	if err := linkAll(ctx, fab, w.initialPairs(), cfg.Bandwidth); err != nil {
		return nil, err
	}
	runtime.GC()
	res.SetupSeconds = cfg.Clock.Since(t0).Seconds()

	// Fetch: every honest fetcher's life (swarm.life), the liars' fetches,
	// and the late joins as the swarm progresses.
	rctx, cancel := clock.WithTimeout(ctx, cfg.Clock, cfg.Timeout)
	defer cancel()
	lctx, lcancel := context.WithCancel(rctx)
	defer lcancel()
	if trees != nil {
		// Every peer's place in the trees, the seed's last (its pushes
		// start at once, and a peer without its place refuses them).
		ids := make([]lpeer.ID, cfg.Nodes)
		for i := range ids {
			ids[i] = fab.host(i).ID()
		}
		w.stripes = func(i int) peer.Stripes { return stripesOf(trees, seedNode, i, ids, cfg.RepairAfter) }
		for i, n := range nodes {
			if i == seedNode {
				continue
			}
			if err := n.p.Push(m.ID(), w.stripes(i)); err != nil {
				return nil, fmt.Errorf("testnet: push: %w", err)
			}
		}
	}
	start := cfg.Clock.Now()
	cpu0, sched0 := cpuTime(), schedSample()
	tr.Begin(start, cfg.Method.String(), seedNode, scale, res.TStarS)
	traceRoles(tr, roles)
	tr.Parents(trees)
	w.tr = tr
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
	if trees != nil {
		if err := nodes[seedNode].p.Push(m.ID(), w.stripes(seedNode)); err != nil {
			return nil, fmt.Errorf("testnet: push: %w", err)
		}
	}
	// What the honest fetchers that start with the run need, for the late
	// joins (need), and what all of them lack, for the progress (lack: a
	// peer that leaves for good stores only up to its share).
	need := max(1, startHonest*int64(m.BlockCount()))
	var lack int64
	for i, n := range nodes {
		r := roles[i]
		if !n.fetch || r.liar {
			continue
		}
		held := n.store.HeldCount()
		if r.lateAt == 0 {
			need -= int64(held)
		}
		want := m.BlockCount()
		if !r.needed() {
			want = int(math.Ceil(r.leaveAt * float64(want)))
		}
		lack += int64(max(0, want-held))
	}
	need = max(1, need)
	stopSampling := sampleMemory(cfg.Clock, &res.PeakMemMiB)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := cfg.Clock.NewTicker(20 * time.Millisecond)
	progress := func() {
		if cfg.Progress != nil {
			cfg.Progress(Progress{Done: int(w.done.Load()), Fetchers: res.Fetchers, Blocks: w.blocks.Load(), Need: lack, Elapsed: cfg.Clock.Since(start)})
		}
	}
	lastProgress := start
	seedStays := !cfg.SeedLeaves || seedNode < 0
	ticks := 0
wait:
	for {
		select {
		case <-finished:
			break wait
		case <-tick.Chan():
			share := float64(w.honest.Load()) / float64(need)
			idle := w.running.Load() == 0
			for i, c := range joins {
				if c != nil && (share >= roles[i].lateAt || idle) {
					close(c)
					joins[i] = nil
				}
			}
			if ticks++; !seedStays && ticks%5 == 0 && !out.done().IsZero() && heldElsewhere(nodes, &nodesMu, seedNode, m.BlockCount()) {
				// Every block left the seed and is stored elsewhere: it
				// leaves (its service closes, its streams reset).
				seedStays = true
				res.SeedLeftS = cfg.Clock.Since(start).Seconds() / scale
				go nodes[seedNode].p.Close()
			}
			if cfg.Clock.Since(lastProgress) >= 200*time.Millisecond {
				progress()
				lastProgress = cfg.Clock.Now()
			}
		}
	}
	tick.Stop()
	res.RunSeconds = cfg.Clock.Since(start).Seconds()
	if res.RunSeconds > 0 {
		res.CPUUse = (cpuTime() - cpu0).Seconds() / (res.RunSeconds * float64(runtime.NumCPU()))
	}
	res.SchedP99S = schedWait(sched0, schedSample(), 0.99)
	lcancel()
	liars.Wait()
	stopSampling()
	progress()

	checked := w.tally(res, seedNode, file.unitBytes(), scale)
	if res.Update != nil {
		res.Update.SetSeedBytes(out.sentBytes())
		publish(res, nodes, checked)
	}
	res.LiedCorrupt, res.LiedMissing = cnt.liedCorrupt.Load(), cnt.liedMissing.Load()
	res.CorruptReceived, res.Bans, res.HonestBans = cnt.corrupt.Load(), cnt.bans.Load(), cnt.honestBans.Load()
	res.Restarts = cnt.restarts.Load()
	res.Adopted = cnt.adopted.Load()
	sort.Float64s(res.Completions)
	res.MedianS = quantile(res.Completions, 0.5)
	res.P95S = quantile(res.Completions, 0.95)
	res.MaxS = quantile(res.Completions, 1)
	res.MeanS = mean(res.Completions)
	if links != nil {
		var sent int64
		capacity := 0.0
		for i := range shape.sent {
			sent += shape.sent[i].Load()
			capacity += up[i] * res.MaxS
			if up[i] <= 0 {
				capacity = math.Inf(1)
			}
		}
		if seedNode >= 0 {
			res.SeedSentBytes = shape.sent[seedNode].Load()
		}
		if at := out.done(); !at.IsZero() {
			res.SeedOutS = at.Sub(start).Seconds() / scale
		}
		if capacity > 0 && !math.IsInf(capacity, 1) {
			res.UploadUse = float64(sent) / capacity
		}
	}
	if res.TStarS > 0 {
		res.MedianTStar, res.P95TStar, res.MaxTStar = res.MedianS/res.TStarS, res.P95S/res.TStarS, res.MaxS/res.TStarS
		res.StayedMaxTStar = res.StayedMaxS / res.TStarS
		res.BackMaxTStar = res.BackMaxS / res.TStarS
	}
	if u := res.Update; u != nil && u.PathBoundMedianS > 0 {
		u.MedianOverPathBound = res.MedianS / u.PathBoundMedianS
	}
	res.Wire = cnt.wire()
	res.FilterBytes, res.BlockBytes = res.Wire[WireFilter], res.Wire[WireBlocks]
	nat.finish(res.BlockBytes)
	if t := res.FilterBytes + res.BlockBytes; t > 0 {
		res.FilterShare = float64(res.FilterBytes) / float64(t)
	}
	res.Sessions, res.Offered, res.Missed = cnt.sessions.Load(), cnt.offered.Load(), cnt.missed.Load()

	// Every peer's file must re-hash to the root.
	if !cfg.SkipVerify {
		t1 := cfg.Clock.Now()
		verify(ctx, res, nodes, checked, m)
		res.VerifySeconds = cfg.Clock.Since(t1).Seconds()
	}
	res.Checked = len(checked)
	if res.Completed < res.Fetchers || (res.Identical >= 0 && res.Identical < res.Checked) {
		return res, fmt.Errorf("%w: %d of %d fetchers completed, %d of %d files identical", ErrIncomplete,
			res.Completed, res.Fetchers, res.Identical, res.Checked)
	}
	return res, nil
}
