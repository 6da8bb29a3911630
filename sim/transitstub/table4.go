package transitstub

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/reconcile-p2p/reconcile/erasure"
	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

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
	// Methods to run; nil means the paper's two (reconcile.Methods). Any of
	// reconcile.AllMethods runs: every trial drives real sessions.
	Methods []reconcile.Method
	// Seed drives the choice of peers, of the block sets and of the block payloads.
	Seed uint64
	// Costs, when set, times every protocol step with this cost model (deterministic
	// results); when nil each step is timed by the wall clock around the real
	// Session.Step (reconcile.Outcome's Compute minus Build: a peer keeps its own
	// filter between sessions), so figures vary slightly from run to run.
	Costs *Costs
	// DecodeMS, when it has an entry for a row's kk, replaces the Reed–Solomon
	// decode time of A's last step (for example PaperDecodeMS).
	DecodeMS map[int]float64
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
	// Others are the results of the methods beyond the paper's (bitfield, iblt,
	// ccbf), in the order of Table4Config.Methods.
	Others []*MethodResult `json:"others,omitempty"`
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
}

// RunTable4 runs the paper's experiment 4 on net: for every row and method, Trials
// reconciliations between random pairs of peers A, B (the same pairs for both
// methods). Each trial drives two real reconcile.Session state machines (A pulls
// from B, one way, as in the paper) through the event engine: A looks B up through
// Chord, then every message the sessions emit is encoded, carried over the route
// between the two peers (delay plus size / bottleneck bandwidth, messages of one
// step back to back), decoded and stepped into the other session, whose compute
// time delays its answers. The trial ends when A holds the file (Byers: decoded it
// with the real erasure code and real payloads).
func RunTable4(net *Network, cfg Table4Config) ([]Table4Row, error) {
	cfg.defaults()
	if err := cfg.Filter.Validate(); err != nil {
		return nil, err
	}
	if cfg.Trials < 1 || cfg.N < 1 {
		return nil, fmt.Errorf("%w: trials and n must be positive", ErrParams)
	}
	for _, m := range cfg.Methods {
		if !m.Valid() {
			return nil, fmt.Errorf("%w: method %v", ErrParams, m)
		}
	}
	for _, r := range cfg.Rows {
		if r.N0 < 0 || r.N0 > cfg.N || r.KK != 2*cfg.N-r.N0 {
			return nil, fmt.Errorf("%w: row kk=%d n0=%d: need 0 <= n0 <= n and kk = 2n - n0 (n = %d)", ErrParams, r.KK, r.N0, cfg.N)
		}
		if r.KK > cfg.Filter.NN && slices.Contains(cfg.Methods, reconcile.Byers) {
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
			res, err := runRow(net, cfg, r, m, pairs, rng)
			if err != nil {
				return nil, fmt.Errorf("row kk=%d n0=%d %v: %w", r.KK, r.N0, m, err)
			}
			switch m {
			case reconcile.Complete:
				row.Complete = res
			case reconcile.Byers:
				row.Byers = res
			default:
				row.Others = append(row.Others, res)
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
func runRow(net *Network, cfg Table4Config, r Row, m reconcile.Method, pairs [][2]int, rng *rand.Rand) (*MethodResult, error) {
	f := cfg.Filter
	o := net.Overlay
	res := &MethodResult{Method: m, Trials: cfg.Trials}
	fx, err := newFixture(f, r, m, cfg.N, rng)
	if err != nil {
		return nil, err
	}
	scfg := reconcile.Config{Method: m, M: f.M, K: f.K, R: f.R, Hash: f.Hash, OneWay: true}
	if cfg.Costs == nil || (m != reconcile.Complete && m != reconcile.Byers) {
		// Steps are timed by the wall clock; with Costs the paper's two methods
		// are priced by the cost model and their sessions need no clock.
		scfg.Now = time.Now
	}
	if m == reconcile.Byers {
		scfg.Code = fx.code
		if _, ok := cfg.DecodeMS[r.KK]; !ok && cfg.Costs != nil {
			if _, _, err := cfg.Costs.MeasureDecode(f, r.KK, nil, 3, cfg.Seed); err != nil {
				return nil, err
			}
		}
	}
	var sim Sim
	times := make([]float64, 0, cfg.Trials)
	var runErr error
	for t, pair := range pairs {
		sa, sb, err := fx.split(rng)
		if err != nil {
			return nil, err
		}
		A, err := reconcile.NewSession(uint64(t+1), scfg, fx.u, sa, fx.store(sa))
		if err != nil {
			return nil, err
		}
		B, err := reconcile.NewSession(uint64(t+1), scfg, fx.u, sb, fx.store(sb))
		if err != nil {
			return nil, err
		}
		look := o.Lookup(pair[0], o.ID(pair[1]))
		res.MeanHops += float64(look.Hops)
		res.LookupMS += look.LatencyMS
		pr := newPairRun(&sim, o.Route(pair[0], pair[1]), A, B)
		pr.res, pr.cfg, pr.kk, pr.setB = res, &cfg, r.KK, sb.Len()
		pr.fail = func(err error) { runErr = cmp.Or(runErr, err) }
		pr.finish = func(at float64) {
			oa := A.Outcome()
			res.Sent += float64(oa.Received)
			res.Redundant += float64(oa.Redundant)
			res.Missed += float64(sb.Difference(sa) - (oa.Received - oa.Redundant))
			ok := A.Held().Len() == fx.u.Blocks()
			if m == reconcile.Byers {
				ok = oa.Decoded && fx.checkSource(A.Source())
			}
			if !ok {
				res.Failed++
			}
			times = append(times, at)
		}
		sim.At(look.LatencyMS, func() { // A knows B's address: start
			if err := A.Start(); err != nil {
				pr.fail(err)
				return
			}
			pr.start(sim.Now())
		})
	}
	sim.Run(inf)
	if runErr != nil {
		return nil, runErr
	}
	if len(times) != cfg.Trials {
		return nil, fmt.Errorf("transitstub: %d of %d trials ended", len(times), cfg.Trials)
	}
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

// pairRun carries the messages of one pair of sessions through the simulation.
// Each session is moved by a reconcile.Driver whose Sender is an outbox: the
// messages one step sends leave once the step's compute time has passed.
type pairRun struct {
	sim    *Sim
	route  topology.Route
	a, b   *reconcile.Session
	da, db *reconcile.Driver
	boxA   *outbox // what A sends
	boxB   *outbox // what B sends
	res    *MethodResult
	cfg    *Table4Config
	kk     int
	setB   int
	fail   func(error)
	finish func(at float64)
	ended  bool
}

// outbox is the simulator's reconcile.Sender: it keeps what a session sends
// until pairRun.send schedules it.
type outbox struct {
	msgs []outMsg
}

type outMsg struct {
	t    reconcile.MsgType
	wire []byte
}

// Send keeps a copy of the encoded message and its type.
func (o *outbox) Send(m *reconcile.Message, encoded []byte) error {
	o.msgs = append(o.msgs, outMsg{m.Type, bytes.Clone(encoded)})
	return nil
}

// Flush does nothing: pairRun.send schedules the outbox.
func (o *outbox) Flush() error { return nil }

func newPairRun(sim *Sim, route topology.Route, a, b *reconcile.Session) *pairRun {
	p := &pairRun{sim: sim, route: route, a: a, b: b, boxA: &outbox{}, boxB: &outbox{}}
	p.da = reconcile.NewDriver(a, p.boxA, reconcile.Limits{})
	p.db = reconcile.NewDriver(b, p.boxB, reconcile.Limits{})
	return p
}

// start sends A's first message at time at (A.Start has run).
func (p *pairRun) start(at float64) {
	if err := p.da.Flush(); err != nil {
		p.fail(err)
		return
	}
	p.send(p.boxA, p.db, at)
}

// send carries the messages in box to the driver to, leaving back to back from
// time at.
func (p *pairRun) send(box *outbox, to *reconcile.Driver, at float64) {
	t := at
	for _, m := range box.msgs {
		size := len(m.wire)
		ser := float64(size) * 8 / p.route.BottleneckBps * 1000
		t += ser
		cost := ser + float64(p.route.DelayMS)
		if m.t == reconcile.MsgFilter || m.t == reconcile.MsgMore { // MsgMore: IBLT's requests for cells
			p.res.FilterBytes += float64(size)
			p.res.FilterMS += cost
		} else {
			p.res.BlocksBytes += float64(size)
			p.res.BlocksMS += cost
		}
		wire := m.wire
		p.sim.At(t+float64(p.route.DelayMS), func() { p.deliver(to, wire) })
	}
	box.msgs = box.msgs[:0]
}

// deliver hands a message to its receiver's driver (decode, step, answer) and
// sends the answers after the step's compute time.
func (p *pairRun) deliver(d *reconcile.Driver, wire []byte) {
	if p.ended {
		return
	}
	to := d.Session()
	before := to.Outcome()
	if err := d.Receive(wire); err != nil {
		p.fail(err)
		return
	}
	after := to.Outcome()
	decode := float64(after.DecodeTime-before.DecodeTime) / float64(time.Millisecond)
	comp := float64((after.Compute-before.Compute)-(after.Build-before.Build))/float64(time.Millisecond) - decode
	// The cost model instead of the wall clock, for the paper's two methods; the
	// others are timed by the wall clock around the real Step.
	if c := p.cfg.Costs; c != nil && (after.Method == reconcile.Complete || after.Method == reconcile.Byers) {
		switch {
		case after.WireReceived[reconcile.MsgFilter] > before.WireReceived[reconcile.MsgFilter] && after.Method == reconcile.Complete:
			comp = c.completeMS(p.setB, 0)
		case after.WireReceived[reconcile.MsgFilter] > before.WireReceived[reconcile.MsgFilter]:
			comp = c.byersMS(p.setB)
		case after.Method == reconcile.Complete:
			comp = float64(after.Received-after.Redundant) * c.CBFInsertUS / 1000
		default:
			comp = 0
		}
		if decode > 0 || after.Decoded && !before.Decoded {
			decode = c.DecodeMS[p.kk]
		}
	}
	if ms, ok := p.cfg.DecodeMS[p.kk]; ok && after.Decoded && !before.Decoded {
		decode = ms
	}
	p.res.ComputeMS += comp
	p.res.DecodeMS += decode
	now := p.sim.Now() + comp + decode
	if to == p.a && to.Done() {
		p.ended = true
		if err := to.Err(); err != nil {
			p.fail(err)
			return
		}
		p.finish(now)
		return
	}
	if to == p.a {
		p.send(p.boxA, p.db, now)
	} else {
		p.send(p.boxB, p.da, now)
	}
}

// fixture holds what one row shares between its trials: the universe, the
// payloads of the blocks and, for Byers, the code and the coded blocks.
type fixture struct {
	f        FilterConfig
	r        Row
	n        int
	u        *reconcile.Universe
	source   [][]byte
	blocks   [][]byte // the blocks peers hold: source (complete) or coded (Byers)
	code     *erasure.Code
	verified bool
}

func newFixture(f FilterConfig, r Row, m reconcile.Method, n int, rng *rand.Rand) (*fixture, error) {
	fx := &fixture{f: f, r: r, n: n}
	buf := make([]byte, r.KK*f.BlockBytes)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	fx.source = make([][]byte, r.KK)
	for i := range fx.source {
		fx.source[i] = buf[i*f.BlockBytes : (i+1)*f.BlockBytes : (i+1)*f.BlockBytes]
	}
	fx.blocks = fx.source
	universe := r.KK
	if m == reconcile.Byers {
		var err error
		if fx.code, err = erasure.New(r.KK, f.NN, f.BlockBytes); err != nil {
			return nil, fmt.Errorf("%w: RS(%d, %d): %w", ErrParams, f.NN, r.KK, err)
		}
		if fx.blocks, err = fx.code.Encode(fx.source); err != nil {
			return nil, err
		}
		universe = f.NN
	}
	var err error
	if fx.u, err = reconcile.NewUniverse(universe); err != nil {
		return nil, err
	}
	if m == reconcile.Complete || m == reconcile.CCBF { // CBF(U) depends only on the file: built once, before any session
		if _, err := fx.u.Filter(f.cbfParams()); err != nil {
			return nil, err
		}
	}
	return fx, nil
}

// split draws the two peers' sets: complete, n blocks each sharing n0 and covering
// the file; Byers, (nn+n0)/2 coded blocks each sharing n0 and covering all nn.
func (fx *fixture) split(rng *rand.Rand) (sa, sb *reconcile.Set, err error) {
	if fx.code == nil {
		return reconcile.RandomSplit(rng, fx.r.KK, fx.r.N0, fx.n, fx.n)
	}
	nn := fx.f.NN
	na := (nn + fx.r.N0 + 1) / 2
	return reconcile.RandomSplit(rng, nn, fx.r.N0, na, nn+fx.r.N0-na)
}

func (fx *fixture) store(s *reconcile.Set) *reconcile.MemBlocks {
	st := reconcile.NewMemBlocks(s.Universe(), fx.f.BlockBytes)
	for _, i := range s.Indices() {
		st.Put(i, fx.blocks[i])
	}
	return st
}

// checkSource compares decoded source blocks with the originals (every block on
// the first call, a sample afterwards).
func (fx *fixture) checkSource(src [][]byte) bool {
	if len(src) != len(fx.source) {
		return false
	}
	step := 1
	if fx.verified {
		step = 97
	}
	for i := 0; i < len(src); i += step {
		if !bytes.Equal(src[i], fx.source[i]) {
			return false
		}
	}
	fx.verified = true
	return true
}
