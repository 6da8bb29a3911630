package labbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/samplefile"
	"github.com/reconcile-p2p/reconcile/internal/flood"
	"github.com/reconcile-p2p/reconcile/peer"
)

func floodCommand() *cli.Command {
	return &cli.Command{
		Name:  "flood",
		Usage: "attack a seed on loopback as a hostile swarm would: does it stay available?",
		Description: "Runs `reconcile seed` of a random file as a process of its own (default limits), then:\n" +
			"  1. fetches it --fetches times without attack (each fetch its own process): the baseline;\n" +
			"  2. attacks it from another process with --identities libp2p identities, each holding\n" +
			"     --streams streams of one of the attacks (dealt out in turn): slow-hello (a hello\n" +
			"     one byte every 5 s), silent-reconcile, partial-filter (a 16 MiB filter frame short\n" +
			"     of its last byte), no-read (every block asked for, nothing read), repeat-block\n" +
			"     (block 0 again and again), malformed, fresh-params (valid 16 MiB filters with new\n" +
			"     parameters each time), and, only when named, junk (random bytes into streams of\n" +
			"     every protocol as fast as they go, on after the ban: a stream or connection\n" +
			"     refused is opened again at once); with --stall, a stalling source (run by this\n" +
			"     process) answers the manifest and the reconciliation honestly and never sends a\n" +
			"     block; after 5 s (at once with --attacks none) it fetches again and again for\n" +
			"     --duration, each fetch told of the stalling source (reconcile fetch --peer);\n" +
			"  3. stops the attack and watches the seed's memory for --after.\n" +
			"It reports each phase's fetch times (the fetch's own, from connecting to the last block\n" +
			"verified and synced; median, max, and as ratios to the baseline), whether\n" +
			"every fetch ended byte-identical, the seed's resident memory (peak during the attack,\n" +
			"and at the end of --after, sampled from /proc every 100 ms), the seed's CPU time\n" +
			"(user+system, from /proc) during each fetch and over the whole attack, the junk bytes\n" +
			"the attackers wrote, and whether each fetch's summary named the stalling source\n" +
			"(it stalled requests or was dropped).\n" +
			"The seed and fetchers run on 127.0.0.1; with --spread (the default on Linux, which\n" +
			"routes all of 127.0.0.0/8 to loopback) attacker i dials from 127.0.0.(2 + i mod 250),\n" +
			"so that bans by address hit attackers only. With --pin (the default on a machine of 2\n" +
			"or more CPUs, with taskset), the attackers (a process of their own) run on the last CPU\n" +
			"and the seed and fetchers on the others, as if the attackers were other machines;\n" +
			"without it they compete for the same cores and the ratios are pessimistic; this\n" +
			"process only watches (and runs the stalling source).\n" +
			"\n" +
			"Examples:\n" +
			"   reconcile flood                                  200 identities x 16 streams, 64 MiB\n" +
			"   reconcile flood --identities 20 --streams 4 --duration 10s --after 5s\n" +
			"   reconcile flood --identities 64 --streams 8 --attacks junk\n" +
			"   reconcile flood --attacks none --stall          a stalling source, no attackers",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "size", Value: "64MiB", Usage: "file size"},
			&cli.StringFlag{Name: "block-size", Value: "256KiB", Usage: "block size (1KiB to 16MiB)"},
			&cli.IntFlag{Name: "identities", Value: 200, Usage: "attacking identities (1 to 1000)"},
			&cli.IntFlag{Name: "streams", Value: 16, Usage: "streams each identity keeps open (1 to 64)"},
			&cli.StringFlag{Name: "attacks", Value: "all", Usage: "comma-separated attacks: slow-hello, silent-reconcile, partial-filter, no-read, repeat-block, malformed, fresh-params, junk; all (every one but junk) or none"},
			&cli.BoolFlag{Name: "stall", Usage: "run a stalling source beside the seed, given to every fetch under attack"},
			&cli.BoolFlag{Name: "spread", Value: runtime.GOOS == "linux", Usage: "attackers dial from 127.0.0.2 to .251, one address each, not 127.0.0.1"},
			&cli.IntFlag{Name: "fetches", Value: 3, Usage: "fetches of the baseline (at least 1)"},
			&cli.DurationFlag{Name: "duration", Value: 30 * time.Second, Usage: "how long the attack lasts (fetches run one after the other during it)"},
			&cli.DurationFlag{Name: "after", Value: 30 * time.Second, Usage: "how long to watch the seed's memory after the attack"},
			&cli.StringFlag{Name: "dir", Usage: "work folder (default: a temporary folder, removed afterwards)"},
			&cli.StringFlag{Name: "seed-log", Usage: "write the seed's standard error (its log) to this file"},
			&cli.BoolFlag{Name: "pin", Value: true, Usage: "run the attackers on the last CPU, the seed and fetchers on the others (needs 2 CPUs and taskset)"},
			&cli.BoolFlag{Name: "json", Usage: "print the figures as one JSON document"},
			&cli.StringFlag{Name: "attack-ticket", Hidden: true, Usage: "internal: attack this ticket's first peer until interrupted, then print the attack's counts as JSON"},
			&cli.StringFlag{Name: "attack-file", Hidden: true, Usage: "internal: the file of --attack-ticket (for its manifest)"},
			&cli.StringFlag{Name: "seed-build", Hidden: true, Usage: "run the seed with this build of reconcile (an A/B of the seed under the same attack)"},
		},
		Action: runFlood,
	}
}

