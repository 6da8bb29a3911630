package labbench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// floodReport holds the figures of one flood run.
type floodReport struct {
	Bytes       int64     `json:"bytes"`
	Identities  int       `json:"identities"`
	Streams     int       `json:"streams"`
	Attacks     []string  `json:"attacks"`
	Spread      bool      `json:"spread_loopback"`
	Baseline    []float64 `json:"baseline_s"`
	UnderAttack []float64 `json:"under_attack_s"`
	Failed      []string  `json:"failed,omitempty"`
	MedianRatio float64   `json:"median_ratio"`
	MaxRatio    float64   `json:"max_ratio"`
	// Seed resident memory in MiB: before the attack, its peak during the
	// attack, and at the end of the watch after it.
	RSSBefore float64 `json:"rss_before_mib"`
	RSSPeak   float64 `json:"rss_peak_mib"`
	RSSAfter  float64 `json:"rss_after_mib"`
	// The seed's CPU time (user+system) in seconds during each fetch
	// without attack and under attack, from the fetch's start to its end,
	// and the medians' and the largest one's ratios to the baseline's
	// median.
	SeedCPUBaseline    []float64 `json:"seed_cpu_baseline_s"`
	SeedCPUUnderAttack []float64 `json:"seed_cpu_under_attack_s"`
	CPUMedianRatio     float64   `json:"seed_cpu_median_ratio"`
	CPUMaxRatio        float64   `json:"seed_cpu_max_ratio"`
	// SeedCPUAttack is the seed's CPU time over the whole attack, from the
	// attackers' start to their stop (fetches included), and AttackSeconds
	// that span's length.
	SeedCPUAttack float64 `json:"seed_cpu_attack_s"`
	AttackSeconds float64 `json:"attack_s"`
	// What the attackers saw.
	StreamsOpened int64 `json:"streams_opened"`
	Refused       int64 `json:"streams_refused"`
	RepeatBlocks  int64 `json:"repeat_blocks_received"`
	// JunkBytes is what the junk attackers wrote into their streams.
	JunkBytes   int64 `json:"junk_bytes"`
	Connections int64 `json:"connections"`
	DialErrors  int64 `json:"dial_errors"`
	// FirstDialError is the first error an attacker got when it dialed.
	FirstDialError string `json:"first_dial_error,omitempty"`
	// Stall is the stalling source's part in the fetches under attack
	// (--stall).
	Stall *stallReport `json:"stall,omitempty"`
}

// stallReport is what the fetches under attack said of the stalling source.
type stallReport struct {
	// Peer is the stalling source's peer id.
	Peer string `json:"peer"`
	// Named counts the fetches whose summary named it: it stalled
	// requests or was dropped.
	Named int `json:"named"`
	// Fetches is its share in each fetch under attack that completed.
	Fetches []stallShare `json:"fetches"`
}

// stallShare is the stalling source's entry in one fetch's summary (the
// fields of peer.PeerShare that tell a stall; Stalled is left out by
// builds that do not count it). Listed is false if the summary has none.
type stallShare struct {
	Listed  bool   `json:"listed"`
	Blocks  int    `json:"blocks"`
	Stalled int    `json:"stalled"`
	Dropped string `json:"dropped,omitempty"`
}

// named reports whether the fetch named the stalling source.
func (s stallShare) named() bool { return s.Stalled > 0 || s.Dropped != "" }

// fetchJSON is the part of `reconcile fetch --json`'s summary that flood
// reads.
type fetchJSON struct {
	Seconds float64 `json:"seconds"`
	Peers   []struct {
		Peer string `json:"peer"`
		stallShare
	} `json:"peers"`
}

