package labnet

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labplot"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
	"github.com/reconcile-p2p/reconcile/testnet/rates"
)

// simAccess reads the swarm's access links and exchange flags into a
// SwarmConfig.
func simAccess(c *cli.Context) (ts.SwarmConfig, error) {
	var sc ts.SwarmConfig
	var err error
	for _, r := range []struct {
		name string
		dst  *float64
	}{{"up", &sc.Up}, {"down", &sc.Down}, {"seed-up", &sc.SeedUp}} {
		if *r.dst, err = rates.ParseRate(c.String(r.name)); err != nil {
			return sc, cliutil.Usagef("--%s %q: want a rate such as 20Mbit (bits/s, SI prefixes) or 2MiB/s (bytes/s, IEC prefixes), or none", r.name, c.String(r.name))
		}
	}
	if sc.Classes, err = rates.ParseClasses(c.String("classes")); err != nil {
		return sc, cliutil.Usagef("--classes %q: want share:down/up,... such as 0.5:10Mbit/2Mbit,0.5:100Mbit/20Mbit, shares summing to 1", c.String("classes"))
	}
	if len(sc.Classes) > 0 && (c.IsSet("up") || c.IsSet("down")) {
		return sc, cliutil.Usagef("--classes replaces --up and --down: give one or the other")
	}
	sc.Parallel, sc.MaxBlocks, sc.RarestFirst, sc.LeastServed = c.Int("parallel"), c.Int("window"), c.Bool("rarest-first"), c.Bool("least-served")
	sc.UploadSlots, sc.Watch = c.Int("upload-slots"), c.Bool("watch")
	sc.FreeControl, sc.UploadRarest = c.Bool("free-control"), c.Bool("upload-rarest")
	if c.Bool("central") {
		sc.Central = &ts.CentralSchedule{Lag: c.Bool("central-lag"), Neighbours: c.Bool("central-neighbours"),
			Receiver: c.String("central-receiver"), RandomBlocks: c.String("central-block") == "random"}
		if r := sc.Central.Receiver; r != "neediest" && r != "random" && r != "nearest" {
			return sc, cliutil.Usagef("--central-receiver %q: want neediest, random or nearest", r)
		}
		if b := c.String("central-block"); b != "rarest" && b != "random" {
			return sc, cliutil.Usagef("--central-block %q: want rarest or random", b)
		}
	} else if c.IsSet("central-lag") || c.IsSet("central-neighbours") || c.IsSet("central-receiver") || c.IsSet("central-block") {
		return sc, cliutil.Usagef("--central-lag, --central-neighbours, --central-receiver and --central-block need --central")
	}
	switch l := c.String("latency"); l {
	case "transitstub":
	case "none":
		sc.NoDelay = true
	default:
		return sc, cliutil.Usagef("--latency %q: want transitstub or none", l)
	}
	sc.Trees, sc.TreesByDelay = c.Int("trees"), c.Bool("trees-by-delay")
	if sc.Trees < 0 {
		return sc, cliutil.Usagef("--trees must not be negative")
	}
	if sc.TreesByDelay && sc.Trees == 0 {
		return sc, cliutil.Usagef("--trees-by-delay needs --trees")
	}
	if sc.Trees > 0 && (sc.Central != nil || sc.Watch || sc.FreeControl || sc.UploadRarest) {
		return sc, cliutil.Usagef("--trees replaces the peers' protocol: it takes no --central, --watch, --free-control or --upload-rarest")
	}
	if sc.Trees > 0 && (c.Float64("share") != 0 || !sc.HasAccessLinks()) {
		return sc, cliutil.Usagef("--trees needs one seed (--share 0) and access links (--up, --down or --classes)")
	}
	if sc.Central != nil {
		switch {
		case sc.Watch || sc.FreeControl || sc.UploadRarest:
			return sc, cliutil.Usagef("--central replaces the peers' protocol: it takes no --watch, --free-control or --upload-rarest")
		case c.Float64("share") != 0 || !sc.HasAccessLinks():
			return sc, cliutil.Usagef("--central needs one seed (--share 0) and access links (--up, --down or --classes)")
		}
	} else if !sc.Watch && sc.Trees == 0 && (sc.NoDelay || sc.FreeControl || sc.UploadRarest) {
		return sc, cliutil.Usagef("--free-control and --upload-rarest need --watch; --latency none needs --watch, --central or --trees")
	}
	if sc.Watch {
		// As the testnet's fetches: 16 sources, a window of 16 blocks.
		if !c.IsSet("parallel") {
			sc.Parallel = 16
		}
		if !c.IsSet("window") {
			sc.MaxBlocks = 16
		}
		if !c.IsSet("rarest-first") && !c.IsSet("rarity") {
			sc.RarestFirst = true
		}
	}
	sc.NoSuperSeed, sc.SeedLeaves = !c.Bool("super-seed"), c.Bool("seed-leaves")
	if (c.IsSet("super-seed") || sc.SeedLeaves) && (!sc.Watch || c.Float64("share") != 0) {
		return sc, cliutil.Usagef("--super-seed and --seed-leaves are of the watch model's one seed: they need --watch and --share 0")
	}
	if sc.UploadSlots < 0 {
		return sc, cliutil.Usagef("--upload-slots must not be negative")
	}
	if sc.Parallel < 1 || sc.MaxBlocks < 0 {
		return sc, cliutil.Usagef("--parallel must be at least 1 and --window not negative")
	}
	return sc, nil
}

