package paperexp

import (
	"context"
	"fmt"
	"math"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// Table2Ops are the operations of paper Table 2 in order.
var Table2Ops = []string{"complement", "intersect", "subtract", "union", "xor"}

// Table2Config configures RunTable2. A zero Trials, U (with N and Probes),
// Alphas, Ms or Ks takes the paper's value (see DefaultTable2); Hash and Seed
// are used as given (the zero Hash is HashFast, not the paper's HashSHA1), so
// start from DefaultTable2 to get the paper's setup.
type Table2Config struct {
	Trials int                   // trials to average over, per alpha (paper: 100)
	Seed   uint64                // seed of the random draws (alpha i uses Seed+i)
	Hash   cbfalgebra.HashFamily // hash family (paper: sha1)
	// U, N and Probes are |U|, |S1| = |S2| and the probes outside U
	// (paper: 12000, 6000, 6000); |S1 ∩ S2| = round(alpha * N).
	U, N, Probes int
	Alphas       []float64 // paper: 1/3, 1/2, 2/3
	Ms, Ks       []int     // counter counts and hash function counts (paper: as Table 1)
	// Progress, when set, is called after each trial with the trials done
	// and the total over all alphas.
	Progress func(done, total int)
}

// DefaultTable2 returns the configuration of paper §5.2 / Table 2.
func DefaultTable2() Table2Config {
	return Table2Config{
		Trials: 100, Seed: 1, Hash: cbfalgebra.HashSHA1,
		U: 12000, N: 6000, Probes: 6000,
		Alphas: []float64{1.0 / 3, 1.0 / 2, 2.0 / 3},
		Ms:     []int{32768, 65536, 131072},
		Ks:     []int{4, 6},
	}
}

// Table2Row compares, for one (m, k, alpha, operation), answering membership
// in the result set with the algebra's single result filter against the
// double-CBF way (query the original filters and combine the answers).
// Probes are counter reads per query of an element of U (a query stops at the
// first zero counter); fp is measured on the probes outside U, fn on the true
// result set; rates are fractions.
type Table2Row struct {
	M                int     `json:"m"`
	K                int     `json:"k"`
	Alpha            float64 `json:"alpha"`
	Op               string  `json:"op"`
	AlgebraProbes    float64 `json:"algebra_probes"`
	DoubleProbes     float64 `json:"double_probes"`
	ProbeReduction   float64 `json:"probe_reduction"`
	AlgebraFP        float64 `json:"algebra_fp"`
	DoubleFP         float64 `json:"double_fp"`
	AlgebraFN        float64 `json:"algebra_fn"`
	DoubleFN         float64 `json:"double_fn"`
	ExpectedAlgebra  float64 `json:"expected_algebra_fp"`
	ExpectedDoubleFP float64 `json:"expected_double_fp"`
	ExpectedDoubleFN float64 `json:"expected_double_fn"`
}

// RunTable2 runs the comparison of paper §5.2 and returns one row per
// (m, k, alpha, operation).
func RunTable2(ctx context.Context, cfg Table2Config) ([]Table2Row, error) {
	cfg = cfg.withDefaults()
	grid, err := paramsGrid(cfg.Ms, cfg.Ks, cfg.Hash, 0)
	if err != nil {
		return nil, err
	}
	var rows []Table2Row
	for a, alpha := range cfg.Alphas {
		if alpha < 0 || alpha > 1 {
			return nil, fmt.Errorf("paperexp: alpha must be in [0, 1], got %g", alpha)
		}
		s := Sizes{U: cfg.U, N1: cfg.N, N2: cfg.N, N3: int(math.Round(alpha * float64(cfg.N))), Probes: cfg.Probes}
		first := len(rows)
		for _, p := range grid {
			for _, op := range Table2Ops {
				r := Table2Row{M: p.M, K: p.K, Alpha: alpha, Op: op}
				r.ExpectedAlgebra, r.ExpectedDoubleFP, r.ExpectedDoubleFN = expectedTable2(p, s, op)
				rows = append(rows, r)
			}
		}
		var progress func(int, int)
		if cfg.Progress != nil {
			progress = func(done, total int) { cfg.Progress(a*total+done, len(cfg.Alphas)*total) }
		}
		err := runTrials(ctx, cfg.Trials, cfg.Seed+uint64(a), s, progress, func(t *trialSets) error {
			for g, p := range grid {
				if err := table2Trial(p, t, rows[first+g*len(Table2Ops):first+(g+1)*len(Table2Ops)], cfg.Trials); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for i := range rows {
		if rows[i].DoubleProbes > 0 {
			rows[i].ProbeReduction = 1 - rows[i].AlgebraProbes/rows[i].DoubleProbes
		}
	}
	return rows, nil
}

func (cfg Table2Config) withDefaults() Table2Config {
	d := DefaultTable2()
	if cfg.Trials == 0 {
		cfg.Trials = d.Trials
	}
	if cfg.U == 0 {
		cfg.U, cfg.N, cfg.Probes = d.U, d.N, d.Probes
	}
	if cfg.Alphas == nil {
		cfg.Alphas = d.Alphas
	}
	if cfg.Ms == nil {
		cfg.Ms = d.Ms
	}
	if cfg.Ks == nil {
		cfg.Ks = d.Ks
	}
	return cfg
}

// expectedTable2 returns the expected fp of the algebra result and the
// expected (fp, fn) of the double-CBF way for one operation.
func expectedTable2(p cbfalgebra.Params, s Sizes, op string) (alg, dfp, dfn float64) {
	m, k := p.M, p.K
	switch op {
	case "complement":
		dfp, dfn = cbfalgebra.DoubleFPComplement(m, k, s.U, s.N2)
		return cbfalgebra.FPComplement(m, k, s.U, s.N2), dfp, dfn
	case "intersect":
		dfp, dfn = cbfalgebra.DoubleFPIntersect(m, k, s.N1, s.N2, s.N3)
		return cbfalgebra.FPIntersect(m, k, s.N1, s.N2, s.N3), dfp, dfn
	case "subtract":
		dfp, dfn = cbfalgebra.DoubleFPSubtract(m, k, s.N1, s.N2, s.N3)
		return cbfalgebra.FPSubtract(m, k, s.U, s.N1, s.N2, s.N3), dfp, dfn
	case "union":
		dfp, dfn = cbfalgebra.DoubleFPUnion(m, k, s.N1, s.N2, s.N3)
		return cbfalgebra.FPUnion(m, k, s.N1, s.N2, s.N3), dfp, dfn
	case "xor":
		dfp, dfn = cbfalgebra.DoubleFPXor(m, k, s.N1, s.N2, s.N3)
		return cbfalgebra.FPXor(m, k, s.U, s.N1, s.N2, s.N3), dfp, dfn
	}
	return 0, 0, 0
}

// doubleQuery answers membership in the result of operation op from the
// original filters, as the double-CBF way does, and counts the counters read.
// Each query stops reading as soon as its answer is known.
func doubleQuery(op int, u, s1, s2 *cbfalgebra.CBF, locs []uint32) (bool, int) {
	switch op {
	case 0: // complement: in U and not in S2
		inU, p := u.ProbeLocations(locs)
		if !inU {
			return false, p
		}
		in2, q := s2.ProbeLocations(locs)
		return !in2, p + q
	case 1: // intersect: in S1 and in S2
		in1, p := s1.ProbeLocations(locs)
		if !in1 {
			return false, p
		}
		in2, q := s2.ProbeLocations(locs)
		return in2, p + q
	case 2: // subtract: in S1 and not in S2
		in1, p := s1.ProbeLocations(locs)
		if !in1 {
			return false, p
		}
		in2, q := s2.ProbeLocations(locs)
		return !in2, p + q
	case 3: // union: in S1 or in S2
		in1, p := s1.ProbeLocations(locs)
		if in1 {
			return true, p
		}
		in2, q := s2.ProbeLocations(locs)
		return in2, p + q
	default: // xor: in exactly one
		in1, p := s1.ProbeLocations(locs)
		in2, q := s2.ProbeLocations(locs)
		return in1 != in2, p + q
	}
}

// table2Trial adds one draw's measurements, divided by trials, to rows (one
// per operation, in Table2Ops order) for parameters p.
func table2Trial(p cbfalgebra.Params, t *trialSets, rows []Table2Row, trials int) error {
	l := locate(p, t.words)
	u, s1, s2, results, err := trialFilters(p, l, t)
	if err != nil {
		return err
	}
	w := 1 / float64(trials)
	for o, op := range setOps {
		var algProbes, dblProbes, algFP, dblFP, algFN, dblFN, size int
		for i := 0; i < t.u+t.probes; i++ {
			locs := l.of(i)
			alg, ap := results[o].ProbeLocations(locs)
			dbl, dp := doubleQuery(o, u, s1, s2, locs)
			if i >= t.u { // a probe outside U: any positive is false
				if alg {
					algFP++
				}
				if dbl {
					dblFP++
				}
				continue
			}
			algProbes += ap
			dblProbes += dp
			if op(t.inS1[i], t.inS2[i]) {
				size++
				if !alg {
					algFN++
				}
				if !dbl {
					dblFN++
				}
			}
		}
		r := &rows[o]
		r.AlgebraProbes += w * float64(algProbes) / float64(t.u)
		r.DoubleProbes += w * float64(dblProbes) / float64(t.u)
		r.AlgebraFP += w * float64(algFP) / float64(t.probes)
		r.DoubleFP += w * float64(dblFP) / float64(t.probes)
		if size > 0 {
			r.AlgebraFN += w * float64(algFN) / float64(size)
			r.DoubleFN += w * float64(dblFN) / float64(size)
		}
	}
	return nil
}
