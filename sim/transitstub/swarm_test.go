package transitstub

import (
	"errors"
	"reflect"
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

func smallSwarm(m reconcile.Method) SwarmConfig {
	f := PaperFilter()
	f.M, f.NN = 8192, 1200
	return SwarmConfig{Filter: f, Blocks: 800, Share: 0.2, Method: m, Seed: 2}
}

func TestRunSwarm(t *testing.T) {
	net := smallNet(t, 40, ChordConfig{})
	for _, m := range reconcile.Methods {
		t.Run(m.String(), func(t *testing.T) {
			costs := fixedCosts(800)
			r, err := RunSwarm(net, smallSwarm(m), costs)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := RunSwarm(net, smallSwarm(m), costs)
			if err != nil {
				t.Fatal(err)
			}
			r.WallSeconds, r2.WallSeconds = 0, 0
			if !reflect.DeepEqual(r, r2) {
				t.Fatal("same seed, different swarm results")
			}
			if r.Completed != 40 || len(r.Completions) != 40 {
				t.Fatalf("%d of 40 peers completed", r.Completed)
			}
			if !(r.MedianMS > 0 && r.P95MS >= r.MedianMS && r.MaxMS >= r.P95MS) {
				t.Fatalf("completion times %+v", r)
			}
			if r.Bytes["filter"] <= 0 || r.Bytes["blocks"] <= 0 || r.Reconciliations < 40 {
				t.Fatalf("traffic %+v, %d reconciliations", r.Bytes, r.Reconciliations)
			}
			// Each peer needs at least the blocks it lacked at the start.
			minNew := int64(40 * (800 - 160))
			if m == reconcile.Byers {
				minNew = int64(40 * (800 - 160 - 1)) // kk distinct coded blocks before decoding
			}
			if r.BlocksSent-r.RedundantBlocks < minNew {
				t.Fatalf("%d new blocks sent, need at least %d", r.BlocksSent-r.RedundantBlocks, minNew)
			}
			if m == reconcile.Complete && r.MissedBlocks != 0 {
				t.Fatalf("complete reconciliation missed %d blocks", r.MissedBlocks)
			}
		})
	}
}

func TestRunSwarmSharesEverything(t *testing.T) {
	net := smallNet(t, 5, ChordConfig{})
	cfg := smallSwarm(reconcile.Complete)
	cfg.Share = 1 // every peer starts complete
	r, err := RunSwarm(net, cfg, fixedCosts())
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 5 || r.Reconciliations != 0 || r.MaxMS != 0 {
		t.Fatalf("%+v", r)
	}
}

func TestRunSwarmErrors(t *testing.T) {
	net := smallNet(t, 5, ChordConfig{})
	for _, tc := range []struct {
		name string
		edit func(*SwarmConfig)
		want error
	}{
		{"share above 1", func(c *SwarmConfig) { c.Share = 1.5 }, ErrParams},
		{"bad method", func(c *SwarmConfig) { c.Method = 7 }, ErrParams},
		{"blocks above nn", func(c *SwarmConfig) { c.Method = reconcile.Byers; c.Blocks = 5000 }, ErrParams},
		{"no budget", func(c *SwarmConfig) { c.MaxReconciliations = 1 }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallSwarm(reconcile.Complete)
			tc.edit(&cfg)
			_, err := RunSwarm(net, cfg, fixedCosts(800))
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func BenchmarkSwarm200(b *testing.B) {
	net, err := NewNetwork(Paper(), DefaultBandwidth, 200, ChordConfig{}, 1)
	if err != nil {
		b.Fatal(err)
	}
	costs := fixedCosts(5000)
	var events int
	for b.Loop() {
		r, err := RunSwarm(net, SwarmConfig{Seed: 1}, costs)
		if err != nil {
			b.Fatal(err)
		}
		events = r.Events
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestRunSwarmSmallByers: a Byers swarm of a few peers converges. It once held just
// kk distinct coded blocks, so a peer needed every one of them, and one its Bloom
// filter reported by a false positive never came: the run failed with "did not
// converge".
func TestRunSwarmSmallByers(t *testing.T) {
	net := smallNet(t, 5, ChordConfig{})
	cfg := smallSwarm(reconcile.Byers)
	cfg.Filter.M = 4096 // a crowded filter: false positives are common
	r, err := RunSwarm(net, cfg, fixedCosts(800))
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 5 {
		t.Fatalf("%d of 5 peers completed", r.Completed)
	}
}