// swarmChoices reads --rarity (a comma list of random, exact and filters)
// into functions that set each block choice in a SwarmConfig; without it,
// the one choice --rarest-first says.
func swarmChoices(c *cli.Context) ([]func(*ts.SwarmConfig), error) {
	if !c.IsSet("rarity") {
		return []func(*ts.SwarmConfig){func(*ts.SwarmConfig) {}}, nil
	}
	if c.IsSet("rarest-first") {
		return nil, cliutil.Usagef("--rarity replaces --rarest-first: give one or the other")
	}
	if c.Int("window") == 0 && !c.Bool("watch") {
		return nil, cliutil.Usagef("--rarity needs --window: without it an exchange takes every block offered")
	}
	var out []func(*ts.SwarmConfig)
	for _, name := range strings.Split(c.String("rarity"), ",") {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "random":
			out = append(out, func(sc *ts.SwarmConfig) { sc.RarestFirst, sc.RarityFromFilters = false, false })
		case "exact":
			out = append(out, func(sc *ts.SwarmConfig) { sc.RarestFirst, sc.RarityFromFilters = true, false })
		case "filters":
			out = append(out, func(sc *ts.SwarmConfig) { sc.RarestFirst, sc.RarityFromFilters = true, true })
		default:
			return nil, cliutil.Usagef("--rarity %q: want random, exact, filters or a comma list of them", c.String("rarity"))
		}
	}
	return out, nil
}

// swarmLabel names a run in the tables: its method, and its block choice
// when several were run.
func swarmLabel(r *ts.SwarmResult, choices int) string {
	if choices < 2 {
		return r.Method.String()
	}
	return r.Method.String() + "/" + r.Choice
}

type simSwarmReport struct {
	Runs        []*ts.SwarmResult `json:"runs"`
	Costs       *ts.Costs         `json:"costs"`
	Topology    topology.Stats    `json:"topology"`
	Share       float64           `json:"share"`
	Seed        uint64            `json:"seed"`
	WallSeconds float64           `json:"wall_seconds"`
	// SetupSeconds covers topology generation, overlay construction and calibration.
	SetupSeconds float64 `json:"setup_seconds"`
	MaxRSSMiB    float64 `json:"max_rss_mib"`
}

