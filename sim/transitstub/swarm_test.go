package transitstub

import (
	"errors"
	"reflect"
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
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
			if r.Model != "rounds" {
				t.Fatalf("model %q, want rounds", r.Model)
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

// runTwice runs cfg twice and fails unless both runs agree (the same seed
// must give the same result, the wall time aside).
func runTwice(t *testing.T, net *Network, cfg SwarmConfig) *SwarmResult {
	t.Helper()
	r, err := RunSwarm(net, cfg, fixedCosts())
	if err != nil {
		t.Fatal(err)
	}
	r2, err := RunSwarm(net, cfg, fixedCosts())
	if err != nil {
		t.Fatal(err)
	}
	r.WallSeconds, r2.WallSeconds = 0, 0
	if !reflect.DeepEqual(r, r2) {
		t.Fatalf("%s: same seed, different results", r.Model)
	}
	return r
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
		{"watch byers", func(c *SwarmConfig) { c.Watch, c.MaxBlocks, c.Method = true, 4, reconcile.Byers }, ErrParams},
		{"watch without window", func(c *SwarmConfig) { c.Watch = true }, ErrParams},
		{"watch rarity from filters", func(c *SwarmConfig) { c.Watch, c.MaxBlocks, c.RarestFirst, c.RarityFromFilters = true, 4, true, true }, ErrParams},
		{"watch least served", func(c *SwarmConfig) { c.Watch, c.MaxBlocks, c.LeastServed = true, 4, true }, ErrParams},
		{"no delay without watch", func(c *SwarmConfig) { c.NoDelay = true }, ErrParams},
		{"free control without watch", func(c *SwarmConfig) { c.FreeControl = true }, ErrParams},
		{"rarest uploads without watch", func(c *SwarmConfig) { c.UploadRarest = true }, ErrParams},
		{"central without one seed", func(c *SwarmConfig) { c.Central, c.Up = &CentralSchedule{}, 1e6 }, ErrParams},
		{"central without access links", func(c *SwarmConfig) { c.Central, c.OneSeed = &CentralSchedule{}, true }, ErrParams},
		{"central and watch", func(c *SwarmConfig) {
			c.Central, c.OneSeed, c.Up, c.Watch, c.MaxBlocks = &CentralSchedule{}, true, 1e6, true, 4
		}, ErrParams},
		{"central receiver", func(c *SwarmConfig) { c.Central, c.OneSeed, c.Up = &CentralSchedule{Receiver: "last"}, true, 1e6 }, ErrParams},
		{"central byers", func(c *SwarmConfig) {
			c.Central, c.OneSeed, c.Up, c.Method = &CentralSchedule{}, true, 1e6, reconcile.Byers
		}, ErrParams},
		{"negative trees", func(c *SwarmConfig) { c.Trees, c.OneSeed, c.Up = -1, true, 1e6 }, ErrParams},
		{"trees by delay without trees", func(c *SwarmConfig) { c.TreesByDelay, c.OneSeed, c.Up = true, true, 1e6 }, ErrParams},
		{"trees and central", func(c *SwarmConfig) { c.Trees, c.Central, c.OneSeed, c.Up = 2, &CentralSchedule{}, true, 1e6 }, ErrParams},
		{"trees without access links", func(c *SwarmConfig) { c.Trees, c.OneSeed = 2, true }, ErrParams},
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
	net, err := NewNetwork(topology.Paper(), topology.DefaultBandwidth, 200, ChordConfig{}, 1)
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

// TestRunSwarmAccessLinks: one seed, access links, parallel windowed
// exchanges. T* is a lower bound no peer may beat; every fetcher completes;
// the run is deterministic; complete and bitfield send no block twice to a
// peer (the pending blocks are left out).
func TestRunSwarmAccessLinks(t *testing.T) {
	net := smallNet(t, 20, ChordConfig{})
	f := PaperFilter()
	f.M, f.BlockBytes = 1024, 64<<10
	for _, m := range []reconcile.Method{reconcile.Complete, reconcile.Bitfield} {
		for _, cfg := range []SwarmConfig{
			{Up: 1e6, Down: 5e6, Parallel: 4, MaxBlocks: 4},
			{Classes: []AccessClass{{Share: 0.5, Down: 2e6, Up: 1e6}, {Share: 0.5, Down: 1e6, Up: 0.5e6}}, SeedUp: 2e6, Parallel: 2, MaxBlocks: 2},
			{Up: 1e6, Down: 5e6}, // one exchange at a time, whole differences
			{Up: 1e6, Down: 5e6, Parallel: 4, MaxBlocks: 2, RarestFirst: true, LeastServed: true, UploadSlots: 2},
		} {
			cfg.Filter, cfg.Blocks, cfg.OneSeed, cfg.Method, cfg.Seed = f, 32, true, m, 4
			r, err := RunSwarm(net, cfg, fixedCosts(32))
			if err != nil {
				t.Fatal(err)
			}
			r2, _ := RunSwarm(net, cfg, fixedCosts(32))
			r.WallSeconds, r2.WallSeconds = 0, 0
			if !reflect.DeepEqual(r, r2) {
				t.Fatalf("%v %+v: same seed, different results", m, cfg)
			}
			t.Logf("%v parallel %d window %d rarest %v least-served %v slots %d: T* %.0f ms, median %.2fx p95 %.2fx max %.2fx, %d reconciliations, redundant %d",
				m, cfg.Parallel, cfg.MaxBlocks, cfg.RarestFirst, cfg.LeastServed, cfg.UploadSlots, r.TStarMS, r.MedianTStar, r.P95TStar, r.MaxTStar, r.Reconciliations, r.RedundantBlocks)
			if r.Fetchers != 19 || r.Completed != 19 || r.FileBytes != 32*64<<10 {
				t.Fatalf("%v: %d of %d fetchers completed, file %d B", m, r.Completed, r.Fetchers, r.FileBytes)
			}
			if r.TStarMS <= 0 || r.Completions[0] < r.TStarMS-1e-6 {
				t.Fatalf("%v: completion %.1f ms before T* %.1f ms", m, r.Completions[0], r.TStarMS)
			}
			if m == reconcile.Bitfield && r.RedundantBlocks != 0 {
				t.Fatalf("bitfield: %d redundant blocks", r.RedundantBlocks)
			}
		}
	}
}

// TestRarityFromFilters: with filters so sparse that no two blocks share a
// counter in the neighbours' summed CBFs, rarity from the filters is the
// exact count, so the two runs take the same decisions; with loaded filters
// the counts only grow (never below exact), and the run still completes.
func TestRarityFromFilters(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	costs := fixedCosts(64)
	run := func(m int, filters bool) *SwarmResult {
		t.Helper()
		f := PaperFilter()
		f.M = m
		cfg := SwarmConfig{Filter: f, Blocks: 64, OneSeed: true, Method: reconcile.Complete, Seed: 3,
			Up: 1e6, Down: 5e6, Parallel: 4, MaxBlocks: 2, RarestFirst: true, RarityFromFilters: filters}
		r, err := RunSwarm(net, cfg, costs)
		if err != nil {
			t.Fatal(err)
		}
		if r.Completed != r.Fetchers {
			t.Fatalf("m=%d filters=%v: %d of %d completed", m, filters, r.Completed, r.Fetchers)
		}
		return r
	}
	exact, sparse := run(1<<20, false), run(1<<20, true)
	if exact.Choice != "rarest-exact" || sparse.Choice != "rarest-filters" {
		t.Fatalf("choices %q and %q", exact.Choice, sparse.Choice)
	}
	if !reflect.DeepEqual(exact.Completions, sparse.Completions) {
		t.Errorf("sparse filters: completions differ from exact counts (median %.0f vs %.0f ms)", sparse.MedianMS, exact.MedianMS)
	}
	run(256, true)
	cfg := smallSwarm(reconcile.Byers)
	cfg.RarestFirst, cfg.RarityFromFilters, cfg.MaxBlocks = true, true, 2
	if _, err := RunSwarm(net, cfg, costs); !errors.Is(err, ErrParams) {
		t.Errorf("byers with rarity from filters: %v, want ErrParams", err)
	}
}
