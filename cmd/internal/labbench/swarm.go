package labbench

// reconcile bench swarm: one seed and N fetch processes on loopback, each
// with an upload cap, against the fluid bound of those caps (issue 38).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/samplefile"
	"github.com/reconcile-p2p/reconcile/peer"
)

func swarmCommand() *cli.Command {
	return &cli.Command{
		Name:  "swarm",
		Usage: "one seed and N fetch processes on loopback, each with an upload cap, against the fluid bound",
		Description: "Starts `reconcile seed` of a random --size file on 127.0.0.1 with --seed-rate as its\n" +
			"upload cap, then --fetchers `reconcile fetch` processes of its ticket at once (or one\n" +
			"every --stagger), each with --rate as its own upload cap. Every process runs with\n" +
			"--no-dht --no-mdns --no-portmap --no-autonat --no-relay, as the NAT testbed does: the\n" +
			"fetchers find each other only by asking their sources for peers (the peers protocol),\n" +
			"and serve what they hold while they fetch. A fetcher that is done keeps serving\n" +
			"(fetch --seed-after) until all are, as the fluid model's peers do; --leave makes each\n" +
			"exit once done instead.\n" +
			"Each fetcher's time runs from its launch to its JSON summary (the last block verified\n" +
			"and synced); the bench then checks every output byte-identical to the seed's file.\n\n" +
			"The fluid bound, with F the size, N the fetchers, u the caps (d_min is infinite on\n" +
			"loopback):  T* = max(F/u_seed, N*F/(u_seed + N*u_fetcher)).\n" +
			"Figures per repetition: each fetcher's time, the median and max and their ratios to T*,\n" +
			"the bytes each process uploaded (from the fetchers' summaries: what each peer sent\n" +
			"whom), the CPU seconds (user+system, from /proc) of all the processes from the launch\n" +
			"to the last fetcher's end against wall time x the machine's cores (so the report shows\n" +
			"whether the CPU could have been the limit), and the whole machine's busy share over the\n" +
			"same span (/proc/stat; other users of the machine included). Over --repeat the\n" +
			"ratios are summarized as medians.\n\n" +
			"Examples:\n" +
			"   reconcile bench swarm --repeat 3\n" +
			"   reconcile bench swarm --fetchers 3 --size 2MiB --rate 0 --seed-rate 0\n" +
			"   reconcile bench swarm --super-seed=false --block-size 64KiB --json",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "fetchers", Value: 20, Usage: "fetch processes (1 to 100)"},
			&cli.StringFlag{Name: "size", Value: "32MiB", Usage: "file size"},
			&cli.StringFlag{Name: "block-size", Value: "256KiB", Usage: "the seed's --block-size (1KiB to 16MiB)"},
			&cli.StringFlag{Name: "rate", Value: "2MiB", Usage: "each fetcher's upload cap, bytes per second (fetch --rate; 0: none)"},
			&cli.StringFlag{Name: "seed-rate", Value: "4MiB", Usage: "the seed's upload cap, bytes per second (seed --rate; 0: none)"},
			&cli.BoolFlag{Name: "super-seed", Value: true, Usage: "the seed super-seeds, as reconcile seed does by default (--super-seed=false: it offers everything)"},
			&cli.IntFlag{Name: "trees", Usage: "the seed's --trees: it places the fetchers in this many stripe trees as they join, the fetchers joining although on loopback (fetch --join-near; 0: every block pulled)"},
			&cli.BoolFlag{Name: "leave", Usage: "fetchers exit once done (no --seed-after)"},
			&cli.DurationFlag{Name: "stagger", Usage: "launch a fetcher every this long (0: all at once)"},
			&cli.IntFlag{Name: "repeat", Value: 1, Usage: "repetitions, each with a fresh seed and fresh fetchers (1 to 100)"},
			&cli.StringFlag{Name: "fetch-args", Usage: "more arguments of every fetch, space-separated (e.g. \"--window 4\")"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "give up on a repetition after this long"},
			&cli.StringFlag{Name: "dir", Usage: "work folder (default: a temporary folder, removed afterwards)"},
			&cli.BoolFlag{Name: "json", Usage: "print the figures as one JSON document"},
			&cli.StringFlag{Name: "logs", Hidden: true, Usage: "keep each fetcher's standard error in this folder (fetch-R-I.log; with --fetch-args \"--log-level debug\", what it did)"},
			&cli.StringFlag{Name: "profile", Hidden: true, Usage: "write CPU profiles of the seed and of every fetcher into this folder (seed-R.pprof, fetch-R-I.pprof for repetition R, fetcher I)"},
		},
		Action: runSwarm,
	}
}

