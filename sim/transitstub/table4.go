package transitstub

import (
	"fmt"
	"math/rand/v2"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// Network is the simulated world: a topology, its path cache and a Chord overlay.
type Network struct {
	Topology *Topology
	Paths    *Paths
	Overlay  *Overlay
}

// NewNetwork generates a topology from p, attaches peers Chord peers to random
// routers and returns the three layers. Everything derives from seed.
func NewNetwork(p Params, bw Bandwidth, peers int, chord ChordConfig, seed uint64) (*Network, error) {
	t, err := Generate(p, seed)
	if err != nil {
		return nil, err
	}
	paths, err := NewPaths(t, bw, 0)
	if err != nil {
		return nil, err
	}
	o, err := NewOverlay(paths, peers, chord, seed)
	if err != nil {
		return nil, err
	}
	return &Network{Topology: t, Paths: paths, Overlay: o}, nil
}

// Row is one row of the paper's Tables 3 and 4: kk blocks in the file (the universe),
// n0 blocks shared by A and B, each of which holds n blocks.
type Row struct {
	KK int `json:"kk"`
	N0 int `json:"n0"`
}

// PaperRow is one row of the paper's Table 4 (reconciliation time in ms).
type PaperRow struct {
	Row
	ByersMS    float64 `json:"byers_ms"`
	CompleteMS float64 `json:"complete_ms"`
}

// PaperTable4 is the paper's Table 4 (n = 4000, m = 32768, k = 6, 200 Chord peers on
// a 5050-router transit-stub network).
var PaperTable4 = []PaperRow{
	{Row{5000, 3000}, 16018, 15177},
	{Row{6000, 2000}, 15705, 15179},
	{Row{7000, 1000}, 15436, 15181},
	{Row{7500, 500}, 15323, 15187},
}

// PaperDecodeMS are the Reed–Solomon decode times of the paper's Table 3 (ms, by kk,
// Pentium dual-core 1.7 GHz), for runs that price Byers' decode as the paper did
// (prefill Costs.DecodeMS with them).
var PaperDecodeMS = map[int]float64{5000: 948, 6000: 570, 7000: 266, 7500: 143}

// Table4Config configures RunTable4.
type Table4Config struct {
	Filter FilterConfig
	// N is the number of blocks each of A and B holds (paper: 4000).
	N int
	// Rows default to the paper's.
	Rows []Row
	// Trials per row and method (paper: 100).
	Trials int
	// Methods to run; nil means both.
	Methods []reconcile.Method
	// Seed drives the choice of peers and of the block sets.
	Seed uint64
	// DecodeReps is the number of timed runs per decode measurement (default 3).
	DecodeReps int
}

// MethodResult is the outcome of one method on one row, averaged over trials.
type MethodResult struct {
	Method   reconcile.Method `json:"method"`
	Trials   int              `json:"trials"`
	MeanMS   float64          `json:"mean_ms"`
	MedianMS float64          `json:"median_ms"`
	P95MS    float64          `json:"p95_ms"`
	// Mean components of the time: Chord lookup of B, filter A→B, B's compute, the
	// blocks B→A, and A's Reed–Solomon decode (Byers).
	LookupMS  float64 `json:"lookup_ms"`
	FilterMS  float64 `json:"filter_ms"`
	ComputeMS float64 `json:"compute_ms"`
	BlocksMS  float64 `json:"blocks_ms"`
	DecodeMS  float64 `json:"decode_ms"`
	MeanHops  float64 `json:"mean_hops"`
	// Mean bytes on the wire of the filter message and of the blocks message.
	FilterBytes float64 `json:"filter_bytes"`
	BlocksBytes float64 `json:"blocks_bytes"`
	// Sent is the mean number of blocks B sent; Redundant those A already held
	// (complete); Missed those of S_B \ S_A that B wrongly withheld (Byers).
	Sent      float64 `json:"sent"`
	Redundant float64 `json:"redundant"`
	Missed    float64 `json:"missed"`
	// Failed counts trials after which A could not rebuild the file.
	Failed int `json:"failed"`
}

// Table4Row is one row of the result.
type Table4Row struct {
	Row
	Complete *MethodResult `json:"complete,omitempty"`
	Byers    *MethodResult `json:"byers,omitempty"`
	// Ratio is Byers' mean time over complete's (0 unless both ran).
	Ratio float64 `json:"ratio"`
	// Paper is the paper's row, when the row is one of the paper's.
	Paper *PaperRow `json:"paper,omitempty"`
}

func (c *Table4Config) defaults() {
	if c.Filter == (FilterConfig{}) {
		c.Filter = PaperFilter()
	}
	if c.N == 0 {
		c.N = 4000
	}
	if c.Rows == nil {
		for _, r := range PaperTable4 {
			c.Rows = append(c.Rows, r.Row)
		}
	}
	if c.Trials == 0 {
		c.Trials = 100
	}
	if c.Methods == nil {
		c.Methods = reconcile.Methods
	}
	if c.DecodeReps == 0 {
		c.DecodeReps = 3
	}
}

// trial is the outcome of running the real protocol code for one pair of peers.
type trial struct {
	setB                int // blocks (or coded blocks) B queries
	sent, redundant     int
	missed              int
	filterBytes, blocks int
	have                []int // coded blocks A holds afterwards (Byers)
	ok                  bool
}

// RunTable4 runs the paper's experiment 4 on net: for every row and method, Trials
// reconciliations between random pairs of peers A, B (the same pairs for both
// methods). Each trial runs the real
// protocol (filters built, encoded, decoded, subtracted and queried by package
// cbfalgebra; messages sized by package reconcile's encoder) to find what B sends,
// and the event-driven model to time it: A looks B up through Chord, sends its
// filter, B computes (costs), B's blocks return, and for Byers A decodes. costs
// supplies the compute costs; decode costs missing from it are measured with the
// real erasure code on the first trial's blocks.
func RunTable4(net *Network, cfg Table4Config, costs *Costs) ([]Table4Row, error) {
	cfg.defaults()
	if err := cfg.Filter.Validate(); err != nil {
		return nil, err
	}
	if cfg.Trials < 1 || cfg.N < 1 {
		return nil, fmt.Errorf("%w: trials and n must be positive", ErrParams)
	}
	for _, r := range cfg.Rows {
		if r.N0 < 0 || r.N0 > cfg.N || r.KK != 2*cfg.N-r.N0 {
			return nil, fmt.Errorf("%w: row kk=%d n0=%d: need 0 <= n0 <= n and kk = 2n - n0 (n = %d)", ErrParams, r.KK, r.N0, cfg.N)
		}
		if r.KK > cfg.Filter.NN {
			return nil, fmt.Errorf("%w: row kk=%d exceeds nn=%d", ErrParams, r.KK, cfg.Filter.NN)
		}
	}
	o := net.Overlay
	if o.Len() < 2 {
		return nil, ErrNoPeers
	}
	var out []Table4Row
	for ri, r := range cfg.Rows {
		row := Table4Row{Row: r}
		for _, pr := range PaperTable4 {
			if pr.Row == r {
				row.Paper = &pr
			}
		}
		// Both methods reconcile the same pairs of peers, so their times differ by the
		// protocols only.
		prng := rand.New(rand.NewPCG(cfg.Seed, uint64(ri)<<8))
		pairs := make([][2]int, cfg.Trials)
		for t := range pairs {
			a := prng.IntN(o.Len())
			b := prng.IntN(o.Len() - 1)
			if b >= a {
				b++
			}
			pairs[t] = [2]int{a, b}
		}
		for _, m := range cfg.Methods {
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(ri)<<8|uint64(m)))
			res, err := runRow(net, cfg, costs, r, m, pairs, rng)
			if err != nil {
				return nil, fmt.Errorf("row kk=%d n0=%d %v: %w", r.KK, r.N0, m, err)
			}
			switch m {
			case reconcile.Complete:
				row.Complete = res
			case reconcile.Byers:
				row.Byers = res
			default:
				return nil, fmt.Errorf("%w: method %v", ErrParams, m)
			}
		}
		if row.Complete != nil && row.Byers != nil && row.Complete.MeanMS > 0 {
			row.Ratio = row.Byers.MeanMS / row.Complete.MeanMS
		}
		out = append(out, row)
	}
	return out, nil
}