func simSwarmCommand() *cli.Command {
	return &cli.Command{
		Name:  "swarm",
		Usage: "distribute a file over the Chord swarm by repeated reconciliation with neighbours",
		Description: "Every peer starts with a random --share of the blocks (--share 0: one peer seeds the\n" +
			"whole file, the others start empty) and reconciles with its Chord neighbours (successor\n" +
			"list, then fingers) until it holds the file, --parallel neighbours at a time, taking at\n" +
			"most --window blocks per exchange; prints completion time per peer (median, p95, max)\n" +
			"and bytes by message type for each method. With --watch, peers behave as package\n" +
			"peer's fetches do (as in reconcile testnet): one reconciliation per source keeps a\n" +
			"watch, new blocks are announced by have messages and asked for in windows sized to each\n" +
			"source's rate, a seed super-seeds (--super-seed=false: offers every block) and idle\n" +
			"sources give way to spare peers; --seed-leaves makes the seed leave once every block is\n" +
			"held by a fetcher. The seed is the peer reconcile testnet seeds from for the same --seed.\n" +
			"With --central or --trees it times a push schedule instead of a protocol of pulls:\n" +
			"the central schedule (free decisions from instant knowledge of every peer's blocks)\n" +
			"or pushes down stripe trees; they say how close to T* a schedule can come.\n" +
			"With access links (--up, --down, --classes; the model testnet uses: every peer's upload\n" +
			"and download shared by its transfers, plus the route's delay) and one seed, it prints\n" +
			"the fluid lower bound T* and the completion times over T*, in the same lines as\n" +
			"reconcile testnet for the same parameters (--blocks x --block-size = testnet's --size).\n\n" +
			"Example:\n" +
			"   reconcile sim swarm --preset paper --nodes 200 --method both --plot swarm.png\n" +
			"   reconcile sim swarm --preset large --nodes 10000 --method complete\n" +
			"   reconcile sim swarm --nodes 200 --blocks 64 --block-size 256KiB --share 0 --up 20Mbit --down 100Mbit \\\n" +
			"       --parallel 8 --window 16 --method complete,bitfield\n" +
			"   reconcile sim swarm --nodes 200 --blocks 64 --block-size 256KiB --share 0 --up 20Mbit --down 100Mbit \\\n" +
			"       --watch --method complete   # the model of reconcile testnet --peers 200 --size 16MiB ...\n" +
			"   reconcile sim swarm --nodes 200 --blocks 256 --block-size 64KiB --share 0 --up 20Mbit --down 100Mbit \\\n" +
			"       --trees 8 --trees-by-delay --method complete",
		Flags: append(append(simNetFlags(), simFilterFlags()...),
			&cli.IntFlag{Name: "blocks", Usage: "source blocks of the file (kk)", Value: 5000},
			&cli.Float64Flag{Name: "share", Usage: "fraction of the blocks each peer starts with; 0: one seed, the others empty", Value: 0.25},
			&cli.StringFlag{Name: "up", Usage: "every peer's upload capacity, shared by its transfers: bits/s with SI prefixes (20Mbit) or bytes/s with IEC prefixes (2MiB/s); none for no cap", Value: "none"},
			&cli.StringFlag{Name: "down", Usage: "every peer's download capacity (e.g. 100Mbit); none for no cap", Value: "none"},
			&cli.StringFlag{Name: "classes", Usage: "heterogeneous access links share:down/up,... (e.g. 0.5:10Mbit/2Mbit,0.5:100Mbit/20Mbit); replaces --up and --down"},
			&cli.StringFlag{Name: "seed-up", Usage: "the seed's upload capacity with --share 0 (default: as the other peers')", Value: "none"},
			&cli.IntFlag{Name: "parallel", Usage: "exchanges a peer runs at once, each with another neighbour", Value: 1},
			&cli.IntFlag{Name: "window", Usage: "most blocks one exchange carries, chosen at random (0: all the neighbour offers)", Value: 0},
			&cli.BoolFlag{Name: "rarest-first", Usage: "with --window: take the blocks the fewest neighbours hold (exact counts), not random ones"},
			&cli.StringFlag{Name: "rarity", Usage: "with --window, block choices to run side by side: random, exact (rarest-first, exact counts), filters (rarest-first, counts from the sum of the neighbours' CBFs), or a comma list (default: as --rarest-first)"},
			&cli.IntFlag{Name: "upload-slots", Usage: "exchanges a peer sends blocks to at once; others get nothing and move on (0: no limit)"},
			&cli.BoolFlag{Name: "watch", Usage: "model the peers as package peer's fetches are: one reconciliation per source keeps a watch, new blocks are announced by have messages and asked for with a window, a seed super-seeds (--parallel: sources, default 16; --window: default 16; rarest-first by default); without it, peers reconcile again and again in rounds"},
			&cli.StringFlag{Name: "latency", Usage: "with --watch, --central or --trees: transitstub (the routes' delays) or none (only the access links take time, as testnet's --latency none)", Value: "transitstub"},
			&cli.BoolFlag{Name: "free-control", Usage: "with --watch: haves, requests and answers cross in no time, blocks still over the routes' delays (the best any way of announcing blocks could do with this schedule)"},
			&cli.BoolFlag{Name: "super-seed", Value: true, Usage: "with --watch and --share 0: the seed super-seeds, as the testnet's does by default (each watcher offered a few blocks, those sent least often first); --super-seed=false to offer every block and answer busy as any peer, so that the fetchers' block choice decides which blocks leave the seed first"},
			&cli.BoolFlag{Name: "seed-leaves", Usage: "with --watch and --share 0: the seed leaves once every block is held by a fetcher, as testnet's --seed-leaves (the blocks still on its uplink are lost); the fetchers finish from each other"},
			&cli.BoolFlag{Name: "upload-rarest", Usage: "with --watch: each peer sends the blocks asked of it one at a time, the one fewest of its watchers hold first, not in the order asked (a what-if)"},
			&cli.BoolFlag{Name: "central", Usage: "time the central schedule instead of a protocol: a scheduler that knows every peer's blocks and costs nothing keeps every uplink sending the rarest block it holds to the neediest peer lacking it (any peer); a real schedule, so an upper bound on the best one, to set beside T*; needs --share 0 and access links (--latency none applies)"},
			&cli.IntFlag{Name: "trees", Usage: "time pushes down this many stripe trees instead of the pulls of reconcile testnet (SplitStream-like: every fetcher an inner node of one tree, a leaf of the others; no knowledge of what other peers hold needed); needs --share 0 and access links"},
			&cli.BoolFlag{Name: "trees-by-delay", Usage: "with --trees: place each fetcher under the parent it would hear from first, not breadth first in random order"},
			&cli.BoolFlag{Name: "central-lag", Usage: "with --central: decisions see other peers' blocks as a push protocol's announcements would, a delay late (pushes a peer turns out to hold already are wasted)"},
			&cli.BoolFlag{Name: "central-neighbours", Usage: "with --central: peers send only to their overlay neighbours and to the peers that have them as one"},
			&cli.StringFlag{Name: "central-receiver", Usage: "with --central: who gets a block among the peers lacking it: neediest (fewest blocks), random or nearest", Value: "neediest"},
			&cli.StringFlag{Name: "central-block", Usage: "with --central: which block a sender sends: rarest, or random (the seed then sends some blocks twice before others once)", Value: "rarest"},
			&cli.BoolFlag{Name: "least-served", Usage: "with --window: the sender offers the blocks it has sent least often first (super-seeding)"},
			&cli.IntFlag{Name: "reps", Usage: "timed runs per cost measurement (median)", Value: 5},
		),
		Action: func(c *cli.Context) error {
			t0 := time.Now()
			if err := cliutil.CheckAtLeast(c, simMins); err != nil {
				return err
			}
			plotFile, err := labplot.CheckPath(c)
			if err != nil {
				return err
			}
			methods, err := simMethods(c)
			if err != nil {
				return err
			}
			if slices.Contains(strings.Split(strings.ReplaceAll(strings.ToLower(c.String("method")), " ", ""), ","), "all") {
				// The swarm model runs no iblt, the watch model no byers.
				methods = slices.DeleteFunc(slices.Clone(methods), func(m reconcile.Method) bool {
					return m == reconcile.IBLT || (m == reconcile.Byers && c.Bool("watch"))
				})
			}
			net, err := simNetwork(c)
			if err != nil {
				return err
			}
			f, err := simFilter(c)
			if err != nil {
				return err
			}
			kk := c.Int("blocks")
			if kk < 2 {
				return fmt.Errorf("sim swarm: --blocks must be at least 2, got %d", kk)
			}
			if sh := c.Float64("share"); !(sh >= 0 && sh <= 1) {
				return fmt.Errorf("sim swarm: --share must be in [0, 1], got %g", sh)
			}
			acc, err := simAccess(c)
			if err != nil {
				return err
			}
			if acc.Central != nil || acc.Trees > 0 {
				// A push schedule moves blocks with no reconciliation: one run,
				// labelled complete (the default).
				if c.IsSet("method") && !slices.Equal(methods, []reconcile.Method{reconcile.Complete}) || c.IsSet("rarity") || c.IsSet("rarest-first") {
					return cliutil.Usagef("--central and --trees time a schedule of pushes, not a reconciliation method or block choice: give no --rarity or --rarest-first, and no --method but complete")
				}
				methods = []reconcile.Method{reconcile.Complete}
			}
			choices, err := swarmChoices(c)
			if err != nil {
				return err
			}
			costs, err := ts.Calibrate(f, max(1, int(float64(kk)*c.Float64("share"))), kk, c.Int("reps"), c.Uint64("seed"))
			if err != nil {
				return fmt.Errorf("sim swarm: %w", err)
			}
			rep := simSwarmReport{Costs: costs, Share: c.Float64("share"), Seed: c.Uint64("seed"),
				Topology: net.Topology.Stats(50)}
			rep.SetupSeconds = time.Since(t0).Seconds()
			for _, m := range methods {
				for _, choose := range choices {
					sc := acc
					sc.Filter, sc.Blocks, sc.Share, sc.OneSeed, sc.Method = f, kk, c.Float64("share"), c.Float64("share") == 0, m
					sc.Seed, sc.DecodeReps = c.Uint64("seed"), c.Int("reps")
					choose(&sc)
					r, err := ts.RunSwarm(net, sc, costs)
					if err != nil {
						return fmt.Errorf("sim swarm: %v: %w", m, err)
					}
					rep.Runs = append(rep.Runs, r)
				}
			}
			rep.WallSeconds = time.Since(t0).Seconds()
			rep.MaxRSSMiB = maxRSSMiB()
			if c.Bool("json") {
				if err := cliutil.WriteJSON(c.App.Writer, rep); err != nil {
					return err
				}
				return plotSwarm(rep.Runs, plotFile)
			}
			scen := fmt.Sprintf("each peer starting with %.0f%%", 100*rep.Share)
			if rep.Share == 0 {
				scen = "one seed, the others empty"
			}
			how := fmt.Sprintf("%d exchanges at a time per peer, window %d", acc.Parallel, acc.MaxBlocks)
			if acc.Trees > 0 {
				how = fmt.Sprintf("pushes down %d stripe trees", acc.Trees)
				if acc.TreesByDelay {
					how += " placed by delay"
				}
				if acc.NoDelay {
					how += ", no route delays"
				}
			}
			if cs := acc.Central; cs != nil {
				how = "the central schedule (free decisions, knowledge "
				if cs.Lag {
					how += "a delay late"
				} else {
					how += "at once"
				}
				how += fmt.Sprintf(", %s blocks to the %s receiver", c.String("central-block"), cs.Receiver)
				if cs.Neighbours {
					how += " among neighbours)"
				} else {
					how += " among all peers)"
				}
				if acc.NoDelay {
					how += ", no route delays"
				}
			}
			if acc.Watch {
				how = fmt.Sprintf("watches of %d sources per peer, windows up to %d", acc.Parallel, acc.MaxBlocks)
				if acc.NoDelay {
					how += ", no route delays"
				}
				if acc.FreeControl {
					how += ", free control messages"
				}
				if acc.UploadRarest {
					how += ", rarest blocks uploaded first"
				}
			}
			fmt.Fprintf(c.App.Writer, "%d peers on %d routers, file of %.1f MiB in %d blocks, %s; %s.\n",
				net.Overlay.Len(), net.Topology.Routers(), float64(kk)*float64(f.BlockBytes)/(1<<20), kk, scen, how)
			w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(w, "method\tcompleted\tmedian ms\tp95 ms\tmax ms\trounds/peer\tfilter MiB\tblocks MiB\tredundant\tmissed\twall s\t\n")
			for _, r := range rep.Runs {
				fmt.Fprintf(w, "%v\t%d/%d\t%.0f\t%.0f\t%.0f\t%.1f\t%.2f\t%.2f\t%d\t%d\t%.1f\t\n", swarmLabel(r, len(choices)), r.Completed, r.Fetchers,
					r.MedianMS, r.P95MS, r.MaxMS, r.MeanRounds, cliutil.MiB(r.Bytes["filter"]), cliutil.MiB(r.Bytes["blocks"]),
					r.RedundantBlocks, r.MissedBlocks, r.WallSeconds)
			}
			w.Flush()
			if acc.HasAccessLinks() {
				seedUp := rates.FormatRate(cmp.Or(acc.SeedUp, acc.Up))
				if acc.SeedUp == 0 && len(acc.Classes) > 0 {
					seedUp = "as its class"
				}
				fmt.Fprintf(c.App.Writer, "access links: %s; seed up %s\n", accessLine(acc.Up, acc.Down, acc.Classes), seedUp)
			}
			for _, r := range rep.Runs {
				printTStar(c.App.Writer, "sim", swarmLabel(r, len(choices)), r.TStarMS/1000, r.MedianMS/1000, r.P95MS/1000, r.MaxMS/1000)
				printUploads(c.App.Writer, "sim", swarmLabel(r, len(choices)), r.SeedSentBytes, r.FileBytes, r.UploadUse)
				printSeedOut(c.App.Writer, "sim", swarmLabel(r, len(choices)), r.SeedOutMS/1000, r.TStarMS/1000)
				printSeedLeft(c.App.Writer, "sim", swarmLabel(r, len(choices)), r.SeedLeftMS/1000, r.TStarMS/1000)
			}
			fmt.Fprintf(c.App.Writer, "total %.1f s (setup %.1f s), max RSS %.0f MiB\n", rep.WallSeconds, rep.SetupSeconds, rep.MaxRSSMiB)
			return plotSwarm(rep.Runs, plotFile)
		},
	}
}

// ---- plots ----
// Each plot function does nothing when file is "".

// maxRSSMiB returns the process's peak resident set size in MiB from
// /proc/self/status (0 where unavailable).
func maxRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%f", &kb); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}
