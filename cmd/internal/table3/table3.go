// Package table3 reproduces the paper's Table 3 on this machine: complete set
// reconciliation against the Byers baseline, one pair of peers, real blocks.
//
// Setup (paper-notes §8): |S_A| = |S_B| = n = 4000 blocks, |S_A ∩ S_B| = n0 in
// {3000, 2000, 1000, 500}, m = 32768, k = 6. Complete reconciliation works on the
// kk = 2n - n0 blocks of the file (so S_A ∪ S_B is the whole file). Byers codes the
// kk source blocks with RS(8191, kk) and each peer holds (8191 + n0)/2 coded blocks,
// n0 of them shared. The time is from A starting (building and sending its filter)
// until A holds the whole file (for Byers: decoded it), measured around
// reconcile.Run, which carries every message through the msgpack codec. A pulls
// from B (one-way), as in the paper.
package table3

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/erasure"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// Config is the experiment's configuration; Default gives the paper's.
type Config struct {
	// Trials per row and method.
	Trials int
	// Seed makes the sets and the file deterministic.
	Seed uint64
	// BlockSize is the size of every block in bytes (a multiple of 64 for Leopard).
	BlockSize int
	// N is the number of blocks each peer holds.
	N int
	// N0s are the overlaps |S_A ∩ S_B|, one row each.
	N0s []int
	// M and K are the filter parameters of both methods.
	M, K int
	// NN is the number of coded blocks of Byers' code.
	NN int
	// Hash is the hash family of both methods' filters (the paper used SHA-1).
	Hash cbfalgebra.HashFamily
	// Progress, when set, is called after every trial with (done, total).
	Progress func(done, total int)
}

// Default returns the paper's configuration with 100 trials and 64-byte blocks.
func Default() Config {
	return Config{Trials: 100, Seed: 1, BlockSize: 64, N: 4000, N0s: []int{3000, 2000, 1000, 500}, M: 32768, K: 6, NN: 8191, Hash: cbfalgebra.HashSHA1}
}

// Row is one (row, method) line of the result; the JSON names are the command's
// schema. Every figure is a mean over the trials.
type Row struct {
	KK     int    `json:"kk"`
	N0     int    `json:"n0"`
	Method string `json:"method"`
	// TimeMS is the wall time from A's start until A holds the whole file.
	TimeMS float64 `json:"time_ms"`
	// DecodeMS is the erasure-decoding part of TimeMS (Byers).
	DecodeMS float64 `json:"decode_ms"`
	// Missed is the number of blocks of S_B \ S_A that B did not send.
	Missed float64 `json:"missed"`
	// Redundant is the number of blocks A received and already held.
	Redundant float64 `json:"redundant"`
	// ExpectedRedundant is the theory: n0 * FPSubtract (T7) for complete, 0 for
	// Byers (a Bloom filter has no false negatives).
	ExpectedRedundant float64 `json:"expected_redundant"`
	// DecodeSuccess is the share of trials after which A held the whole file, every
	// byte checked (for Byers: decoded).
	DecodeSuccess float64 `json:"decode_success"`
	// WireBytes is the bytes A sent and received (encoded messages).
	WireBytes float64 `json:"wire_bytes"`

	// ComputeMS is the sessions' own compute time (both sides; part of TimeMS).
	ComputeMS float64 `json:"-"`
	// MaxMissed is the largest Missed of any trial.
	MaxMissed int `json:"-"`
	// ExpectedMissed is the Bloom filter theory for Byers: |SE_B \ SE_A| * fp(|SE_A|).
	ExpectedMissed float64 `json:"-"`
}

// PaperRow is one row of the paper's Table 3 (Pentium dual-core 1.7 GHz, 2010).
type PaperRow struct {
	KK, N0                                   int
	ByersMS, DecodeMS, ByersMissed, Complete float64
	// CompleteRedundant is NaN where the paper's figure is illegible.
	CompleteRedundant float64
}

// Paper holds the paper's figures (paper-notes §8).
var Paper = []PaperRow{
	{5000, 3000, 974, 948, 1655, 19, math.NaN()},
	{6000, 2000, 593, 570, 1140, 19, 0.77},
	{7000, 1000, 287, 266, 629, 20, 2.15},
	{7500, 500, 162, 143, 379, 20, 2.15},
}

