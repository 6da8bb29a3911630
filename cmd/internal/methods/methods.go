// Package methods compares every reconciliation method of package reconcile on the
// same work: two peers hold n blocks each of a file of n + d blocks, each lacking d
// blocks the other holds (|S_A ∩ S_B| = n - d, S_A ∪ S_B = the file), and A pulls
// from B (one way, as in the paper and the peer) or both pull (two way). For each
// difference d of a sweep it runs real sessions through the message codec with
// offers (block indices, no payloads, so the figures are the reconciliation's own
// traffic) and reports the bytes on the wire, round trips, compute time, missed and
// redundant blocks, and per method: IBLT cells per element of the symmetric
// difference, the compressed CBF's size against r*m bits and its decode time.
//
// Byers runs as in the paper's Table 3: the kk = n + d source blocks are coded with
// RS(NN, kk) and each peer holds (NN + n0)/2 coded blocks, n0 = n - d of them shared;
// points with kk > NN are skipped. Its figures leave out the erasure decoding (see
// package table3). The paper's Table 3 rows are the points d = n - n0 for n0 in
// {3000, 2000, 1000, 500} (n = 4000): the default sweep includes them and [Row]
// carries the paper's figures there.
package methods

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/cmd/internal/table3"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// Config is the experiment's configuration; [Default] gives the standard sweep.
type Config struct {
	// N is the number of blocks each peer holds.
	N int
	// Diffs are the differences d (blocks each side lacks), 1 <= d <= N.
	Diffs []int
	// Trials per point and method; every trial draws fresh sets and a fresh hash
	// seed.
	Trials int
	// Seed makes the run deterministic (same seed, same sets and counts).
	Seed uint64
	// Methods to run; nil means reconcile.AllMethods.
	Methods []reconcile.Method
	// NN is the length of Byers' Reed–Solomon code (the paper's 8191).
	NN int
	// TwoWay makes both peers end with S_A ∪ S_B; the default is A pulling from B.
	TwoWay bool
	// Universe, when larger than n + d, is the file's block count: the blocks
	// beyond S_A ∪ S_B are held by neither peer (early in a download, when each
	// peer holds a small part of a large file). 0 means n + d. Byers, whose blocks
	// are coded, is skipped then.
	Universe int
	// Progress, when set, is called after every trial with (done, total).
	Progress func(done, total int)
}

// Default returns n = 4000 (the paper's), a sweep of d from 1 to n that includes
// the Table 3 points, 5 trials, every method, RS(8191, kk) for Byers.
func Default() Config {
	return Config{N: 4000, Diffs: []int{1, 3, 10, 30, 100, 300, 1000, 2000, 3000, 3500, 4000},
		Trials: 5, Seed: 1, NN: 8191}
}

// Row is the mean over the trials of one method at one difference. JSON names are
// the command's schema.
type Row struct {
	N      int    `json:"n"`
	D      int    `json:"d"`
	Method string `json:"method"`
	// Universe is the number of blocks of the file (coded blocks for Byers).
	Universe int `json:"universe"`
	// WireBytes is every encoded message of the session, both directions, with
	// offers in place of payloads; FilterBytes is the part in filter messages
	// (filters, bitfields, IBLT cells).
	WireBytes   float64 `json:"wire_bytes"`
	FilterBytes float64 `json:"filter_bytes"`
	// RoundTrips is the message flights divided by two.
	RoundTrips float64 `json:"round_trips"`
	// ComputeMS is both sessions' compute (Start and Step: building, coding,
	// decoding, querying); BuildMS the part spent building their own filters or
	// cells, which a peer can keep between sessions.
	ComputeMS float64 `json:"compute_ms"`
	BuildMS   float64 `json:"build_ms"`
	// Missed is the blocks of S_B \ S_A (and, two way, S_A \ S_B) that were not
	// sent; Redundant the blocks sent that the receiver held. MaxMissed and
	// MaxRedundant are the largest of any trial.
	Missed       float64 `json:"missed"`
	Redundant    float64 `json:"redundant"`
	MaxMissed    int     `json:"max_missed"`
	MaxRedundant int     `json:"max_redundant"`
	// Cells is the IBLT cells sent, CellsPerDiff per element of the symmetric
	// difference (2d).
	Cells        float64 `json:"cells,omitempty"`
	CellsPerDiff float64 `json:"cells_per_diff,omitempty"`
	// FilterRatio is, for complete and ccbf, A's filter on the wire (the cbfalgebra
	// encoding, compressed for ccbf) against r*m bits; FilterDecodeUS the time to
	// decode it (decompress and cbfalgebra.DecodeCBF).
	FilterRatio    float64 `json:"filter_ratio,omitempty"`
	FilterDecodeUS float64 `json:"filter_decode_us,omitempty"`
	// Params are the filter parameters of the last trial (complete, ccbf, byers).
	Params cbfalgebra.Params `json:"params"`
	// Paper is the paper's Table 3 row at this point (n0 = n - d), if any.
	Paper *Paper `json:"paper,omitempty"`
}

