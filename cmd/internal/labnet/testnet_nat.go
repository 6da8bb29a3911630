package labnet

// reconcile testnet's NATs and relays: flags, settings and report lines.

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/testnet"
	"github.com/reconcile-p2p/reconcile/testnet/natmodel"
)

// natHelp is the NATs' paragraph of the command's description.
const natHelp = "--nat SHARE puts that share of the peers behind NATs: a public peer reaches anyone, two\n" +
	"NATed peers connect directly only if their hole punch succeeds, with probability --punch\n" +
	"(0.7 by default, the field figure of Trautwein et al. 2025), drawn per pair from --seed. A\n" +
	"pair whose punch fails talks through one of --relays relays (on transit routers, with the\n" +
	"peers' --up and --down): its bytes cross the relay's downlink and uplink and the latencies\n" +
	"to and from it, and a relayed connection ends at the relay's limits (--relay-data each way,\n" +
	"--relay-duration; go-libp2p's defaults, 128 KiB and 2m), after which the peers may open\n" +
	"another. With --relays 0 such a pair cannot talk at all. The peers see relayed connections\n" +
	"as relayed and prefer direct sources. The run prints the bytes the relays carried and their\n" +
	"share of the block bytes; T* is unchanged (it assumes no path between given peers).\n"

// natFlags are the NATs' flags.
func natFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Float64Flag{Name: "nat", Usage: "share of the peers behind NATs, in [0, 1] (mock transport only)"},
		&cli.Float64Flag{Name: "punch", Usage: "probability that a hole punch between two NATed peers succeeds, in [0, 1], drawn per pair from --seed", Value: natmodel.DefaultPunch},
		&cli.IntFlag{Name: "relays", Usage: "relays for the NATed pairs whose punch fails (0: such pairs cannot talk)"},
		&cli.StringFlag{Name: "relay-data", Usage: "bytes a relayed connection carries each way before the relay resets it (none: no limit)", Value: "128KiB"},
		&cli.DurationFlag{Name: "relay-duration", Usage: "how long a relayed connection lasts before the relay resets it, in the described network's time (0: no limit)", Value: natmodel.DefaultLimits.Duration},
	}
}

// natConfig reads the NATs' flags.
func natConfig(c *cli.Context) (natmodel.Config, error) {
	n := natmodel.Config{Share: c.Float64("nat"), Punch: c.Float64("punch"), Relays: c.Int("relays"),
		Limits: natmodel.Limits{Duration: c.Duration("relay-duration")}}
	switch {
	case !(n.Share >= 0 && n.Share <= 1):
		return n, fmt.Errorf("testnet: --nat must be a share in [0, 1], got %g", n.Share)
	case !(n.Punch >= 0 && n.Punch <= 1):
		return n, fmt.Errorf("testnet: --punch must be a probability in [0, 1], got %g", n.Punch)
	case n.Relays < 0:
		return n, fmt.Errorf("testnet: --relays must be 0 or more, got %d", n.Relays)
	case n.Limits.Duration < 0:
		return n, fmt.Errorf("testnet: --relay-duration must be 0 (no limit) or more, got %v", n.Limits.Duration)
	case n.Share == 0 && (c.IsSet("punch") || c.IsSet("relays") || c.IsSet("relay-data") || c.IsSet("relay-duration")):
		return n, fmt.Errorf("testnet: --punch, --relays and the relay limits need --nat above 0")
	}
	if s := c.String("relay-data"); s != "none" {
		v, err := cliutil.FlagSize(c, "relay-data", 0, 0)
		if err != nil {
			return n, err
		}
		n.Limits.Data = v
	}
	if n.Share > 0 && c.String("transport") == "tcp" {
		return n, fmt.Errorf("testnet: --nat models NATs on the mock transport only, not tcp")
	}
	return n, nil
}

// printNAT prints what a run's NATs and relays did, nothing without NATs.
func printNAT(out io.Writer, r *testnet.Result) {
	f := r.NAT
	if f == nil {
		return
	}
	name := runName(r.Method, r.Choice)
	limits := "no limits"
	if l := f.Limits; l.Data > 0 || l.Duration > 0 {
		data := "no data limit"
		if l.Data > 0 {
			data = cliutil.ExactSize(l.Data) + " each way"
		}
		limits = fmt.Sprintf("limits %s and %v a connection", data, l.Duration)
	}
	fmt.Fprintf(out, "testnet %s: %d of %d peers behind NATs, punches succeed with p = %g; neighbour pairs %d direct, %d punched, %d relayed, %d unreachable; %d relays, %s\n",
		name, f.NATed, r.Nodes, f.Punch, f.Pairs["direct"], f.Pairs["punched"], f.Pairs["relayed"], f.Pairs["unreachable"], f.Relays, limits)
	if f.Relays == 0 {
		return
	}
	fmt.Fprintf(out, "testnet %s: the relays carried %.2f MiB (%.2f MiB of it on block streams), %.2f%% of the %.1f MiB of blocks; the fetches stored %.2f MiB from relayed sources; %d relayed connections, %d ended by the data limit, %d by the duration\n",
		name, cliutil.MiB(f.Circuits.Bytes), cliutil.MiB(f.RelayedBlockBytes), 100*f.RelayedShare, cliutil.MiB(r.BlockBytes),
		cliutil.MiB(f.FetchRelayedBytes), f.Circuits.Opened, f.Circuits.DataLimited, f.Circuits.DurationLimited)
}