// PaperFor returns the paper's row for (kk, n0), if any.
func PaperFor(kk, n0 int) (PaperRow, bool) {
	for _, p := range Paper {
		if p.KK == kk && p.N0 == n0 {
			return p, true
		}
	}
	return PaperRow{}, false
}

// Run runs every row and returns two Rows per row (complete, then byers). It
// returns an error if complete reconciliation ever misses a block.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	if cfg.Trials < 1 || cfg.N < 1 || cfg.BlockSize < 1 || cfg.NN < 1 {
		return nil, fmt.Errorf("table3: trials, n, block size and nn must be positive")
	}
	var out []Row
	total, done := cfg.Trials*len(cfg.N0s), 0
	for ri, n0 := range cfg.N0s {
		if n0 < 0 || n0 > cfg.N {
			return nil, fmt.Errorf("table3: n0 = %d outside [0, n = %d]", n0, cfg.N)
		}
		r, err := newRow(cfg, n0, rand.New(rand.NewPCG(cfg.Seed, uint64(ri))))
		if err != nil {
			return nil, err
		}
		for trial := range cfg.Trials {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := r.completeTrial(); err != nil {
				return nil, fmt.Errorf("table3: kk=%d n0=%d trial %d: complete: %w", r.kk, n0, trial, err)
			}
			if err := r.byersTrial(); err != nil {
				return nil, fmt.Errorf("table3: kk=%d n0=%d trial %d: byers: %w", r.kk, n0, trial, err)
			}
			done++
			if cfg.Progress != nil {
				cfg.Progress(done, total)
			}
		}
		c, b := r.rows(cfg.Trials)
		if c.MaxMissed != 0 {
			return nil, fmt.Errorf("table3: complete reconciliation missed %d blocks at kk=%d n0=%d", c.MaxMissed, r.kk, n0)
		}
		out = append(out, c, b)
	}
	return out, nil
}

// row holds one row's file, code and running sums.
type row struct {
	cfg      Config
	n0, kk   int
	rng      *rand.Rand
	source   [][]byte
	coded    [][]byte
	code     *erasure.Code
	complete sums
	byers    sums
}

type sums struct {
	time, decode, compute time.Duration
	missed, redundant     int
	maxMissed             int
	ok                    int
	wire                  int
}

func newRow(cfg Config, n0 int, rng *rand.Rand) (*row, error) {
	kk := 2*cfg.N - n0
	r := &row{cfg: cfg, n0: n0, kk: kk, rng: rng}
	buf := make([]byte, kk*cfg.BlockSize)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	r.source = make([][]byte, kk)
	for i := range r.source {
		r.source[i] = buf[i*cfg.BlockSize : (i+1)*cfg.BlockSize : (i+1)*cfg.BlockSize]
	}
	var err error
	if r.code, err = erasure.New(kk, cfg.NN, cfg.BlockSize); err != nil {
		return nil, err
	}
	if r.coded, err = r.code.Encode(r.source); err != nil {
		return nil, err
	}
	return r, nil
}

// universe returns a fresh universe of n blocks with its per-file tables (block
// addresses, CBF(U)) built for p: every peer builds them once per file, before any
// session, so they stay out of the timing. Each trial draws a new hash seed, which
// stands for the paper's fresh random 32-bit integers: the blocks' positions in the
// filters are new in every trial, as they were in the paper.
func universe(n int, p cbfalgebra.Params) (*reconcile.Universe, error) {
	u, err := reconcile.NewUniverse(n)
	if err != nil {
		return nil, err
	}
	if p.R == 1 {
		_, err = u.Locations(p, nil, 0)
	} else {
		_, err = u.Filter(p)
	}
	return u, err
}

func storeOf(s *reconcile.Set, blocks [][]byte, size int) *reconcile.MemBlocks {
	st := reconcile.NewMemBlocks(s.Universe(), size)
	for _, i := range s.Indices() {
		st.Put(i, blocks[i])
	}
	return st
}