// Paper holds the paper's Table 3 figures at one point (a 1.7 GHz Pentium, 2010).
type Paper struct {
	KK          int     `json:"kk"`
	N0          int     `json:"n0"`
	ByersMS     float64 `json:"byers_ms"`
	DecodeMS    float64 `json:"byers_decode_ms"`
	ByersMissed float64 `json:"byers_missed"`
	CompleteMS  float64 `json:"complete_ms"`
	// CompleteRedundant is nil where the paper's figure is illegible.
	CompleteRedundant *float64 `json:"complete_redundant,omitempty"`
}

func paperAt(kk, n0 int) *Paper {
	p, ok := table3.PaperFor(kk, n0)
	if !ok {
		return nil
	}
	out := &Paper{KK: p.KK, N0: p.N0, ByersMS: p.ByersMS, DecodeMS: p.DecodeMS, ByersMissed: p.ByersMissed, CompleteMS: p.Complete}
	if !math.IsNaN(p.CompleteRedundant) {
		v := p.CompleteRedundant
		out.CompleteRedundant = &v
	}
	return out
}

// Run runs the sweep. It fails if an exact method misses or repeats a block, or if
// complete or ccbf misses one: those would be bugs, not figures.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	if cfg.N < 1 || cfg.Trials < 1 || len(cfg.Diffs) == 0 {
		return nil, fmt.Errorf("methods: n, trials and the diffs must be positive")
	}
	ms := cfg.Methods
	if ms == nil {
		ms = reconcile.AllMethods
	}
	for _, m := range ms {
		if !m.Valid() {
			return nil, fmt.Errorf("methods: %w: %v", reconcile.ErrMethod, m)
		}
	}
	for _, d := range cfg.Diffs {
		if d < 1 || d > cfg.N {
			return nil, fmt.Errorf("methods: d = %d outside [1, n = %d]", d, cfg.N)
		}
	}
	total, done := cfg.Trials*len(cfg.Diffs)*len(ms), 0
	var out []Row
	for di, d := range cfg.Diffs {
		for _, m := range ms {
			if m == reconcile.Byers && (cfg.N+d > cfg.NN || cfg.Universe > cfg.N+d) {
				done += cfg.Trials
				continue // kk = n + d source blocks do not fit RS(NN, kk), or not all are held
			}
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(di)<<8|uint64(m)))
			r, err := runPoint(ctx, cfg, d, m, rng, func() {
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, total)
				}
			})
			if err != nil {
				return nil, fmt.Errorf("methods: n=%d d=%d %v: %w", cfg.N, d, m, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func runPoint(ctx context.Context, cfg Config, d int, m reconcile.Method, rng *rand.Rand, tick func()) (Row, error) {
	n := cfg.N
	r := Row{N: n, D: d, Method: m.String(), Universe: max(n+d, cfg.Universe)}
	n0 := n - d
	if n == table3.Default().N && r.Universe == n+d {
		r.Paper = paperAt(n+d, n0)
	}
	na, nb := n, n
	if m == reconcile.Byers {
		r.Universe = cfg.NN
		na = (cfg.NN + n0 + 1) / 2
		nb = cfg.NN + n0 - na
	}
	u, err := reconcile.NewUniverse(r.Universe)
	if err != nil {
		return r, err
	}
	var decodeTrials int
	for range cfg.Trials {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		sa, sb, err := reconcile.RandomSplit(rng, r.Universe, n0, na, nb)
		if err != nil {
			return r, err
		}
		scfg := reconcile.Config{Method: m, OneWay: !cfg.TwoWay, Seed: rng.Uint64()}
		A, err := reconcile.NewSession(1, scfg, u, sa, nil)
		if err != nil {
			return r, err
		}
		B, err := reconcile.NewSession(1, scfg, u, sb, nil)
		if err != nil {
			return r, err
		}
		if err := reconcile.Run(A, B, reconcile.Limits{}); err != nil {
			return r, err
		}
		oa, ob := A.Outcome(), B.Outcome()
		r.WireBytes += float64(oa.WireBytes())
		r.FilterBytes += float64(oa.WireSent[reconcile.MsgFilter] + oa.WireReceived[reconcile.MsgFilter])
		r.RoundTrips += float64(oa.Flights) / 2
		r.ComputeMS += ms(oa.Compute + ob.Compute)
		r.BuildMS += ms(oa.Build + ob.Build)
		missed, redundant := oa.Missed+ob.Missed, oa.Redundant+ob.Redundant
		r.Missed += float64(missed)
		r.Redundant += float64(redundant)
		r.MaxMissed, r.MaxRedundant = max(r.MaxMissed, missed), max(r.MaxRedundant, redundant)
		r.Cells += float64(oa.Cells)
		r.Params = oa.Params
		if m.Exact() && (missed != 0 || redundant != 0) {
			return r, fmt.Errorf("exact method missed %d and repeated %d blocks", missed, redundant)
		}
		if m != reconcile.Byers && missed != 0 {
			return r, fmt.Errorf("missed %d blocks", missed)
		}
		if m == reconcile.Complete || m == reconcile.CCBF {
			ratio, us, err := filterFigures(u, oa.Params, sa, m == reconcile.CCBF)
			if err != nil {
				return r, err
			}
			r.FilterRatio += ratio
			r.FilterDecodeUS += us
			decodeTrials++
		}
		tick()
	}
	t := float64(cfg.Trials)
	for _, p := range []*float64{&r.WireBytes, &r.FilterBytes, &r.RoundTrips, &r.ComputeMS, &r.BuildMS,
		&r.Missed, &r.Redundant, &r.Cells, &r.FilterRatio, &r.FilterDecodeUS} {
		*p /= t
	}
	if m == reconcile.IBLT {
		r.CellsPerDiff = r.Cells / float64(2*d) // the same cells serve both directions
	}
	return r, nil
}

// filterFigures rebuilds A's filter as the session sent it and returns its size on
// the wire against r*m bits and the time to decode it (mean of a few runs).
func filterFigures(u *reconcile.Universe, p cbfalgebra.Params, sa *reconcile.Set, compress bool) (ratio, us float64, err error) {
	c, err := cbfalgebra.NewFromParams(p)
	if err != nil {
		return 0, 0, err
	}
	var loc []uint32
	for _, i := range sa.Indices() {
		if loc, err = u.Locations(p, loc[:0], i); err != nil {
			return 0, 0, err
		}
		c.InsertLocations(loc)
	}
	data, err := c.MarshalBinary()
	if err != nil {
		return 0, 0, err
	}
	wire := data
	if compress {
		wire = reconcile.CompressFilter(nil, data)
	}
	const reps = 5
	t0 := time.Now()
	for range reps {
		raw := wire
		if compress {
			if raw, err = reconcile.DecompressFilter(wire, len(data)); err != nil {
				return 0, 0, err
			}
		}
		if _, err := cbfalgebra.DecodeCBF(raw, len(raw)); err != nil {
			return 0, 0, err
		}
	}
	us = float64(time.Since(t0).Microseconds()) / reps
	return float64(len(wire)*8) / float64(p.R*p.M), us, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Best returns, for each d, the method that moves the fewest bytes among those that
// never missed a block, counting each redundant block as blockSize bytes of payload
// (the blocks A needs cost the same under every exact or complete method).
func Best(rows []Row, blockSize int) map[int]string {
	best := map[int]string{}
	cost := map[int]float64{}
	for _, r := range rows {
		if r.MaxMissed > 0 {
			continue
		}
		c := r.WireBytes + r.Redundant*float64(blockSize)
		if b, ok := cost[r.D]; !ok || c < b {
			cost[r.D], best[r.D] = c, r.Method
		}
	}
	return best
}

// Diffs returns the distinct differences of rows in increasing order.
func Diffs(rows []Row) []int {
	var ds []int
	for _, r := range rows {
		if !slices.Contains(ds, r.D) {
			ds = append(ds, r.D)
		}
	}
	slices.Sort(ds)
	return ds
}