// runRow runs cfg.Trials trials of method m for row r, all started at time 0 in one
// event-driven simulation (the model has no link contention, so trials do not
// interact).
func runRow(net *Network, cfg Table4Config, costs *Costs, r Row, m reconcile.Method, pairs [][2]int, rng *rand.Rand) (*MethodResult, error) {
	f := cfg.Filter
	o := net.Overlay
	res := &MethodResult{Method: m, Trials: cfg.Trials}
	var proto *protoRunner
	var err error
	if m == reconcile.Complete {
		proto, err = newProtoRunner(f, r.KK, m)
	} else {
		proto, err = newProtoRunner(f, f.NN, m)
	}
	if err != nil {
		return nil, err
	}
	var sim Sim
	times := make([]float64, 0, cfg.Trials)
	var decodeMS float64
	for t, pair := range pairs {
		a, b := pair[0], pair[1]
		var tr trial
		if m == reconcile.Complete {
			tr, err = proto.complete(cfg.N, r, rng)
		} else {
			tr, err = proto.byers(r, rng)
		}
		if err != nil {
			return nil, err
		}
		if m == reconcile.Byers && t == 0 {
			if decodeMS, _, err = costs.MeasureDecode(f, r.KK, tr.have, cfg.DecodeReps, cfg.Seed); err != nil {
				return nil, err
			}
		}
		res.Sent += float64(tr.sent)
		res.Redundant += float64(tr.redundant)
		res.Missed += float64(tr.missed)
		res.FilterBytes += float64(tr.filterBytes)
		res.BlocksBytes += float64(tr.blocks)
		if !tr.ok {
			res.Failed++
		}
		// The timeline, as chained events.
		look := o.Lookup(a, o.ID(b))
		route := o.Route(a, b)
		res.MeanHops += float64(look.Hops)
		res.LookupMS += look.LatencyMS
		start := 0.0
		sim.At(start+look.LatencyMS, func() { // A knows B's address: send the filter
			filterMS := route.TransferMS(tr.filterBytes)
			res.FilterMS += filterMS
			sim.After(filterMS, func() { // B has the filter: compute
				var comp float64
				if m == reconcile.Complete {
					comp = costs.completeMS(tr.setB, tr.sent-tr.redundant)
				} else {
					comp = costs.byersMS(tr.setB)
				}
				res.ComputeMS += comp
				sim.After(comp, func() { // B sends its blocks
					blocksMS := route.TransferMS(tr.blocks)
					res.BlocksMS += blocksMS
					sim.After(blocksMS, func() { // A has the blocks
						if m == reconcile.Byers && tr.ok {
							res.DecodeMS += decodeMS
							sim.After(decodeMS, func() { times = append(times, sim.Now()-start) })
							return
						}
						times = append(times, sim.Now()-start)
					})
				})
			})
		})
	}
	sim.Run(inf)
	n := float64(cfg.Trials)
	res.MeanMS = mean(times)
	res.MedianMS = quantile(times, 0.5)
	res.P95MS = quantile(times, 0.95)
	for _, p := range []*float64{&res.LookupMS, &res.FilterMS, &res.ComputeMS, &res.BlocksMS, &res.DecodeMS,
		&res.MeanHops, &res.FilterBytes, &res.BlocksBytes, &res.Sent, &res.Redundant, &res.Missed} {
		*p /= n
	}
	return res, nil
}

