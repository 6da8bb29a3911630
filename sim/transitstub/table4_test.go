package transitstub

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// fixedCosts are hand-set costs, so results do not depend on this machine.
func fixedCosts(kks ...int) *Costs {
	c := &Costs{CBFDecodeMS: 0.05, SubtractMS: 0.1, CBFQueryUS: 0.1, CBFInsertUS: 0.1,
		BloomDecodeMS: 0.02, BloomQueryUS: 0.05, DecodeMS: map[int]float64{}, EncodeMS: map[int]float64{}}
	for _, kk := range kks {
		c.DecodeMS[kk], c.EncodeMS[kk] = 200, 10
	}
	return c
}

func smallTable4() Table4Config {
	f := PaperFilter()
	f.M = 4096
	return Table4Config{Filter: f, N: 500, Rows: []Row{{600, 400}, {900, 100}}, Trials: 8, Seed: 5}
}

func TestRunTable4(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	cfg := smallTable4()
	rows, err := RunTable4(net, withCosts(cfg, fixedCosts(600, 900)))
	if err != nil {
		t.Fatal(err)
	}
	again, err := RunTable4(net, withCosts(cfg, fixedCosts(600, 900)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rows, again) {
		t.Fatal("same seed and costs, different results")
	}
	for _, r := range rows {
		c, b := r.Complete, r.Byers
		if c == nil || b == nil {
			t.Fatalf("row %+v misses a method", r.Row)
		}
		if c.Failed != 0 || b.Failed != 0 || c.Missed != 0 || b.Redundant != 0 {
			t.Fatalf("row %+v: complete %+v byers %+v", r.Row, c, b)
		}
		// Complete sends every block A lacks, plus redundant ones.
		if want := float64(r.KK - cfg.N); c.Sent-c.Redundant != want {
			t.Fatalf("row %+v: complete sent %.2f new blocks, want %.0f", r.Row, c.Sent-c.Redundant, want)
		}
		if b.DecodeMS != 200 {
			t.Fatalf("row %+v: decode %.1f ms, want the 200 given", r.Row, b.DecodeMS)
		}
		for _, m := range []*MethodResult{c, b} {
			parts := m.LookupMS + m.FilterMS + m.ComputeMS + m.BlocksMS + m.DecodeMS
			if math.Abs(parts-m.MeanMS) > 1e-6*m.MeanMS {
				t.Fatalf("%v: components sum to %.3f, mean is %.3f", m.Method, parts, m.MeanMS)
			}
			if m.P95MS < m.MedianMS || m.FilterBytes <= 0 || m.BlocksBytes <= 0 {
				t.Fatalf("%v: %+v", m.Method, m)
			}
		}
		// Same pairs: the lookup part is identical.
		if c.LookupMS != b.LookupMS {
			t.Fatalf("lookup %.3f vs %.3f: methods did not use the same pairs", c.LookupMS, b.LookupMS)
		}
		// The CBF has r = 4 bits per counter, the Bloom filter 1.
		if ratio := c.FilterBytes / b.FilterBytes; ratio < 3.5 || ratio > 4.5 {
			t.Fatalf("CBF / Bloom message size %.2f, want about 4", ratio)
		}
		if r.Ratio != b.MeanMS/c.MeanMS {
			t.Fatalf("ratio %.4f", r.Ratio)
		}
	}
	only, err := RunTable4(net, Table4Config{Filter: cfg.Filter, N: 500, Rows: cfg.Rows[:1], Trials: 2,
		Methods: []reconcile.Method{reconcile.Complete}, Costs: fixedCosts()})
	if err != nil || only[0].Byers != nil || only[0].Ratio != 0 {
		t.Fatalf("complete only: %+v %v", only, err)
	}
}

func withCosts(cfg Table4Config, c *Costs) Table4Config {
	cfg.Costs = c
	return cfg
}

// Without a cost model every step is timed around the real session code.
func TestRunTable4Measured(t *testing.T) {
	net := smallNet(t, 20, ChordConfig{})
	cfg := smallTable4()
	cfg.Trials = 3
	rows, err := RunTable4(net, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Complete.Failed+r.Byers.Failed != 0 {
			t.Fatalf("row %+v: failed trials", r.Row)
		}
		if !(r.Byers.DecodeMS > 0 && r.Complete.ComputeMS > 0 && r.Complete.DecodeMS == 0) {
			t.Fatalf("row %+v: measured decode %.3f, compute %.3f", r.Row, r.Byers.DecodeMS, r.Complete.ComputeMS)
		}
	}
	// A decode time given per kk replaces the measured one.
	cfg.DecodeMS = map[int]float64{600: 1234}
	cfg.Methods = []reconcile.Method{reconcile.Byers}
	rows, err = RunTable4(net, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Byers.DecodeMS != 1234 || rows[1].Byers.DecodeMS == 1234 {
		t.Fatalf("decode override: %.1f, %.1f", rows[0].Byers.DecodeMS, rows[1].Byers.DecodeMS)
	}
}

// With a cost model missing a decode cost, it is measured with the real code.
func TestRunTable4MeasuresDecode(t *testing.T) {
	net := smallNet(t, 20, ChordConfig{})
	cfg := smallTable4()
	cfg.Rows = cfg.Rows[:1]
	cfg.Trials = 2
	cfg.Methods = []reconcile.Method{reconcile.Byers}
	costs := fixedCosts()
	if _, err := RunTable4(net, withCosts(cfg, costs)); err != nil {
		t.Fatal(err)
	}
	if costs.DecodeMS[600] <= 0 {
		t.Fatalf("decode cost not measured: %v", costs.DecodeMS)
	}
}

func TestRunTable4Errors(t *testing.T) {
	net := smallNet(t, 10, ChordConfig{})
	for _, tc := range []struct {
		name string
		edit func(*Table4Config)
	}{
		{"kk != 2n - n0", func(c *Table4Config) { c.Rows = []Row{{700, 400}} }},
		{"n0 > n", func(c *Table4Config) { c.Rows = []Row{{400, 600}} }},
		{"kk > nn", func(c *Table4Config) { c.N = 5000; c.Rows = []Row{{9000, 1000}} }},
		{"no trials", func(c *Table4Config) { c.Trials = -1 }},
		{"bad filter", func(c *Table4Config) { c.Filter.K = 0 }},
		{"bad method", func(c *Table4Config) { c.Methods = []reconcile.Method{9} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallTable4()
			tc.edit(&cfg)
			if _, err := RunTable4(net, withCosts(cfg, fixedCosts(600, 900))); !errors.Is(err, ErrParams) {
				t.Fatalf("err = %v, want ErrParams", err)
			}
		})
	}
}

func TestCalibrate(t *testing.T) {
	f := PaperFilter()
	f.M = 4096
	c, err := Calibrate(f, 300, 500, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{"decode": c.CBFDecodeMS, "subtract": c.SubtractMS, "query": c.CBFQueryUS,
		"insert": c.CBFInsertUS, "bloom decode": c.BloomDecodeMS, "bloom query": c.BloomQueryUS} {
		if !(v > 0) {
			t.Errorf("%s cost %g, want > 0", name, v)
		}
	}
	if _, err := Calibrate(f, 600, 500, 1, 1); !errors.Is(err, ErrParams) {
		t.Errorf("n > u: err = %v", err)
	}
	cl := c.Clone()
	cl.DecodeMS[1] = 1
	if _, ok := c.DecodeMS[1]; ok {
		t.Error("Clone shares its maps")
	}
}

func BenchmarkTable4Paper(b *testing.B) {
	net, err := NewNetwork(topology.Paper(), topology.DefaultBandwidth, 200, ChordConfig{}, 1)
	if err != nil {
		b.Fatal(err)
	}
	costs := fixedCosts(5000, 6000, 7000, 7500)
	for b.Loop() {
		if _, err := RunTable4(net, Table4Config{Trials: 10, Seed: 1, Costs: costs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/80, "ms/trial")
}
