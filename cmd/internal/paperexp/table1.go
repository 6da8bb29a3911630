package paperexp

import (
	"context"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// Table1Columns are the columns of paper Table 1 in order: each set filter
// ("set_...", the CBF built from the result set itself) beside the algebra
// result it is compared with.
var Table1Columns = []string{
	"S1", "S2",
	"set_complement", "complement",
	"set_intersect", "intersect",
	"set_subtract", "subtract",
	"set_union", "union",
	"set_xor", "xor",
}

// Table1Config configures RunTable1. A zero Trials, Sizes, Ms or Ks means
// the paper's value (see DefaultTable1); Hash and Seed are used as given (the
// zero Hash is HashFast, not the paper's HashSHA1), so start from
// DefaultTable1 to get the paper's setup.
type Table1Config struct {
	Trials int                   // trials to average over (paper: 100)
	Seed   uint64                // seed of the random draws
	Hash   cbfalgebra.HashFamily // hash family (paper: sha1)
	Sizes  Sizes                 // set sizes (paper: PaperSizes)
	Ms     []int                 // counter counts (paper: 32768, 65536, 131072)
	Ks     []int                 // hash function counts (paper: 4, 6)
	// Progress, when set, is called after each trial.
	Progress func(done, total int)
}

// DefaultTable1 returns the configuration of paper Table 1.
func DefaultTable1() Table1Config {
	return Table1Config{
		Trials: 100,
		Seed:   1,
		Hash:   cbfalgebra.HashSHA1,
		Sizes:  PaperSizes,
		Ms:     []int{32768, 65536, 131072},
		Ks:     []int{4, 6},
	}
}

// Table1Row is one cell group of Table 1: for parameters (M, K) and one
// column, the measured false-positive rate (mean over trials, a fraction),
// the expected one from paper-notes §4 and the measured false-negative rate.
type Table1Row struct {
	M          int     `json:"m"`
	K          int     `json:"k"`
	Column     string  `json:"column"`
	MeasuredFP float64 `json:"measured_fp"`
	ExpectedFP float64 `json:"expected_fp"`
	MeasuredFN float64 `json:"measured_fn"`
}

// RunTable1 runs the experiment of paper Table 1 and returns one row per
// (m, k, column), in the order of cfg.Ms, cfg.Ks and Table1Columns.
func RunTable1(ctx context.Context, cfg Table1Config) ([]Table1Row, error) {
	cfg = cfg.withDefaults()
	grid, err := paramsGrid(cfg.Ms, cfg.Ks, cfg.Hash, 0)
	if err != nil {
		return nil, err
	}
	s := cfg.Sizes
	rows := make([]Table1Row, 0, len(grid)*len(Table1Columns))
	for _, p := range grid {
		for _, col := range Table1Columns {
			rows = append(rows, Table1Row{M: p.M, K: p.K, Column: col, ExpectedFP: expectedTable1(p, s, col)})
		}
	}
	err = runTrials(ctx, cfg.Trials, cfg.Seed, s, cfg.Progress, func(t *trialSets) error {
		for g, p := range grid {
			fp, fn, err := table1Trial(p, t)
			if err != nil {
				return err
			}
			for c := range Table1Columns {
				r := &rows[g*len(Table1Columns)+c]
				r.MeasuredFP += fp[c] / float64(cfg.Trials)
				r.MeasuredFN += fn[c] / float64(cfg.Trials)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (cfg Table1Config) withDefaults() Table1Config {
	d := DefaultTable1()
	if cfg.Trials == 0 {
		cfg.Trials = d.Trials
	}
	if cfg.Sizes == (Sizes{}) {
		cfg.Sizes = d.Sizes
	}
	if cfg.Ms == nil {
		cfg.Ms = d.Ms
	}
	if cfg.Ks == nil {
		cfg.Ks = d.Ks
	}
	return cfg
}

// expectedTable1 is the theory of paper-notes §4 for one column.
func expectedTable1(p cbfalgebra.Params, s Sizes, col string) float64 {
	m, k := p.M, p.K
	switch col {
	case "S1":
		return cbfalgebra.FP(m, k, s.N1)
	case "S2":
		return cbfalgebra.FP(m, k, s.N2)
	case "set_complement":
		return cbfalgebra.FP(m, k, s.U-s.N2)
	case "complement":
		return cbfalgebra.FPComplement(m, k, s.U, s.N2)
	case "set_intersect":
		return cbfalgebra.FP(m, k, s.N3)
	case "intersect":
		return cbfalgebra.FPIntersect(m, k, s.N1, s.N2, s.N3)
	case "set_subtract":
		return cbfalgebra.FP(m, k, s.N1-s.N3)
	case "subtract":
		return cbfalgebra.FPSubtract(m, k, s.U, s.N1, s.N2, s.N3)
	case "set_union":
		return cbfalgebra.FP(m, k, s.N1+s.N2-s.N3)
	case "union":
		return cbfalgebra.FPUnion(m, k, s.N1, s.N2, s.N3)
	case "set_xor":
		return cbfalgebra.FP(m, k, s.N1+s.N2-2*s.N3)
	case "xor":
		return cbfalgebra.FPXor(m, k, s.U, s.N1, s.N2, s.N3)
	}
	return 0
}

// setOps are the five operations of the paper, as membership tests on U's
// elements (for the true result sets) in the order complement, intersect,
// subtract, union, xor.
var setOps = []func(in1, in2 bool) bool{
	func(_, in2 bool) bool { return !in2 },
	func(in1, in2 bool) bool { return in1 && in2 },
	func(in1, in2 bool) bool { return in1 && !in2 },
	func(in1, in2 bool) bool { return in1 || in2 },
	func(in1, in2 bool) bool { return in1 != in2 },
}

// trialFilters builds CBF(U), CBF(S1) and CBF(S2) of one draw and the five
// algebra results from them (in the order of setOps).
func trialFilters(p cbfalgebra.Params, l locations, t *trialSets) (u, s1, s2 *cbfalgebra.CBF, results []*cbfalgebra.CBF, err error) {
	if u, err = filterOf(p, l, t.u, func(int) bool { return true }); err != nil {
		return nil, nil, nil, nil, err
	}
	if s1, err = filterOf(p, l, t.u, func(i int) bool { return t.inS1[i] }); err != nil {
		return nil, nil, nil, nil, err
	}
	if s2, err = filterOf(p, l, t.u, func(i int) bool { return t.inS2[i] }); err != nil {
		return nil, nil, nil, nil, err
	}
	if results, err = algebraResults(u, s1, s2); err != nil {
		return nil, nil, nil, nil, err
	}
	return u, s1, s2, results, nil
}

// algebraResults computes the five algebra results from CBF(U), CBF(S1) and
// CBF(S2), in the order of setOps.
func algebraResults(u, s1, s2 *cbfalgebra.CBF) ([]*cbfalgebra.CBF, error) {
	comp, err := cbfalgebra.Complement(u, s2)
	if err != nil {
		return nil, err
	}
	inter, err := cbfalgebra.Intersect(s1, s2)
	if err != nil {
		return nil, err
	}
	sub, err := cbfalgebra.Subtract(s1, s2, u)
	if err != nil {
		return nil, err
	}
	uni, err := cbfalgebra.Union(s1, s2, u)
	if err != nil {
		return nil, err
	}
	xor, err := cbfalgebra.Xor(s1, s2, u)
	if err != nil {
		return nil, err
	}
	return []*cbfalgebra.CBF{comp, inter, sub, uni, xor}, nil
}

// table1Trial measures every column of Table 1 for parameters p on one draw.
func table1Trial(p cbfalgebra.Params, t *trialSets) (fp, fn []float64, err error) {
	l := locate(p, t.words)
	_, s1, s2, results, err := trialFilters(p, l, t)
	if err != nil {
		return nil, nil, err
	}
	// Columns in Table1Columns order: filters and the true set each represents.
	filters := []*cbfalgebra.CBF{s1, s2}
	members := []func(int) bool{
		func(i int) bool { return t.inS1[i] },
		func(i int) bool { return t.inS2[i] },
	}
	for o, op := range setOps {
		member := func(i int) bool { return op(t.inS1[i], t.inS2[i]) }
		set, err := filterOf(p, l, t.u, member)
		if err != nil {
			return nil, nil, err
		}
		filters = append(filters, set, results[o])
		members = append(members, member, member)
	}
	fp = make([]float64, len(filters))
	fn = make([]float64, len(filters))
	for c, f := range filters {
		fp[c], fn[c] = measure(f, l, t, members[c])
	}
	return fp, fn, nil
}

// measure returns the share of probes f reports as members (fp) and the
// share of the true set (elements of U for which member is true) that f
// reports as absent (fn).
func measure(f *cbfalgebra.CBF, l locations, t *trialSets, member func(int) bool) (fp, fn float64) {
	pos := 0
	for i := t.u; i < t.u+t.probes; i++ {
		if f.ContainsLocations(l.of(i)) {
			pos++
		}
	}
	size, missed := 0, 0
	for i := 0; i < t.u; i++ {
		if member(i) {
			size++
			if !f.ContainsLocations(l.of(i)) {
				missed++
			}
		}
	}
	fp = float64(pos) / float64(t.probes)
	if size > 0 {
		fn = float64(missed) / float64(size)
	}
	return fp, fn
}