func (r *row) completeTrial() error {
	a, b, err := reconcile.RandomSplit(r.rng, r.kk, r.n0, r.cfg.N, r.cfg.N)
	if err != nil {
		return err
	}
	sa, sb := storeOf(a, r.source, r.cfg.BlockSize), storeOf(b, r.source, r.cfg.BlockSize)
	cfg := reconcile.Config{Method: reconcile.Complete, M: r.cfg.M, K: r.cfg.K, Hash: r.cfg.Hash, Seed: r.rng.Uint64(), OneWay: true}
	A, B, elapsed, err := run(cfg, r.cfg.N, r.kk, a, b, sa, sb)
	if err != nil {
		return err
	}
	o := A.Outcome()
	ok := A.Held().Len() == r.kk
	for i := 0; ok && i < r.kk; i++ {
		ok = bytes.Equal(sa.Block(i), r.source[i])
	}
	r.complete.add(elapsed, o, B.Outcome(), ok)
	return nil
}

func (r *row) byersTrial() error {
	nn := r.cfg.NN
	extra := nn - r.n0
	a, b, err := reconcile.RandomSplit(r.rng, nn, r.n0, r.n0+extra/2, r.n0+extra-extra/2)
	if err != nil {
		return err
	}
	sa, sb := storeOf(a, r.coded, r.cfg.BlockSize), storeOf(b, r.coded, r.cfg.BlockSize)
	cfg := reconcile.Config{Method: reconcile.Byers, M: r.cfg.M, K: r.cfg.K, Hash: r.cfg.Hash, Seed: r.rng.Uint64(), OneWay: true, Code: r.code}
	A, B, elapsed, err := run(cfg, a.Len(), nn, a, b, sa, sb)
	if err != nil {
		return err
	}
	o := A.Outcome()
	ok := o.Decoded
	for i := 0; ok && i < r.kk; i++ {
		ok = bytes.Equal(A.Source()[i], r.source[i])
	}
	r.byers.add(elapsed, o, B.Outcome(), ok)
	return nil
}

// run times one session of cfg between A (holding a) and B (holding b) over a file of
// blocks blocks, with the universe's tables for A's filter (sized for n) built
// beforehand (see universe).
func run(cfg reconcile.Config, n, blocks int, a, b *reconcile.Set, sa, sb reconcile.Blocks) (A, B *reconcile.Session, elapsed time.Duration, err error) {
	p, err := cfg.Params(n)
	if err != nil {
		return nil, nil, 0, err
	}
	u, err := universe(blocks, p)
	if err != nil {
		return nil, nil, 0, err
	}
	if A, err = reconcile.NewSession(1, cfg, u, a, sa); err != nil {
		return nil, nil, 0, err
	}
	if B, err = reconcile.NewSession(1, cfg, u, b, sb); err != nil {
		return nil, nil, 0, err
	}
	t0 := time.Now()
	if err := reconcile.Run(A, B, reconcile.Limits{}); err != nil {
		return nil, nil, 0, err
	}
	return A, B, time.Since(t0), nil
}

func (s *sums) add(elapsed time.Duration, a, b reconcile.Outcome, ok bool) {
	s.time += elapsed
	s.decode += a.DecodeTime
	s.compute += a.Compute + b.Compute
	s.missed += a.Missed
	s.maxMissed = max(s.maxMissed, a.Missed)
	s.redundant += a.Redundant
	s.wire += a.WireBytes()
	if ok {
		s.ok++
	}
}

func (s *sums) row(kk, n0 int, method string, trials int) Row {
	t := float64(trials)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / t }
	return Row{
		KK: kk, N0: n0, Method: method,
		TimeMS: ms(s.time), DecodeMS: ms(s.decode), ComputeMS: ms(s.compute),
		Missed: float64(s.missed) / t, MaxMissed: s.maxMissed,
		Redundant: float64(s.redundant) / t, DecodeSuccess: float64(s.ok) / t,
		WireBytes: float64(s.wire) / t,
	}
}

func (r *row) rows(trials int) (Row, Row) {
	m, k, n := r.cfg.M, r.cfg.K, r.cfg.N
	c := r.complete.row(r.kk, r.n0, reconcile.Complete.String(), trials)
	c.ExpectedRedundant = float64(r.n0) * cbfalgebra.FPSubtract(m, k, r.kk, n, n, r.n0)
	b := r.byers.row(r.kk, r.n0, reconcile.Byers.String(), trials)
	extra := r.cfg.NN - r.n0
	heldA, lackA := r.n0+extra/2, extra-extra/2
	b.ExpectedMissed = float64(lackA) * cbfalgebra.FP(m, k, heldA)
	return c, b
}