// fetchResult is one fetch of a flood run.
type fetchResult struct {
	secs    float64 // the fetch's own time
	seedCPU float64 // the seed's CPU time from the fetch's start to its end
	stall   stallShare
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
	seed, err := startFloodSeed(ctx, seedLog, pin.command(ctx, seedBin, "seed", file, "--listen", "/ip4/127.0.0.1/tcp/0", "--block-size", fmt.Sprint(bs), "--ticket-file", filepath.Join(dir, "seed.ticket"), "--log-every", "0"), filepath.Join(dir, "seed.ticket"))
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
		args := []string{"fetch", seed.ticket.String(), "--out", out, "--listen", "/ip4/127.0.0.1/tcp/0", "--progress", "none", "--json"}
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

// printFloodReport prints rep for people.
func printFloodReport(w io.Writer, rep *floodReport, after time.Duration) {
	what := "with a stalling source beside it (no attackers)"
	if len(rep.Attacks) > 0 {
		what = fmt.Sprintf("under %d identities x %d streams: %s", rep.Identities, rep.Streams, strings.Join(rep.Attacks, ", "))
		if rep.Stall != nil {
			what += ", and a stalling source beside it"
		}
	}
	fmt.Fprintf(w, "seed of %.0f MiB %s\n", cliutil.MiB(rep.Bytes), what)
	base, baseCPU := cliutil.Median(rep.Baseline), cliutil.Median(rep.SeedCPUBaseline)
	fmt.Fprintf(w, "  fetch without attack   median %.3f s (%d fetches); seed CPU median %.2f s a fetch\n", base, len(rep.Baseline), baseCPU)
	if len(rep.UnderAttack) > 0 {
		fmt.Fprintf(w, "  fetch under attack     median %.3f s = %.2fx, max %.3f s = %.2fx (%d fetches, all byte-identical)\n",
			cliutil.Median(rep.UnderAttack), rep.MedianRatio, slices.Max(rep.UnderAttack), rep.MaxRatio, len(rep.UnderAttack))
		fmt.Fprintf(w, "  seed CPU a fetch       median %.2f s = %.2fx, max %.2f s = %.2fx the fetch without attack\n",
			cliutil.Median(rep.SeedCPUUnderAttack), rep.CPUMedianRatio, slices.Max(rep.SeedCPUUnderAttack), rep.CPUMaxRatio)
	}
	fmt.Fprintf(w, "  failed fetches         %d\n", len(rep.Failed))
	fmt.Fprintf(w, "  seed RSS               %.0f MiB before, peak %.0f MiB under attack, %.0f MiB %v after it\n", rep.RSSBefore, rep.RSSPeak, rep.RSSAfter, after)
	fmt.Fprintf(w, "  seed CPU in the attack %.2f s in %.1f s (%.0f%% of a core), fetches included\n",
		rep.SeedCPUAttack, rep.AttackSeconds, 100*rep.SeedCPUAttack/max(rep.AttackSeconds, 1e-9))
	if len(rep.Attacks) > 0 {
		fmt.Fprintf(w, "  attackers              %d streams opened, %d refused, %d repeated blocks received, %d connections, %d dial errors\n",
			rep.StreamsOpened, rep.Refused, rep.RepeatBlocks, rep.Connections, rep.DialErrors)
	}
	if rep.JunkBytes > 0 {
		gib := float64(rep.JunkBytes) / (1 << 30)
		fmt.Fprintf(w, "  junk written           %s (%.0f MiB/s); seed CPU %.2f s per GiB of it\n",
			cliutil.HumanBytes(rep.JunkBytes), cliutil.MiB(rep.JunkBytes)/max(rep.AttackSeconds, 1e-9), rep.SeedCPUAttack/gib)
	}
	if rep.FirstDialError != "" {
		fmt.Fprintf(w, "  first dial error       %s\n", oneLineText(rep.FirstDialError))
	}
	if st := rep.Stall; st != nil {
		blocks, stalled, dropped, why := 0, 0, 0, ""
		for _, s := range st.Fetches {
			blocks += s.Blocks
			stalled += s.Stalled
			if s.Dropped != "" {
				dropped++
				why = cmp.Or(why, s.Dropped)
			}
		}
		fmt.Fprintf(w, "  stalling source        named by %d of %d fetches: %d blocks from it, %d requests stalled, dropped by %d\n",
			st.Named, len(st.Fetches), blocks, stalled, dropped)
		if why != "" {
			fmt.Fprintf(w, "  first drop             %s\n", oneLineText(why))
		}
	}
}

// String says in short what one fetch's summary said of the stalling
// source (the report gives the first reason it was dropped).
func (s stallShare) String() string {
	if !s.Listed {
		return "not in the summary"
	}
	out := fmt.Sprintf("%d blocks, %d requests stalled", s.Blocks, s.Stalled)
	if s.Dropped != "" {
		out += ", dropped"
	}
	return out
}

// ratioText returns " = 1.23x" for x/base, empty when base is 0.
func ratioText(x, base float64) string {
	if base <= 0 {
		return ""
	}
	return fmt.Sprintf(" = %.2fx", x/base)
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

// attackCounts is what the attacking process reports when it stops.
type attackCounts struct {
	Streams, Refused, Blocks, JunkBytes, Dials, DialErrors int64
	FirstDialError                                         string
}

// runAttacker is the attacking process: it floods the ticket's first peer
// until interrupted, then prints its counts as JSON on standard output.
func runAttacker(c *cli.Context, ticket, file string, bs int64) error {
	tk, err := peer.ParseTicket(ticket)
	if err != nil || len(tk.Peers) == 0 {
		return cliutil.Usagef("--attack-ticket: %v", err)
	}
	attacks, err := floodAttacks(c)
	if err != nil {
		return err
	}
	if len(attacks) == 0 {
		return cliutil.Usagef("--attacks none: nothing to attack with")
	}
	ctx, stop := cliutil.SignalContext()
	defer stop()
	m, err := chunker.ChunkPath(context.Background(), file, int(bs))
	if err != nil {
		return err
	}
	var st flood.Stats
	err = flood.Run(ctx, flood.Config{Target: tk.Peers[0], Manifest: m, Identities: c.Int("identities"), Streams: c.Int("streams"), Attacks: attacks, SpreadLoopback: c.Bool("spread")}, &st)
	if err != nil {
		return err
	}
	counts := attackCounts{Streams: st.Streams.Load(), Refused: st.Refused.Load(), Blocks: st.Blocks.Load(),
		JunkBytes: st.JunkBytes.Load(), Dials: st.Dials.Load(), DialErrors: st.DialErrors.Load()}
	if e := st.FirstDialError.Load(); e != nil {
		counts.FirstDialError = *e
	}
	return json.NewEncoder(c.App.Writer).Encode(counts)
}

// attackProc is a running attacking process.
type attackProc struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	stderr bytes.Buffer
	exited chan error
}

// startAttacker starts the attacking process (on the attackers' CPU).
func startAttacker(ctx context.Context, pin floodPin, self string, c *cli.Context, tk peer.Ticket, file string, bs int64) (*attackProc, error) {
	args := []string{"flood", "--attack-ticket", tk.String(), "--attack-file", file, "--block-size", fmt.Sprint(bs),
		"--identities", fmt.Sprint(c.Int("identities")), "--streams", fmt.Sprint(c.Int("streams")), "--attacks", c.String("attacks"),
		fmt.Sprintf("--spread=%t", c.Bool("spread"))}
	var cmd *exec.Cmd
	if pin.attackers != "" {
		cmd = exec.CommandContext(ctx, "taskset", append([]string{"-c", pin.attackers, self}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, self, args...)
	}
	a := &attackProc{cmd: cmd, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &a.out, &a.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { a.exited <- cmd.Wait() }()
	return a, nil
}

// stop interrupts the attacking process and returns its counts.
func (a *attackProc) stop() (attackCounts, error) {
	a.cmd.Process.Signal(os.Interrupt)
	var st attackCounts
	if err := <-a.exited; err != nil {
		return st, fmt.Errorf("flood: attackers: %v: %s", err, strings.TrimSpace(a.stderr.String()))
	}
	if err := json.Unmarshal(a.out.Bytes(), &st); err != nil {
		return st, fmt.Errorf("flood: attackers' counts: %w", err)
	}
	return st, nil
}

// floodSeed is a `reconcile seed` process.
type floodSeed struct {
	pid    int
	ticket peer.Ticket
	stop   func()
}

// startFloodSeed starts the seed's command and waits for its ticket in tf.
// Its standard error goes to log when not nil (a file: a pipe that this
// process, busy with attackers, read too late would block the seed's log).
func startFloodSeed(ctx context.Context, log io.Writer, cmd *exec.Cmd, tf string) (*floodSeed, error) {
	os.Remove(tf)
	var stderr bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	if log != nil {
		cmd.Stderr = log
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		<-exited
	}
	tk, err := waitTicket(ctx, tf, exited)
	if err != nil {
		if errors.Is(err, errSeedExited) {
			return nil, fmt.Errorf("flood: seed: %s", strings.TrimSpace(stderr.String()))
		}
		stop()
		return nil, err
	}
	return &floodSeed{pid: cmd.Process.Pid, ticket: tk, stop: stop}, nil
}

// floodPin places the processes of a flood run on CPUs: attackers (this
// process) on one, the seed and fetchers on the others. Empty: no pinning.
type floodPin struct {
	attackers, others string
}

func floodPinning(want bool) (floodPin, error) {
	n := runtime.NumCPU()
	if !want || n < 2 {
		return floodPin{}, nil
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return floodPin{}, errors.New("flood: --pin needs taskset (util-linux); pass --pin=false to run unpinned")
	}
	others := "0"
	if n > 2 {
		others = fmt.Sprintf("0-%d", n-2)
	}
	return floodPin{attackers: fmt.Sprint(n - 1), others: others}, nil
}

// command returns the command of this binary with args, on the seed's CPUs.
func (p floodPin) command(ctx context.Context, self string, args ...string) *exec.Cmd {
	if p.others == "" {
		return exec.CommandContext(ctx, self, args...)
	}
	return exec.CommandContext(ctx, "taskset", append([]string{"-c", p.others, self}, args...)...)
}

// rssWatch samples a process's resident memory every 100 ms.
type rssWatch struct {
	pid  int
	done chan struct{}
	mu   sync.Mutex
	cur  float64
	max  float64
}

func newRSSWatch(pid int) *rssWatch {
	w := &rssWatch{pid: pid, done: make(chan struct{})}
	w.sample()
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
				w.sample()
			}
		}
	}()
	return w
}

