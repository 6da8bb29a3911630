package transitstub

import (
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// pushSwarm is a one-seed swarm of 32 blocks of 64 KiB over access links of
// 1 MB/s up and 5 MB/s down, for the central schedule and the trees.
func pushSwarm() SwarmConfig {
	f := PaperFilter()
	f.M, f.BlockBytes = 1024, 64<<10
	return SwarmConfig{Filter: f, Blocks: 32, OneSeed: true, Method: reconcile.Complete, Seed: 4, Up: 1e6, Down: 5e6}
}

// TestCentralSchedule: with instant knowledge every fetcher completes from
// exactly one copy of each block, no peer beats T*, the seed sends every
// block before it sends any twice, and a run is deterministic; with its
// knowledge a delay late, pushes arrive redundant and the swarm is slower.
func TestCentralSchedule(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	medians := map[string]float64{}
	for _, cs := range []CentralSchedule{
		{},
		{Receiver: "random"},
		{Receiver: "nearest"},
		{RandomBlocks: true},
		{Neighbours: true},
		{Lag: true, Neighbours: true, Receiver: "random"},
	} {
		cfg := pushSwarm()
		cfg.Central = &cs
		r := runTwice(t, net, cfg)
		t.Logf("%s: T* %.0f ms, median %.2fx p95 %.2fx max %.2fx, seed out %.2fx, %d sent, %d redundant",
			r.Model, r.TStarMS, r.MedianTStar, r.P95TStar, r.MaxTStar, r.SeedOutMS/r.TStarMS, r.BlocksSent, r.RedundantBlocks)
		medians[r.Model] = r.MedianTStar
		if r.Fetchers != 29 || r.Completed != 29 {
			t.Fatalf("%s: %d of %d fetchers completed", r.Model, r.Completed, r.Fetchers)
		}
		if r.Completions[0] < r.TStarMS-1e-6 || r.SeedOutMS < r.TStarMS-1e-6 {
			t.Fatalf("%s: completion %.1f ms, seed out %.1f ms, before T* %.1f ms", r.Model, r.Completions[0], r.SeedOutMS, r.TStarMS)
		}
		if cs.Lag {
			if r.RedundantBlocks == 0 || r.BlocksSent != 29*32+r.RedundantBlocks {
				t.Fatalf("%s: %d blocks sent, %d redundant", r.Model, r.BlocksSent, r.RedundantBlocks)
			}
			continue
		}
		if r.RedundantBlocks != 0 || r.BlocksSent != 29*32 {
			t.Fatalf("%s: %d blocks sent, %d redundant; want %d, none", r.Model, r.BlocksSent, r.RedundantBlocks, 29*32)
		}
		// Rarest first: the seed's first copies leave back to back, at T*.
		if !cs.RandomBlocks && r.SeedOutMS > r.TStarMS+1 {
			t.Fatalf("%s: every block out of the seed at %.1f ms, T* %.1f ms", r.Model, r.SeedOutMS, r.TStarMS)
		}
	}
	if lag, now := medians["central+lag+neighbours+random-receiver"], medians["central+neighbours"]; lag <= now {
		t.Fatalf("knowledge a delay late: median %.2fx, at once %.2fx", lag, now)
	}
	if nodelay := func() float64 {
		cfg := pushSwarm()
		cfg.Central, cfg.NoDelay = &CentralSchedule{}, true
		return runTwice(t, net, cfg).MedianTStar
	}(); nodelay >= medians["central"] {
		t.Fatalf("no route delays: median %.2fx, with them %.2fx", nodelay, medians["central"])
	}
}

// TestTrees: pushed down the stripe trees every block reaches every fetcher
// once, the seed sends one copy, no peer beats T*, and a run is
// deterministic, with access links alike and in two classes.
func TestTrees(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	for _, k := range []int{1, 4, 40} {
		for _, byDelay := range []bool{false, true} {
			cfg := pushSwarm()
			cfg.Trees, cfg.TreesByDelay = k, byDelay
			if k == 4 && byDelay {
				cfg.Classes = []AccessClass{{Share: 0.5, Down: 2e6, Up: 1e6}, {Share: 0.5, Down: 1e6, Up: 0.25e6}}
			}
			r := runTwice(t, net, cfg)
			t.Logf("%s: median %.2fx p95 %.2fx max %.2fx", r.Model, r.MedianTStar, r.P95TStar, r.MaxTStar)
			if r.Completed != 29 || r.BlocksSent != 29*32 || r.RedundantBlocks != 0 {
				t.Fatalf("%s: %d completed, %d sent, %d redundant", r.Model, r.Completed, r.BlocksSent, r.RedundantBlocks)
			}
			if r.SeedSentBytes != r.Bytes[reconcile.MsgBlocks.String()]/29 {
				t.Fatalf("%s: the seed sent %d bytes of %d", r.Model, r.SeedSentBytes, r.Bytes[reconcile.MsgBlocks.String()])
			}
			if r.Completions[0] < r.TStarMS-1e-6 {
				t.Fatalf("%s: completion %.1f ms before T* %.1f ms", r.Model, r.Completions[0], r.TStarMS)
			}
		}
	}
}

// BenchmarkPushSchedules200 times the watch model, the central schedule
// (at once and a delay late) and the stripe trees on 200 peers and 16 MiB
// in 256 KiB blocks, the testnet's goal parameters.
func BenchmarkPushSchedules200(b *testing.B) {
	net, err := NewNetwork(topology.Paper(), topology.DefaultBandwidth, 200, ChordConfig{}, 1)
	if err != nil {
		b.Fatal(err)
	}
	f := PaperFilter()
	f.BlockBytes = 256 << 10
	for name, edit := range map[string]func(*SwarmConfig){
		"watch":   func(c *SwarmConfig) { c.Watch, c.Parallel, c.MaxBlocks, c.RarestFirst = true, 16, 16, true },
		"central": func(c *SwarmConfig) { c.Central = &CentralSchedule{} },
		"central-lag": func(c *SwarmConfig) {
			c.Central = &CentralSchedule{Lag: true, Neighbours: true, Receiver: "random"}
		},
		"trees": func(c *SwarmConfig) { c.Trees, c.TreesByDelay = 8, true },
	} {
		b.Run(name, func(b *testing.B) {
			cfg := SwarmConfig{Filter: f, Blocks: 64, OneSeed: true, Up: 20e6 / 8, Down: 100e6 / 8, Seed: 1}
			edit(&cfg)
			for b.Loop() {
				if _, err := RunSwarm(net, cfg, &Costs{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
