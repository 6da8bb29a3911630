package transitstub

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

type swarmPeer struct {
	set      *reconcile.Set
	cbf      *cbfalgebra.CBF
	bloom    *cbfalgebra.BloomFilter
	nbrs     []int32
	next     int
	done     bool
	decoding bool
	doneAt   float64
	rounds   int
	// inUse marks the neighbours an exchange is running with; pending the
	// blocks an exchange is bringing (Parallel > 1 or MaxBlocks > 0).
	inUse   []bool
	pending []bool
	seed    bool
	// served counts the times the peer sent each block (LeastServed).
	served []int32
	// serving counts the exchanges the peer is sending blocks to.
	serving int
	// tally sums the CBFs of the peer's neighbours (RarityFromFilters);
	// watchers are the peers that have it as a neighbour.
	tally    *cbfalgebra.Tally
	watchers []int32
}

// RunSwarm runs a file distribution over net's overlay: every peer starts with a
// random share of the blocks (every block held somewhere) and, until it holds the
// whole file, reconciles with its Chord neighbours (successor list, then fingers)
// in turn, one reconciliation at a time, with the real filter code deciding what
// each exchange carries and the cost model timing it. It is a model of the
// sessions, checked against them (see the package documentation). A Byers peer decodes once it
// holds kk distinct coded blocks, then re-encodes and serves all nn. Peers keep
// serving after they complete. Routes of neighbour pairs are computed up front, in
// parallel.
func RunSwarm(net *Network, cfg SwarmConfig, costs *Costs) (*SwarmResult, error) {
	start := time.Now()
	o := net.Overlay
	n := o.Len()
	cfg.defaults(n)
	f := cfg.Filter
	if err := f.Validate(); err != nil {
		return nil, err
	}
	byers := cfg.Method == reconcile.Byers
	switch {
	case !cfg.Method.Valid():
		return nil, fmt.Errorf("%w: method %v", ErrParams, cfg.Method)
	case cfg.Method == reconcile.IBLT:
		return nil, fmt.Errorf("%w: the swarm model does not run iblt (several round trips an exchange); sim table4 does", ErrParams)
	case cfg.Blocks < 1 || (!cfg.OneSeed && (cfg.Share <= 0 || cfg.Share > 1)):
		return nil, fmt.Errorf("%w: need blocks >= 1 and share in (0, 1]", ErrParams)
	case cfg.Parallel < 1 || cfg.MaxBlocks < 0 || cfg.UploadSlots < 0 || !okRate(cfg.Up) || !okRate(cfg.Down) || !okRate(cfg.SeedUp):
		return nil, fmt.Errorf("%w: parallel %d, max blocks %d, up %g, down %g, seed up %g", ErrParams,
			cfg.Parallel, cfg.MaxBlocks, cfg.Up, cfg.Down, cfg.SeedUp)
	case cfg.RarityFromFilters && (byers || !cfg.RarestFirst):
		return nil, fmt.Errorf("%w: rarity from filters needs rarest-first and a method with CBFs, not %v", ErrParams, cfg.Method)
	case cfg.Central != nil && (cfg.Watch || !cfg.OneSeed || !cfg.HasAccessLinks() || byers || cfg.FreeControl || cfg.UploadRarest):
		return nil, fmt.Errorf("%w: the central schedule replaces the watch model, needs one seed and access links, and moves source blocks (not byers)", ErrParams)
	case cfg.Trees < 0 || (cfg.Trees == 0 && cfg.TreesByDelay) || (cfg.Trees > 0 && (cfg.Watch || cfg.Central != nil || !cfg.OneSeed || !cfg.HasAccessLinks() || byers || cfg.FreeControl || cfg.UploadRarest)):
		return nil, fmt.Errorf("%w: stripe trees (%d) replace the watch model and the central schedule, need one seed and access links, and move source blocks (not byers)", ErrParams, cfg.Trees)
	case !cfg.Watch && cfg.Central == nil && cfg.Trees == 0 && cfg.NoDelay:
		return nil, fmt.Errorf("%w: no delay is an option of the watch model and the central schedule", ErrParams)
	case !cfg.Watch && (cfg.FreeControl || cfg.UploadRarest):
		return nil, fmt.Errorf("%w: free control and rarest uploads are options of the watch model", ErrParams)
	case cfg.Watch && byers:
		return nil, fmt.Errorf("%w: the watch model runs complete, bitfield and ccbf, not byers (fetches of coded blocks keep no watch)", ErrParams)
	case cfg.Watch && cfg.MaxBlocks < 1:
		return nil, fmt.Errorf("%w: the watch model needs a window (MaxBlocks), not %d", ErrParams, cfg.MaxBlocks)
	case cfg.Watch && cfg.RarityFromFilters:
		return nil, fmt.Errorf("%w: the watch model takes blocks rarest first by exact counts or at random, not by filters", ErrParams)
	case (cfg.NoSuperSeed || cfg.SeedLeaves) && (!cfg.Watch || !cfg.OneSeed):
		return nil, fmt.Errorf("%w: a seed that does not super-seed or leaves is an option of the watch model with one seed", ErrParams)
	case cfg.Watch && cfg.LeastServed:
		return nil, fmt.Errorf("%w: in the watch model the seed super-seeds; least-served is of the rounds", ErrParams)
	case byers && cfg.Blocks > f.NN:
		return nil, fmt.Errorf("%w: %d blocks exceed the code's nn = %d", ErrParams, cfg.Blocks, f.NN)
	}
	kk := cfg.Blocks
	u := kk
	if byers {
		u = f.NN
	}
	var decodeMS, encodeMS float64
	if byers {
		var err error
		if decodeMS, encodeMS, err = costs.MeasureDecode(f, kk, nil, cfg.DecodeReps, cfg.Seed); err != nil {
			return nil, err
		}
	}
	pr, err := newProtoRunner(f, u, cfg.Method)
	if err != nil {
		return nil, err
	}
	if err := ValidateClasses(cfg.Classes); err != nil {
		return nil, err
	}
	if cfg.Central != nil {
		if err := cfg.Central.validate(); err != nil {
			return nil, err
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x737761726d)) // "swarm"
	windowed := cfg.Parallel > 1 || cfg.MaxBlocks > 0

	// Initial shares.
	peers := make([]swarmPeer, n)
	share := max(1, int(cfg.Share*float64(kk)+0.5))
	share = min(share, u)
	seedPeer := -1
	if cfg.OneSeed {
		share, seedPeer = 0, SeedPeer(cfg.Seed, n)
	}
	perm := make([]int, u)
	for i := range perm {
		perm[i] = i
	}
	held := reconcile.NewSet(u)
	for i := range peers {
		p := &peers[i]
		p.set = reconcile.NewSet(u)
		if i == seedPeer {
			p.seed = true
			for b := range u {
				p.set.Add(b)
				held.Add(b)
			}
		}
		for j := range share { // partial Fisher–Yates
			k := j + rng.IntN(u-j)
			perm[j], perm[k] = perm[k], perm[j]
			p.set.Add(perm[j])
			held.Add(perm[j])
		}
	}
	// Make sure the swarm holds every block: every source block (complete), every
	// coded block (Byers, as the server put all nn out). With only kk distinct
	// coded blocks a peer would need every one of them, and a block its Bloom
	// filter reports by a false positive never comes (the filter only grows):
	// small Byers swarms then never converged.
	for b := 0; held.Len() < u && b < u; b++ {
		if !held.Has(b) {
			held.Add(b)
			peers[rng.IntN(n)].set.Add(b)
		}
	}
	res := &SwarmResult{Method: cfg.Method, Choice: cfg.choice(), Model: cfg.model(), Peers: n, Blocks: kk, Bytes: map[string]int64{},
		FileBytes: int64(kk) * int64(f.BlockBytes)}
	// Access links, drawn from their own random stream.
	var links *Links
	var sentBy []int64
	up, down := make([]float64, n), make([]float64, n)
	if cfg.HasAccessLinks() {
		sentBy = make([]int64, n)
		class := AssignClasses(cfg.Classes, n, rand.New(rand.NewPCG(cfg.Seed, 0x616363657373)))
		for i := range up {
			up[i], down[i] = cfg.Up, cfg.Down
			if len(cfg.Classes) > 0 {
				up[i], down[i] = cfg.Classes[class[i]].Up, cfg.Classes[class[i]].Down
			}
		}
		if seedPeer >= 0 {
			if cfg.SeedUp > 0 {
				up[seedPeer] = cfg.SeedUp
			}
			var fu, fd []float64
			for i := range up {
				if i != seedPeer {
					fu, fd = append(fu, up[i]), append(fd, down[i])
				}
			}
			res.TStarMS = 1000 * FluidBound(float64(res.FileBytes), up[seedPeer], fu, fd)
		}
		links = NewLinks(up, down)
	}
	var sim Sim
	// transfer sends b bytes from peer x to peer y at ms now and calls
	// arrived once they have arrived: with access links, x's uplink sends
	// them (booked now, in the order sent), they cross the route's delay,
	// then y's downlink delivers them (booked when they reach it, in the
	// order they arrive), as package testnet's links do. It returns when
	// x's uplink has sent them (now without access links).
	transfer := func(x, y int, route topology.Route, b int, now float64, arrived func()) float64 {
		if links == nil {
			sim.At(now+route.TransferMS(b), arrived)
			return now
		}
		sentBy[x] += int64(b)
		upDone := 1000 * links.Up(x, b, now/1000)
		sim.At(upDone+float64(route.DelayMS), func() {
			sim.At(1000*links.Down(y, b, sim.Now()/1000), arrived)
		})
		return upDone
	}
	var pairs [][2]int
	for i := range peers {
		p := &peers[i]
		p.nbrs = o.Neighbours(i)
		p.next = rng.IntN(len(p.nbrs))
		if windowed {
			p.inUse, p.pending = make([]bool, len(p.nbrs)), make([]bool, u)
		}
		if cfg.LeastServed {
			p.served = make([]int32, u)
		}
		for _, j := range p.nbrs {
			pairs = append(pairs, [2]int{o.Router(i), o.Router(int(j))})
		}
		if byers {
			p.bloom, _ = cbfalgebra.NewBloom(f.M, f.K, cbfalgebra.WithHash(f.Hash))
			for _, b := range p.set.Indices() {
				p.bloom.AddLocations(pr.at(b))
			}
		} else {
			p.cbf, _ = cbfalgebra.NewFromParams(pr.p)
			for _, b := range p.set.Indices() {
				p.cbf.InsertLocations(pr.at(b))
			}
		}
	}
	if cfg.RarityFromFilters {
		for i := range peers {
			p := &peers[i]
			if p.tally, err = cbfalgebra.NewTally(pr.p); err != nil {
				return nil, err
			}
			for _, j := range p.nbrs {
				if err := p.tally.Add(peers[j].cbf); err != nil {
					return nil, err
				}
				peers[j].watchers = append(peers[j].watchers, int32(i))
			}
		}
	}
	net.Paths.Prefetch(pairs, 0)
	var cbfSize, bloomSize int
	if byers {
		bloomSize = peers[0].bloom.EncodedSize()
	} else {
		cbfSize = peers[0].cbf.EncodedSize()
	}
	filterData := make([]byte, max(cbfSize, bloomSize, (u+7)/8)) // stand-in payload of the filter's encoded size
	var idxScratch []int
	var rarity []int
	var runErr error

	// filterOf is the size of peer a's filter message, by method.
	filterOf := func(a int) (int, error) {
		p := &peers[a]
		switch cfg.Method {
		case reconcile.Byers:
			return filterBytes(cfg.Method, p.bloom.Params(), u, p.set.Len(), filterData[:bloomSize]), nil
		case reconcile.Bitfield:
			return filterBytes(cfg.Method, cbfalgebra.Params{}, u, p.set.Len(), filterData[:(u+7)/8]), nil
		case reconcile.CCBF: // the real compressed size of A's filter
			raw, err := p.cbf.MarshalBinary()
			if err != nil {
				return 0, err
			}
			return filterBytes(cfg.Method, pr.p, u, p.set.Len(), reconcile.CompressFilter(nil, raw)), nil
		}
		return filterBytes(cfg.Method, pr.p, u, p.set.Len(), filterData[:cbfSize]), nil
	}
	var startRound func(a int)
	complete := func(a int) {
		p := &peers[a]
		p.done, p.doneAt = true, sim.Now()
	}
	startRound = func(a int) {
		p := &peers[a]
		if p.done || p.decoding || runErr != nil {
			return
		}
		if res.Reconciliations >= cfg.MaxReconciliations {
			runErr = fmt.Errorf("transitstub: swarm did not converge within %d reconciliations", cfg.MaxReconciliations)
			return
		}
		slot := p.next
		if windowed { // the next neighbour no exchange is running with
			k := 0
			for ; k < len(p.nbrs) && p.inUse[slot]; k++ {
				slot = (slot + 1) % len(p.nbrs)
			}
			if k == len(p.nbrs) {
				return
			}
			p.inUse[slot] = true
		}
		res.Reconciliations++
		p.rounds++
		b := int(p.nbrs[slot])
		p.next = (slot + 1) % len(p.nbrs)
		route := o.Route(a, b)
		fb, err := filterOf(a)
		if err != nil {
			runErr = err
			return
		}
		res.Bytes[reconcile.MsgFilter.String()] += int64(fb)
		transfer(a, b, route, fb, sim.Now(), func() { // B has A's filter
			q := &peers[b]
			idxScratch = q.set.AppendIndices(idxScratch[:0])
			pr.idx = pr.idx[:0]
			var comp float64
			newBlocks := 0
			if byers {
				for _, i := range idxScratch {
					if !p.bloom.ContainsLocations(pr.at(i)) {
						pr.idx = append(pr.idx, uint32(i))
					} else if !p.set.Has(i) {
						res.MissedBlocks++
					}
				}
				newBlocks = len(pr.idx)
				comp = costs.byersMS(len(idxScratch))
			} else if cfg.Method == reconcile.Bitfield {
				// Exactly S_B \ S_A; a bitmap difference costs microseconds (comp 0).
				for _, i := range idxScratch {
					if !p.set.Has(i) {
						pr.idx = append(pr.idx, uint32(i))
					}
				}
				newBlocks = len(pr.idx)
			} else {
				if err := cbfalgebra.SubtractInto(pr.diff, q.cbf, p.cbf, pr.cu); err != nil {
					runErr = err
					return
				}
				for _, i := range idxScratch {
					if pr.diff.ContainsLocations(pr.at(i)) {
						pr.idx = append(pr.idx, uint32(i))
						if !p.set.Has(i) {
							newBlocks++
						}
					} else if !p.set.Has(i) {
						runErr = fmt.Errorf("transitstub: CBF subtraction missed block %d", i)
						return
					}
				}
				comp = costs.completeMS(len(idxScratch), newBlocks)
			}
			if windowed { // A wants what it does not await already, at most MaxBlocks
				keep := pr.idx[:0]
				for _, i := range pr.idx {
					if !p.pending[i] {
						keep = append(keep, i)
					}
				}
				pr.idx = keep
				if w := cfg.MaxBlocks; w > 0 && len(pr.idx) > w {
					if cfg.RarestFirst || cfg.LeastServed {
						rng.Shuffle(len(pr.idx), func(x, y int) { pr.idx[x], pr.idx[y] = pr.idx[y], pr.idx[x] })
						rarity = rarity[:0]
						for _, i := range pr.idx {
							c := 0
							switch {
							case cfg.RarityFromFilters:
								c = p.tally.CountLocations(pr.at(int(i)))
							case cfg.RarestFirst:
								for _, q := range p.nbrs {
									if peers[q].set.Has(int(i)) {
										c++
									}
								}
							}
							if cfg.LeastServed {
								c += int(q.served[i]) << 16
							}
							rarity = append(rarity, c)
						}
						order := make([]int, len(pr.idx))
						for k := range order {
							order[k] = k
						}
						slices.SortStableFunc(order, func(x, y int) int { return rarity[x] - rarity[y] })
						chosen := make([]uint32, w)
						for k := range w {
							chosen[k] = pr.idx[order[k]]
						}
						pr.idx = append(pr.idx[:0], chosen...)
					} else {
						for j := range w {
							k := j + rng.IntN(len(pr.idx)-j)
							pr.idx[j], pr.idx[k] = pr.idx[k], pr.idx[j]
						}
						pr.idx = pr.idx[:w]
					}
					slices.Sort(pr.idx)
				}
				for _, i := range pr.idx {
					p.pending[i] = true
				}
			}
			if cfg.UploadSlots > 0 && q.serving >= cfg.UploadSlots {
				for _, i := range pr.idx {
					if windowed {
						p.pending[i] = false
					}
				}
				pr.idx = pr.idx[:0] // busy: nothing this time
			}
			sent := append([]uint32(nil), pr.idx...)
			slotted := cfg.UploadSlots > 0 && len(sent) > 0
			if slotted {
				q.serving++
			}
			if cfg.LeastServed {
				for _, i := range sent {
					q.served[i]++
				}
			}
			for _, i := range sent {
				if p.set.Has(int(i)) {
					res.RedundantBlocks++
				}
			}
			bb := pr.blocksBytes(sent)
			res.Bytes[reconcile.MsgBlocks.String()] += int64(bb)
			res.BlocksSent += int64(len(sent))
			transfer(b, a, route, bb, sim.Now()+comp, func() { // A has B's blocks
				for _, i := range sent {
					if windowed {
						p.pending[i] = false
					}
					if p.set.Add(int(i)) {
						if byers {
							p.bloom.AddLocations(pr.at(int(i)))
						} else {
							p.cbf.InsertLocations(pr.at(int(i)))
							for _, w := range p.watchers {
								peers[w].tally.InsertLocations(pr.at(int(i)))
							}
						}
					}
				}
				if windowed {
					p.inUse[slot] = false
				}
				if slotted {
					q.serving--
				}
				switch {
				case p.done || p.decoding:
					// Another exchange completed the file.
				case !byers && p.set.Len() == u:
					complete(a)
				case byers && p.set.Len() >= kk:
					p.decoding = true
					sim.After(decodeMS+encodeMS, func() { // decoded and re-encoded: A holds all nn
						for i := range u {
							if p.set.Add(i) {
								p.bloom.AddLocations(pr.at(i))
							}
						}
						p.decoding = false
						complete(a)
					})
				default:
					startRound(a)
				}
			})
		})
	}
	for i := range peers {
		p := &peers[i]
		if p.seed {
			p.done = true
			continue
		}
		if (!byers && p.set.Len() == u) || (byers && p.set.Len() >= kk) {
			p.done = true // starts with the file (or enough to decode at once)
			if byers {
				p.doneAt = decodeMS + encodeMS
				for b := range u {
					if p.set.Add(b) {
						p.bloom.AddLocations(pr.at(b))
					}
				}
			}
			continue
		}
		if !cfg.Watch && cfg.Central == nil && cfg.Trees == 0 {
			for range cfg.Parallel {
				sim.At(rng.Float64()*cfg.StartJitterMS, func() { startRound(i) })
			}
		}
	}
	out := &seedOut{left: u, at: &res.SeedOutMS}
	var wm *watchModel
	if cfg.Watch {
		slots := cfg.UploadSlots
		if slots == 0 {
			slots = watchUploadQueue
		}
		answerMS := func(setB, newBlocks int) float64 {
			if cfg.Method == reconcile.Bitfield {
				return 0 // a bitmap difference costs microseconds
			}
			return costs.completeMS(setB, newBlocks)
		}
		wm = &watchModel{sim: &sim, peers: peers, u: u, window: cfg.MaxBlocks, slots: slots, rarest: cfg.RarestFirst, rng: rng,
			blockLen: pr.blocksBytes([]uint32{0}), sources: cfg.Parallel, maxRecon: cfg.MaxReconciliations, res: res,
			noDelay: cfg.NoDelay, freeControl: cfg.FreeControl, rarestUp: cfg.UploadRarest, superSeed: !cfg.NoSuperSeed, leaves: cfg.SeedLeaves, filterBytes: filterOf, answerMS: answerMS, complete: complete,
			route: o.Route, transfer: transfer, seedOut: out}
		wm.start(cfg.StartJitterMS)
	}
	if cfg.Central != nil {
		cm := &centralModel{CentralSchedule: *cfg.Central, sim: &sim, peers: peers, u: u, rng: rng, blockLen: pr.blocksBytes([]uint32{0}), noDelay: cfg.NoDelay,
			res: res, route: o.Route, transfer: transfer, complete: complete, seedOut: out}
		cm.start()
	}
	if cfg.Trees > 0 {
		tm := &treeModel{sim: &sim, peers: peers, u: u, blockLen: pr.blocksBytes([]uint32{0}), noDelay: cfg.NoDelay,
			res: res, route: o.Route, transfer: transfer, complete: complete, seedOut: out, seed: seedPeer, blockMS: 1000 * float64(pr.blocksBytes([]uint32{0})) / up[seedPeer]}
		var caps []float64
		if len(cfg.Classes) > 0 {
			caps = up
		}
		if err := tm.plan(n, cfg.Trees, rng, caps, cfg.TreesByDelay); err != nil {
			return nil, err
		}
		tm.start()
	}
	sim.Run(inf)
	if runErr != nil {
		return nil, runErr
	}
	if wm != nil && wm.err != nil {
		return nil, wm.err
	}
	res.Events = sim.Events()
	res.Completions = make([]float64, 0, n)
	rounds := 0
	for i := range peers {
		rounds += peers[i].rounds
		if peers[i].seed {
			continue
		}
		res.Fetchers++
		if peers[i].done {
			res.Completed++
			res.Completions = append(res.Completions, peers[i].doneAt)
		}
	}
	res.MeanRounds = float64(rounds) / float64(n)
	res.MedianMS = quantile(res.Completions, 0.5)
	res.P95MS = quantile(res.Completions, 0.95)
	res.MaxMS = quantile(res.Completions, 1)
	res.MeanMS = mean(res.Completions)
	if links != nil {
		var sent int64
		capacity := 0.0
		for i, b := range sentBy {
			sent += b
			capacity += up[i] * res.MaxMS / 1000
			if up[i] <= 0 {
				capacity = math.Inf(1)
			}
		}
		if seedPeer >= 0 {
			res.SeedSentBytes = sentBy[seedPeer]
		}
		if capacity > 0 && !math.IsInf(capacity, 1) {
			res.UploadUse = float64(sent) / capacity
		}
	}
	if res.TStarMS > 0 {
		res.MedianTStar, res.P95TStar, res.MaxTStar = res.MedianMS/res.TStarMS, res.P95MS/res.TStarMS, res.MaxMS/res.TStarMS
	}
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}
