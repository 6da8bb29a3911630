package transitstub

import (
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// watchSwarm is a one-seed swarm of 32 blocks of 64 KiB over access links
// of 1 MB/s up and 5 MB/s down, in the watch model.
func watchSwarm(m reconcile.Method) SwarmConfig {
	f := PaperFilter()
	f.M, f.BlockBytes = 1024, 64<<10
	return SwarmConfig{Filter: f, Blocks: 32, OneSeed: true, Method: m, Seed: 4, Up: 1e6, Down: 5e6,
		Watch: true, Parallel: 4, MaxBlocks: 8, RarestFirst: true}
}

// TestWatchSwarm: in the watch model every fetcher completes, no block
// reaches a peer twice (one source is asked for each block at a time), no
// peer beats T*, each fetcher reconciles once per source at least, and a
// run is deterministic.
func TestWatchSwarm(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	for _, m := range []reconcile.Method{reconcile.Complete, reconcile.Bitfield, reconcile.CCBF} {
		for _, edit := range []func(*SwarmConfig){
			func(*SwarmConfig) {},
			func(c *SwarmConfig) { c.RarestFirst = false },
			func(c *SwarmConfig) { c.Parallel, c.MaxBlocks, c.UploadSlots = 1, 1, 1 },
			func(c *SwarmConfig) { c.NoSuperSeed = true },
			func(c *SwarmConfig) {
				c.Classes = []AccessClass{{Share: 0.5, Down: 2e6, Up: 1e6}, {Share: 0.5, Down: 1e6, Up: 0.5e6}}
			},
		} {
			cfg := watchSwarm(m)
			edit(&cfg)
			r := runTwice(t, net, cfg)
			t.Logf("%v sources %d window %d rarest %v upload-rarest %v: T* %.0f ms, median %.2fx p95 %.2fx max %.2fx, seed sent %d B, %d reconciliations",
				m, cfg.Parallel, cfg.MaxBlocks, cfg.RarestFirst, cfg.UploadRarest, r.TStarMS, r.MedianTStar, r.P95TStar, r.MaxTStar, r.SeedSentBytes, r.Reconciliations)
			if r.Fetchers != 29 || r.Completed != 29 {
				t.Fatalf("%v: %d of %d fetchers completed", m, r.Completed, r.Fetchers)
			}
			if r.RedundantBlocks != 0 || r.BlocksSent != 29*32 {
				t.Fatalf("%v: %d blocks sent, %d redundant; want %d, none", m, r.BlocksSent, r.RedundantBlocks, 29*32)
			}
			if r.Completions[0] < r.TStarMS-1e-6 {
				t.Fatalf("%v: completion %.1f ms before T* %.1f ms", m, r.Completions[0], r.TStarMS)
			}
			if r.Reconciliations < 29*cfg.Parallel || r.Bytes[reconcile.MsgFilter.String()] <= 0 {
				t.Fatalf("%v: %d reconciliations, %d filter bytes", m, r.Reconciliations, r.Bytes[reconcile.MsgFilter.String()])
			}
			if r.SeedSentBytes < r.FileBytes {
				t.Fatalf("%v: the seed sent %d bytes of a %d-byte file", m, r.SeedSentBytes, r.FileBytes)
			}
		}
	}
}

// TestWatchSwarmDelays: the route delays cost time, and control messages
// that cross in no time (FreeControl) win back part of it, not all.
func TestWatchSwarmDelays(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	median := map[string]float64{}
	for name, edit := range map[string]func(*SwarmConfig){
		"delays":         func(*SwarmConfig) {},
		"free control":   func(c *SwarmConfig) { c.FreeControl = true },
		"no delay":       func(c *SwarmConfig) { c.NoDelay = true },
		"no delay, free": func(c *SwarmConfig) { c.NoDelay, c.FreeControl = true, true },
	} {
		cfg := watchSwarm(reconcile.Complete)
		edit(&cfg)
		r, err := RunSwarm(net, cfg, fixedCosts())
		if err != nil {
			t.Fatal(err)
		}
		if r.Completed != r.Fetchers {
			t.Fatalf("%s: %d of %d completed", name, r.Completed, r.Fetchers)
		}
		median[name] = r.MedianMS
		want := map[string]string{"delays": "watch", "free control": "watch+free-control", "no delay": "watch+no-delay", "no delay, free": "watch+no-delay+free-control"}[name]
		if r.Model != want {
			t.Errorf("%s: model %q, want %q", name, r.Model, want)
		}
	}
	t.Logf("median completion, ms: %v", median)
	if !(median["no delay"] < median["free control"] && median["free control"] < median["delays"]) {
		t.Fatalf("medians %v: want no delay < free control < delays", median)
	}
	if median["no delay, free"] != median["no delay"] {
		t.Fatalf("without delays, free control changed the run: %v", median)
	}
}

// TestWatchSwarmRotation: fetchers that watch one source each, out of
// about a dozen neighbours, still all complete: a source with nothing to
// give leaves its place to a spare peer.
func TestWatchSwarmRotation(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	cfg := watchSwarm(reconcile.Complete)
	cfg.Parallel = 1
	r, err := RunSwarm(net, cfg, fixedCosts())
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != r.Fetchers || r.Reconciliations <= r.Fetchers {
		t.Fatalf("%d of %d completed after %d reconciliations (want some rotations)", r.Completed, r.Fetchers, r.Reconciliations)
	}
}

// TestWatchSwarmShares: peers that start with a share each and no seed
// trade the rest.
func TestWatchSwarmShares(t *testing.T) {
	net := smallNet(t, 20, ChordConfig{})
	cfg := watchSwarm(reconcile.Complete)
	cfg.OneSeed, cfg.Share = false, 0.25
	r, err := RunSwarm(net, cfg, fixedCosts())
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != r.Fetchers || r.SeedSentBytes != 0 {
		t.Fatalf("%d of %d completed; seed sent %d", r.Completed, r.Fetchers, r.SeedSentBytes)
	}
}

// TestWatchUploadRarest: a source that sends the rarest block asked first
// still sends every block asked once, one at a time on its uplink, and the
// busy answers of the upload queue count what waits there.
func TestWatchUploadRarest(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	cfg := watchSwarm(reconcile.Complete)
	cfg.UploadRarest, cfg.UploadSlots = true, 1
	r, err := RunSwarm(net, cfg, fixedCosts())
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != r.Fetchers || r.RedundantBlocks != 0 || r.BlocksSent != int64(r.Fetchers*cfg.Blocks) {
		t.Fatalf("%d of %d completed, %d blocks sent (%d redundant)", r.Completed, r.Fetchers, r.BlocksSent, r.RedundantBlocks)
	}
}

// TestWatchNoSuperSeed: a seed that offers every block leaves the choice
// to the fetchers, so a slow one asked at random sends some blocks twice
// before others once, where a super-seed sends each once first; every
// fetcher still completes. The option belongs to the watch model.
func TestWatchNoSuperSeed(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	cfg := watchSwarm(reconcile.Complete)
	cfg.SeedUp, cfg.RarestFirst = 0.25e6, false
	cfg.Blocks, cfg.Filter.BlockBytes = 128, 16<<10
	super, err := RunSwarm(net, cfg, fixedCosts())
	if err != nil {
		t.Fatal(err)
	}
	cfg.NoSuperSeed = true
	plain, err := RunSwarm(net, cfg, fixedCosts())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed out at %.0f ms (super) and %.0f ms (plain); seed sent %d and %d B of %d; T* %.0f ms",
		super.SeedOutMS, plain.SeedOutMS, super.SeedSentBytes, plain.SeedSentBytes, super.FileBytes, super.TStarMS)
	if plain.Model != "watch+no-super-seed" || super.Model != "watch" {
		t.Fatalf("models %q and %q", super.Model, plain.Model)
	}
	if plain.Completed != plain.Fetchers || plain.RedundantBlocks != 0 {
		t.Fatalf("plain seed: %d of %d completed, %d redundant", plain.Completed, plain.Fetchers, plain.RedundantBlocks)
	}
	// The super-seed's first copy leaves at the file's time on its uplink
	// (plus the wait for the first asks); the plain seed's later, having
	// sent blocks twice.
	fileMS := 1000 * float64(super.FileBytes) / cfg.SeedUp
	if super.SeedOutMS > 1.1*fileMS || plain.SeedOutMS < 1.1*fileMS {
		t.Fatalf("first copy out at %.0f ms (super) and %.0f ms (plain); the file takes %.0f ms on the seed's uplink", super.SeedOutMS, plain.SeedOutMS, fileMS)
	}
	cfg.Watch = false
	if _, err := RunSwarm(net, cfg, fixedCosts()); err == nil {
		t.Fatal("NoSuperSeed without the watch model: no error")
	}
}