func (w *rssWatch) sample() {
	mb, ok := readRSS(w.pid)
	if !ok {
		return
	}
	w.mu.Lock()
	w.cur = mb
	w.max = max(w.max, mb)
	w.mu.Unlock()
}

func (w *rssWatch) current() float64 { w.mu.Lock(); defer w.mu.Unlock(); return w.cur }
func (w *rssWatch) peak() float64    { w.mu.Lock(); defer w.mu.Unlock(); return w.max }
func (w *rssWatch) resetPeak()       { w.mu.Lock(); w.max = w.cur; w.mu.Unlock() }
func (w *rssWatch) stop()            { close(w.done) }

// readCPU returns the CPU time a process has spent, user and system, in
// seconds: utime and stime of /proc/PID/stat, in clock ticks of 1/100 s
// (USER_HZ, 100 on every Linux architecture Go runs on). It reports false
// where there is no such file.
func readCPU(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return statCPU(b)
}

// statCPU returns utime+stime in seconds from the text of /proc/PID/stat.
func statCPU(b []byte) (float64, bool) {
	// Field 2, the command name, is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	user, err1 := strconv.ParseUint(f[11], 10, 64)
	sys, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return float64(user+sys) / 100, true
}

// readRSS returns a process's resident memory in MiB (VmRSS of
// /proc/PID/status).
func readRSS(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
}

// sameFileBytes reports an error unless files a and b hold the same bytes.
func sameFileBytes(a, b string) error {
	x, err := os.ReadFile(a)
	if err != nil {
		return err
	}
	y, err := os.ReadFile(b)
	if err != nil {
		return err
	}
	if !bytes.Equal(x, y) {
		return fmt.Errorf("flood: %s differs from the seed's file", b)
	}
	return nil
}

// oneLineText joins the lines of s with "; ".
func oneLineText(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ; ")), " ")
}