// protoRunner runs the real filter code of one method over a universe of u blocks.
type protoRunner struct {
	f      FilterConfig
	m      reconcile.Method
	u      int
	p      cbfalgebra.Params
	locs   []uint32
	cu     *cbfalgebra.CBF // CBF(U), complete only
	ca, cb *cbfalgebra.CBF
	diff   *cbfalgebra.CBF
	bloom  *cbfalgebra.BloomFilter
	zero   []byte
	idx    []uint32
}

func newProtoRunner(f FilterConfig, u int, m reconcile.Method) (*protoRunner, error) {
	pr := &protoRunner{f: f, m: m, u: u, p: f.cbfParams(), locs: f.locTable(u), zero: make([]byte, u*f.BlockBytes)}
	var err error
	if m == reconcile.Complete {
		if pr.cu, err = cbfalgebra.NewFromParams(pr.p); err != nil {
			return nil, err
		}
		for i := range u {
			pr.cu.InsertLocations(pr.at(i))
		}
		pr.ca, _ = cbfalgebra.NewFromParams(pr.p)
		pr.cb, _ = cbfalgebra.NewFromParams(pr.p)
		pr.diff, _ = cbfalgebra.NewFromParams(pr.p)
	} else {
		if pr.bloom, err = cbfalgebra.NewBloom(f.M, f.K, cbfalgebra.WithHash(f.Hash)); err != nil {
			return nil, err
		}
	}
	return pr, nil
}

func (pr *protoRunner) at(i int) []uint32 { return pr.locs[i*pr.f.K : (i+1)*pr.f.K] }

// blocksBytes is the encoded size of a MsgBlocks message carrying the given sorted
// indices.
func (pr *protoRunner) blocksBytes(idx []uint32) int {
	msg := reconcile.Message{Type: reconcile.MsgBlocks, Indices: idx, BlockSize: pr.f.BlockBytes,
		Data: pr.zero[:len(idx)*pr.f.BlockBytes]}
	return msg.EncodedSize()
}