// TestWatchSuperSeedFirstCopy: a super-seed whose uplink is the swarm's
// bottleneck sends every block once before any twice (package peer's
// superSeed), so its first copy is out when its uplink has carried the
// file, plus the wait for the first asks. On the paper's topology, where
// asks cross hundreds of ms and a watcher's offers wait seconds behind the
// other watchers' blocks, the model's seed once took back such offers and
// dealt them again, and was out at 1.24x.
func TestWatchSuperSeedFirstCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("200 peers on the paper's topology")
	}
	net, err := NewNetwork(topology.Paper(), topology.DefaultBandwidth, 200, ChordConfig{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := PaperFilter()
	f.BlockBytes = 64 << 10
	cfg := SwarmConfig{Filter: f, Blocks: 256, OneSeed: true, Method: reconcile.Complete, Seed: 1,
		Up: 20e6 / 8, Down: 100e6 / 8, SeedUp: 5e6 / 8, Watch: true, Parallel: 16, MaxBlocks: 16, RarestFirst: true}
	r, err := RunSwarm(net, cfg, fixedCosts())
	if err != nil {
		t.Fatal(err)
	}
	fileMS := 1000 * float64(r.FileBytes) / cfg.SeedUp
	t.Logf("first copy out at %.0f ms (%.3fx the file's time on the seed's uplink), median %.2fx T*", r.SeedOutMS, r.SeedOutMS/fileMS, r.MedianTStar)
	if r.Completed != r.Fetchers || r.SeedOutMS > 1.08*fileMS {
		t.Fatalf("%d of %d completed; first copy out at %.0f ms, the file takes %.0f ms on the seed's uplink", r.Completed, r.Fetchers, r.SeedOutMS, fileMS)
	}
}

// TestWatchSeedLeaves: a seed that leaves once every block is held by a
// fetcher sends no more: with an uplink fast enough to feed every fetcher
// itself, the fetchers finish later without it than with it, all of them,
// from each other. The seed leaves after its first copy is out and before
// the last fetcher completes.
func TestWatchSeedLeaves(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	cfg := watchSwarm(reconcile.Complete)
	cfg.SeedUp = 50e6
	stays, err := RunSwarm(net, cfg, fixedCosts())
	if err != nil {
		t.Fatal(err)
	}
	for _, edit := range []func(*SwarmConfig){func(*SwarmConfig) {}, func(c *SwarmConfig) { c.RarestFirst = false }, func(c *SwarmConfig) { c.NoSuperSeed = true }} {
		c := cfg
		c.SeedLeaves = true
		edit(&c)
		r := runTwice(t, net, c)
		t.Logf("rarest %v super %v: seed left at %.0f ms (first copy out at %.0f), median %.0f ms against %.0f ms with the seed staying; seed sent %d B",
			c.RarestFirst, !c.NoSuperSeed, r.SeedLeftMS, r.SeedOutMS, r.MedianMS, stays.MedianMS, r.SeedSentBytes)
		if r.Completed != r.Fetchers || r.RedundantBlocks != 0 {
			t.Fatalf("%d of %d completed, %d redundant", r.Completed, r.Fetchers, r.RedundantBlocks)
		}
		if r.SeedLeftMS < r.SeedOutMS || r.SeedLeftMS <= 0 || r.SeedLeftMS > r.MaxMS {
			t.Fatalf("seed left at %.0f ms; first copy out at %.0f, last completion %.0f", r.SeedLeftMS, r.SeedOutMS, r.MaxMS)
		}
		if r.MedianMS <= stays.MedianMS || r.Model != "watch+seed-leaves" && r.Model != "watch+no-super-seed+seed-leaves" {
			t.Fatalf("%s: median %.0f ms, %.0f ms with the seed staying", r.Model, r.MedianMS, stays.MedianMS)
		}
	}
	if stays.SeedLeftMS != 0 {
		t.Fatalf("a seed that stays left at %.0f ms", stays.SeedLeftMS)
	}
	cfg.SeedLeaves, cfg.Watch = true, false
	if _, err := RunSwarm(net, cfg, fixedCosts()); err == nil {
		t.Fatal("SeedLeaves without the watch model: no error")
	}
}

// TestWatchSwarmBudget: a watch model that runs out of reconciliations
// says so instead of running on.
func TestWatchSwarmBudget(t *testing.T) {
	net := smallNet(t, 30, ChordConfig{})
	cfg := watchSwarm(reconcile.Complete)
	cfg.MaxReconciliations = 10
	if _, err := RunSwarm(net, cfg, fixedCosts()); err == nil {
		t.Fatal("a run of 29 fetchers with 4 sources each within 10 reconciliations did not fail")
	}
}