// swarmConfig is what one swarm repetition runs.
type swarmConfig struct {
	self, dir, file  string
	bs               int64
	fetchers         int
	rate, seedRate   int64
	superSeed, leave bool
	trees            int
	stagger, timeout time.Duration
	fetchArgs        []string
	profile          string   // --profile's folder
	logs             string   // --logs' folder
	rep              int      // the repetition running, from 1
	keys             []string // each fetcher's --key file
	ids              []lpeer.ID
	logf             func(format string, args ...any)
}

// swarmNetFlags are the flags that keep seed and fetch on loopback, finding
// each other through the ticket and the peers protocol only.
var swarmNetFlags = []string{"--no-dht", "--no-mdns", "--no-portmap", "--no-autonat", "--no-relay"}

func runSwarm(c *cli.Context) error {
	size, err := cliutil.FlagSize(c, "size", 1, 0)
	if err != nil {
		return err
	}
	bs, err := cliutil.FlagSize(c, "block-size", chunker.MinBlockSize, chunker.MaxBlockSize)
	if err != nil {
		return err
	}
	rate, err := swarmRate(c, "rate")
	if err != nil {
		return err
	}
	seedRate, err := swarmRate(c, "seed-rate")
	if err != nil {
		return err
	}
	n, repeat := c.Int("fetchers"), c.Int("repeat")
	if n < 1 || n > 100 {
		return cliutil.Usagef("--fetchers %d: want 1 to 100", n)
	}
	if repeat < 1 || repeat > 100 {
		return cliutil.Usagef("--repeat %d: want 1 to 100", repeat)
	}
	if c.Duration("stagger") < 0 || c.Duration("timeout") <= 0 {
		return cliutil.Usagef("--stagger must not be negative, --timeout must be positive")
	}
	sc := swarmConfig{bs: bs, fetchers: n, rate: rate, seedRate: seedRate, superSeed: c.Bool("super-seed"), leave: c.Bool("leave"), trees: c.Int("trees"),
		stagger: c.Duration("stagger"), timeout: c.Duration("timeout"), fetchArgs: strings.Fields(c.String("fetch-args")),
		logf: cliutil.StepLog(c)}
	if sc.profile = c.String("profile"); sc.profile != "" {
		if err := os.MkdirAll(sc.profile, 0o755); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		if sc.profile, err = filepath.Abs(sc.profile); err != nil {
			return err
		}
	}
	if sc.logs = c.String("logs"); sc.logs != "" {
		if err := os.MkdirAll(sc.logs, 0o755); err != nil {
			return fmt.Errorf("--logs: %w", err)
		}
	}
	if sc.self, err = os.Executable(); err != nil {
		return err
	}
	dir, done, err := cliutil.WorkFolder(c, "swarm")
	if err != nil {
		return err
	}
	defer done()
	sc.dir = dir
	// Each fetcher has an identity of its own, made here, so that the
	// summaries' peer ids say which fetcher sent what.
	for i := range n {
		kf := filepath.Join(dir, fmt.Sprintf("fetcher%d.key", i))
		k, err := peer.LoadOrCreateKey(kf)
		if err != nil {
			return err
		}
		id, err := lpeer.IDFromPrivateKey(k)
		if err != nil {
			return err
		}
		sc.keys, sc.ids = append(sc.keys, kf), append(sc.ids, id)
	}
	ctx, stop := cliutil.SignalContext()
	defer stop()
	sc.file = filepath.Join(dir, "swarm.bin")
	sc.logf("writing a %.0f MiB file...\n", cliutil.MiB(size))
	if err := samplefile.Write(sc.file, size, 38); err != nil {
		return err
	}
	rep := swarmReport{Bytes: size, BlockSize: bs, Fetchers: n, Rate: rate, SeedRate: seedRate, SuperSeed: sc.superSeed, Trees: sc.trees,
		Leave: sc.leave, Stagger: sc.stagger.Seconds(), Repeat: repeat, Cores: numCPU()}
	rep.setBound()
	for k := range repeat {
		sc.logf("repetition %d of %d: 1 seed and %d fetchers...\n", k+1, repeat, n)
		sc.rep = k + 1
		run, err := sc.run(ctx)
		if err != nil {
			return err
		}
		run.ratios(rep.Bound)
		sc.logf("  median %.2f s, max %.2f s, CPU %.0f %% of %d cores\n", run.Median, run.Max, 100*run.CPUShare, rep.Cores)
		rep.Runs = append(rep.Runs, run)
	}
	rep.summarize()
	if c.Bool("json") {
		return cliutil.WriteJSON(c.App.Writer, rep)
	}
	printSwarm(c.App.Writer, &rep)
	return nil
}

// swarmRate parses an upload cap flag: 0 is none.
func swarmRate(c *cli.Context, name string) (int64, error) {
	if s := strings.TrimSpace(c.String(name)); s == "0" || s == "" {
		return 0, nil
	}
	return cliutil.FlagSize(c, name, 1, 0)
}