func filterBytes(m reconcile.Method, p cbfalgebra.Params, universe, setSize int, data []byte) int {
	msg := reconcile.Message{Type: reconcile.MsgFilter, Filter: reconcile.FilterMsg{
		Method: m, Params: p, Universe: universe, SetSize: setSize, Data: data}}
	return msg.EncodedSize()
}

// splitSets draws S_A and S_B over [0, u) with |S_A ∩ S_B| = shared, |S_A| = na,
// |S_B| = nb (na + nb - shared <= u).
func splitSets(rng *rand.Rand, u, shared, na, nb int) (sa, sb *reconcile.Set) {
	perm := rng.Perm(u)
	sa, sb = reconcile.NewSet(u), reconcile.NewSet(u)
	for _, i := range perm[:shared] {
		sa.Add(i)
		sb.Add(i)
	}
	for _, i := range perm[shared:na] {
		sa.Add(i)
	}
	for _, i := range perm[na : na+nb-shared] {
		sb.Add(i)
	}
	return sa, sb
}

// complete runs complete reconciliation (paper §7) for one pair: S_A, S_B of n
// blocks each sharing r.N0 and covering U; A's CBF goes over the wire, B subtracts
// it and returns every block of its own that the difference filter holds.
func (pr *protoRunner) complete(n int, r Row, rng *rand.Rand) (trial, error) {
	sa, sb := splitSets(rng, pr.u, r.N0, n, n)
	pr.ca.Reset()
	pr.cb.Reset()
	for _, i := range sa.Indices() {
		pr.ca.InsertLocations(pr.at(i))
	}
	bIdx := sb.Indices()
	for _, i := range bIdx {
		pr.cb.InsertLocations(pr.at(i))
	}
	data, err := pr.ca.MarshalBinary()
	if err != nil {
		return trial{}, err
	}
	tr := trial{setB: len(bIdx), filterBytes: filterBytes(reconcile.Complete, pr.p, pr.u, sa.Len(), data)}
	got, err := cbfalgebra.DecodeCBF(data, 0) // B's side of the wire
	if err != nil {
		return tr, err
	}
	if err := cbfalgebra.SubtractInto(pr.diff, pr.cb, got, pr.cu); err != nil {
		return tr, err
	}
	pr.idx = pr.idx[:0]
	for _, i := range bIdx {
		if pr.diff.ContainsLocations(pr.at(i)) {
			pr.idx = append(pr.idx, uint32(i))
			if sa.Has(i) {
				tr.redundant++
			}
		} else if !sa.Has(i) {
			return tr, fmt.Errorf("transitstub: CBF subtraction missed block %d of S_B \\ S_A", i)
		}
	}
	tr.sent = len(pr.idx)
	tr.blocks = pr.blocksBytes(pr.idx)
	tr.ok = sa.Len()+tr.sent-tr.redundant == pr.u
	return tr, nil
}

// byers runs the Byers baseline for one pair: SE_A and SE_B are coded blocks of
// RS(nn, kk), (nn+n0)/2 each with n0 shared and together all nn; A sends the Bloom
// filter of SE_A, B returns its coded blocks the filter says A lacks; A can decode
// once it holds kk distinct coded blocks.
func (pr *protoRunner) byers(r Row, rng *rand.Rand) (trial, error) {
	nn := pr.u
	na := (nn + r.N0 + 1) / 2
	nb := nn + r.N0 - na
	sa, sb := splitSets(rng, nn, r.N0, na, nb)
	pr.bloom.Reset()
	for _, i := range sa.Indices() {
		pr.bloom.AddLocations(pr.at(i))
	}
	data, err := pr.bloom.MarshalBinary()
	if err != nil {
		return trial{}, err
	}
	p := pr.bloom.Params()
	tr := trial{setB: sb.Len(), filterBytes: filterBytes(reconcile.Byers, p, nn, sa.Len(), data)}
	got, err := cbfalgebra.DecodeBloom(data, 0)
	if err != nil {
		return tr, err
	}
	pr.idx = pr.idx[:0]
	have := sa.Clone()
	for _, i := range sb.Indices() {
		if !got.ContainsLocations(pr.at(i)) {
			pr.idx = append(pr.idx, uint32(i))
			have.Add(i)
		} else if !sa.Has(i) {
			tr.missed++
		}
	}
	tr.sent = len(pr.idx)
	tr.blocks = pr.blocksBytes(pr.idx)
	tr.ok = have.Len() >= r.KK
	tr.have = have.Indices()
	return tr, nil
}
