package labnet

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/testnet"
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
		if *r.dst, err = testnet.ParseRate(c.String(r.name)); err != nil {
			return sc, cliutil.Usagef("--%s %q: want a rate such as 20Mbit (bits/s, SI prefixes) or 2MiB/s (bytes/s, IEC prefixes), or none", r.name, c.String(r.name))
		}
	}
	if sc.Classes, err = testnet.ParseClasses(c.String("classes")); err != nil {
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