func runFlood(c *cli.Context) error {
	size, err := cliutil.FlagSize(c, "size", 1, 0)
	if err != nil {
		return err
	}
	bs, err := cliutil.FlagSize(c, "block-size", chunker.MinBlockSize, chunker.MaxBlockSize)
	if err != nil {
		return err
	}
	if t := c.String("attack-ticket"); t != "" {
		return runAttacker(c, t, c.String("attack-file"), bs)
	}
	ids, streams, fetches := c.Int("identities"), c.Int("streams"), c.Int("fetches")
	if ids < 1 || ids > 1000 {
		return cliutil.Usagef("--identities %d: want 1 to 1000", ids)
	}
	if streams < 1 || streams > 64 {
		return cliutil.Usagef("--streams %d: want 1 to 64", streams)
	}
	if fetches < 1 {
		return cliutil.Usagef("--fetches %d: want at least 1", fetches)
	}
	if c.Duration("duration") <= 0 || c.Duration("after") < 0 {
		return cliutil.Usagef("--duration must be positive and --after not negative")
	}
	attacks, err := floodAttacks(c)
	if err != nil {
		return err
	}
	if len(attacks) == 0 && !c.Bool("stall") {
		return cliutil.Usagef("--attacks none: nothing to test without --stall")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, done, err := cliutil.WorkFolder(c, "flood")
	if err != nil {
		return err
	}
	defer done()
	ctx, stop := cliutil.SignalContext()
	defer stop()
	logf := cliutil.StepLog(c)
	file := filepath.Join(dir, "flood.bin")
	logf("writing a %.0f MiB file...\n", cliutil.MiB(size))
	if err := samplefile.Write(file, size, 7); err != nil {
		return err
	}
	pin, err := floodPinning(c.Bool("pin"))
	if err != nil && !c.IsSet("pin") {
		logf("not pinned: %v\n", err) // the default, on a machine without taskset
		pin, err = floodPin{}, nil
	}
	if err != nil {
		return err
	}
	if pin.attackers != "" {
		logf("pinned: seed and fetchers on CPUs %s, attackers on CPU %s\n", pin.others, pin.attackers)
	}
	seedLog := io.Writer(nil)
	if f := c.String("seed-log"); f != "" {
		lf, err := os.Create(f)
		if err != nil {
			return fmt.Errorf("--seed-log: %w", err)
		}
		defer lf.Close()
		seedLog = lf
	}
	seedBin := self
	if b := c.String("seed-build"); b != "" {
		seedBin = b
	}
	seed, err := startFloodSeed(ctx, seedLog, pin.command(ctx, seedBin, "seed", file, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--block-size", fmt.Sprint(bs), "--ticket-file", filepath.Join(dir, "seed.ticket"), "--log-every", "0"), filepath.Join(dir, "seed.ticket"))
	if err != nil {
		return err
	}
	defer seed.stop()
	rss := newRSSWatch(seed.pid)
	defer rss.stop()
	rep := floodReport{Bytes: size, Identities: ids, Streams: streams, Spread: c.Bool("spread")}
	rep.Attacks = []string{}
	for _, a := range attacks {
		rep.Attacks = append(rep.Attacks, a.String())
	}
	var stallAddr, stallID string // the stalling source's (--stall)
	fetch := func(i int, extra ...string) (fetchResult, error) {
		var res fetchResult
		out := filepath.Join(dir, fmt.Sprintf("out%d.bin", i)) // --out FILE: the file itself
		defer os.RemoveAll(out + ".reconcile")
		defer os.Remove(out)
		// The time is the fetch's own (its JSON summary's), not taken here:
		// this process runs thousands of attacking goroutines on one CPU and
		// may get to read a child's end long after it came.
		args := []string{"fetch", seed.ticket.String(), "--out", out, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--progress", "none", "--json"}
		for _, a := range extra {
			args = append(args, "--peer", a)
		}
		cmd := pin.command(ctx, self, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cpu0, cpuOK := readCPU(seed.pid)
		stdout, err := cmd.Output()
		if cpu1, ok := readCPU(seed.pid); ok && cpuOK {
			res.seedCPU = cpu1 - cpu0
		}
		if err != nil {
			return res, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
		}
		var sum fetchJSON
		if err := json.Unmarshal(stdout, &sum); err != nil {
			return res, fmt.Errorf("fetch summary: %w", err)
		}
		res.secs = sum.Seconds
		for _, ps := range sum.Peers {
			if ps.Peer == stallID {
				res.stall = ps.stallShare
				res.stall.Listed = true
			}
		}
		return res, sameFileBytes(file, out)
	}

	logf("baseline: %d fetches without attack...\n", fetches)
	for i := range fetches {
		res, err := fetch(i)
		if err != nil {
			return fmt.Errorf("flood: fetch without attack: %w", err)
		}
		rep.Baseline = append(rep.Baseline, res.secs)
		rep.SeedCPUBaseline = append(rep.SeedCPUBaseline, res.seedCPU)
	}
	rep.RSSBefore = rss.current()
	baseCPU := cliutil.Median(rep.SeedCPUBaseline)

	if c.Bool("stall") {
		st, addr, err := startStaller(ctx, file, bs)
		if err != nil {
			return err
		}
		defer st.Close()
		stallAddr, stallID = addr, st.ID().String()
		rep.Stall = &stallReport{Peer: stallID, Fetches: []stallShare{}}
		logf("stalling source %s beside the seed\n", stallAddr)
	}
	var attacker *attackProc
	if len(attacks) > 0 {
		logf("attack: %d identities x %d streams (%s) for %v...\n", ids, streams, strings.Join(rep.Attacks, ", "), c.Duration("duration"))
		// The attack lasts until the last fetch started within --duration ends.
		attacker, err = startAttacker(ctx, pin, self, c, seed.ticket, file, bs)
		if err != nil {
			return err
		}
	} else {
		logf("no attackers: fetching beside the stalling source for %v...\n", c.Duration("duration"))
	}
	attackStart := time.Now()
	attackCPU0, attackCPUOK := readCPU(seed.pid)
	rss.resetPeak()
	if attacker != nil {
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var extra []string
	if stallAddr != "" {
		extra = append(extra, stallAddr)
	}
	for i, end := 0, time.Now().Add(c.Duration("duration")); time.Now().Before(end) && ctx.Err() == nil; i++ {
		res, err := fetch(fetches+i, extra...)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			rep.Failed = append(rep.Failed, err.Error())
			logf("  fetch %d under attack failed: %v\n", i+1, err)
			continue
		}
		rep.UnderAttack = append(rep.UnderAttack, res.secs)
		rep.SeedCPUUnderAttack = append(rep.SeedCPUUnderAttack, res.seedCPU)
		line := fmt.Sprintf("  fetch %d under attack: %.2f s (seed CPU %.2f s%s, RSS %.0f MiB", i+1, res.secs, res.seedCPU, ratioText(res.seedCPU, baseCPU), rss.current())
		if rep.Stall != nil {
			rep.Stall.Fetches = append(rep.Stall.Fetches, res.stall)
			if res.stall.named() {
				rep.Stall.Named++
			}
			line += "; stalling source: " + res.stall.String()
		}
		logf("%s)\n", line)
	}
	if attacker != nil {
		st, err := attacker.stop()
		if err != nil {
			return err
		}
		rep.StreamsOpened, rep.Refused, rep.RepeatBlocks, rep.DialErrors, rep.FirstDialError = st.Streams, st.Refused, st.Blocks, st.DialErrors, st.FirstDialError
		rep.JunkBytes, rep.Connections = st.JunkBytes, st.Dials
	}
	rep.AttackSeconds = time.Since(attackStart).Seconds()
	if cpu, ok := readCPU(seed.pid); ok && attackCPUOK {
		rep.SeedCPUAttack = cpu - attackCPU0
	}
	rep.RSSPeak = rss.peak()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	logf("attack over; watching the seed's memory for %v...\n", c.Duration("after"))
	select {
	case <-time.After(c.Duration("after")):
	case <-ctx.Done():
		return ctx.Err()
	}
	rep.RSSAfter = rss.current()
	base := cliutil.Median(rep.Baseline)
	if len(rep.UnderAttack) > 0 && base > 0 {
		rep.MedianRatio = cliutil.Median(rep.UnderAttack) / base
		rep.MaxRatio = slices.Max(rep.UnderAttack) / base
	}
	if len(rep.SeedCPUUnderAttack) > 0 && baseCPU > 0 {
		rep.CPUMedianRatio = cliutil.Median(rep.SeedCPUUnderAttack) / baseCPU
		rep.CPUMaxRatio = slices.Max(rep.SeedCPUUnderAttack) / baseCPU
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printFloodReport(c.App.Writer, &rep, c.Duration("after"))
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("flood: %d of %d fetches under attack failed; the first: %s", len(rep.Failed), len(rep.Failed)+len(rep.UnderAttack), rep.Failed[0])
	}
	if len(rep.UnderAttack) == 0 {
		return errors.New("flood: no fetch completed during the attack")
	}
	return nil
}

// startStaller starts the stalling source of --stall in this process, a
// peer on 127.0.0.1 that seeds file and never sends a block, and returns it
// with its address for `reconcile fetch --peer`.
func startStaller(ctx context.Context, file string, bs int64) (*peer.Peer, string, error) {
	p, err := flood.NewStaller(ctx, file, int(bs), peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		return nil, "", err
	}
	ai := p.AddrInfo()
	addrs, err := lpeer.AddrInfoToP2pAddrs(&ai)
	if err != nil || len(addrs) == 0 {
		p.Close()
		return nil, "", fmt.Errorf("flood: the stalling source has no address: %v", err)
	}
	return p, addrs[0].String(), nil
}

// floodAttacks parses --attacks: none is no attack.
func floodAttacks(c *cli.Context) ([]flood.Attack, error) {
	if s := c.String("attacks"); s == "none" {
		return nil, nil
	} else if s != "all" {
		var attacks []flood.Attack
		for _, name := range strings.Split(s, ",") {
			a, err := flood.ParseAttack(strings.TrimSpace(name))
			if err != nil {
				return nil, cliutil.Usagef("--attacks: %v", err)
			}
			attacks = append(attacks, a)
		}
		return attacks, nil
	}
	return flood.All(), nil
}
