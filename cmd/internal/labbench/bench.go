package labbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/samplefile"
	"github.com/reconcile-p2p/reconcile/peer"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "fetch speed on loopback against TCP and TLS copies, one seed against several",
		Description: "Runs every party as its own process of this binary, on loopback. One repetition is:\n" +
			"  1. plain TCP copies of the file between two processes, written to a file and\n" +
			"     fsynced: with the kernel's zero-copy paths (sendfile, splice) and with a\n" +
			"     read/write loop through user space (as nc does) (--tcp=false leaves them out);\n" +
			"  2. a TLS 1.3 copy the same way (AES-GCM, as a Go program copying over crypto/tls\n" +
			"     does; libp2p's TLS is the same): the baseline a fetch is held to;\n" +
			"  3. reconcile fetch from one full seed (reconcile seed FILE);\n" +
			"  4. reconcile fetch from --full-seeds seeds that each hold the whole file (0: none);\n" +
			"  5. reconcile fetch from --seeds seeds that each hold 1/--seeds of the blocks (0: none).\n" +
			"--repeat N runs the repetition N times, so that the baselines and the fetches\n" +
			"alternate (TLS copy, fetch, ..., TLS copy, fetch, ...) and a busy machine slows\n" +
			"both alike. Seeds are started afresh for each fetch; their start (chunking) is not\n" +
			"timed: the timed span of a fetch is the fetch's own (connect, manifest,\n" +
			"reconciliation, transfer, verification, fsync).\n\n" +
			"Figures: for each run the median MiB/s over the repetitions (the JSON: mb_per_s,\n" +
			"10^6 bytes) with its seconds, the fastest and slowest seconds, and the peak resident\n" +
			"memory of the fetch process (the largest over the repetitions), and the median CPU\n" +
			"seconds (user and system) of the receiving side (the fetch process; for a copy, the\n" +
			"bench process) + of the sending side (the seeds while the fetch ran; the copy's\n" +
			"sender): the work per byte, which a busy machine disturbs far less than the time.\n" +
			"Ratios are of throughput (higher is faster), taken within each repetition and then\n" +
			"summarized as median, min and max: 1 seed / TLS copy (the goal: 0.9 or more), the\n" +
			"CPU seconds of 1 seed / of the TLS copy (lower is less work), 1 seed / TCP copies,\n" +
			"N full seeds / 1 seed (above 1: several seeds are faster than one), N partial seeds\n" +
			"/ 1 seed and / TCP copy.\n\n" +
			"Example:\n" +
			"   reconcile bench --size 1GiB --repeat 5\n" +
			"   reconcile bench --size 1GiB --repeat 5 --tcp=false --seeds 0 --full-seeds 0\n" +
			"   reconcile bench --size 64MiB --seeds 4 --json",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "size", Value: "256MiB", Usage: "file size"},
			&cli.StringFlag{Name: "block-size", Value: "256KiB", Usage: "block size (1KiB to 16MiB)"},
			&cli.IntFlag{Name: "repeat", Value: 1, Usage: "repetitions of the whole sequence, interleaved (1 to 100); figures are medians over them"},
			&cli.IntFlag{Name: "seeds", Value: 4, Usage: "seeds of the partial-seed run, each holding an equal part (0: no such run, up to 16)"},
			&cli.IntFlag{Name: "full-seeds", Value: 2, Usage: "seeds of the full-seed run, each holding the whole file (0 or 1: no such run, up to 16)"},
			&cli.BoolFlag{Name: "tcp", Value: true, Usage: "run the plain TCP copies (--tcp=false: only the TLS copy as baseline)"},
			&cli.DurationFlag{Name: "settle", Value: 3 * time.Second, Usage: "start each timed copy or fetch at least this long after the previous one's output was removed, so that every receiver writes into memory in the same state (a VM that hands freed pages back to its host makes the first writer into them pay; docs/single-fetch.md)"},
			&cli.IntFlag{Name: "window", Usage: "the fetches' --window (blocks kept requested from one peer; 0: fetch's default)"},
			&cli.IntFlag{Name: "sync-every", Usage: "the fetches' --sync-every (blocks per fsync group; 0: fetch's default)"},
			&cli.StringFlag{Name: "dir", Usage: "work folder (default: a temporary folder, removed afterwards)"},
			&cli.BoolFlag{Name: "json", Usage: "print the figures as one JSON document"},
			&cli.StringFlag{Name: "compare", Hidden: true, Usage: "another build of reconcile: each repetition also fetches from one seed with it (its seed and fetch), right after this build's fetch in even repetitions and right before it in odd ones, for an A/B ratio"},
			&cli.StringFlag{Name: "compare-fetch", Hidden: true, Usage: "more arguments of the --compare run's fetch, space-separated (without --compare: this build with other fetch arguments)"},
			&cli.StringFlag{Name: "compare-seed", Hidden: true, Usage: "more arguments of the --compare run's seed, space-separated (e.g. \"--block-size 1MiB\")"},
			&cli.StringFlag{Name: "profile", Hidden: true, Usage: "write CPU profiles of the one-seed run's seed and fetch processes into this folder (seed-R.pprof, fetch-R.pprof for repetition R)"},
			&cli.StringFlag{Name: "tcp-send", Hidden: true, Usage: "internal: send --file to this address and exit"},
			&cli.StringFlag{Name: "file", Hidden: true, Usage: "internal: the file of --tcp-send"},
			&cli.BoolFlag{Name: "zero-copy", Hidden: true, Usage: "internal: --tcp-send with sendfile"},
			&cli.BoolFlag{Name: "tls", Hidden: true, Usage: "internal: --tcp-send over TLS 1.3"},
		},
		Action:      runBench,
		Subcommands: []*cli.Command{updateCommand(), swarmCommand()},
	}
}

// benchReport holds the figures of one bench run. The runs and the ratios
// are medians over the repetitions; Ratios has their spread.
type benchReport struct {
	Bytes     int64 `json:"bytes"`
	BlockSize int64 `json:"block_size"`
	Repeat    int   `json:"repeat"`
	// Settle is --settle: each timed run started at least this long after
	// the previous one's output was removed.
	Settle   float64   `json:"settle_seconds"`
	TCP      *benchRun `json:"tcp_copy,omitempty"`
	TCPUser  *benchRun `json:"tcp_copy_userspace,omitempty"`
	TLS      *benchRun `json:"tls_copy"`
	OneSeed  *benchRun `json:"one_seed"`
	FullSeed *benchRun `json:"full_seeds_run,omitempty"`
	Compare  *benchRun `json:"compare_one_seed,omitempty"`
	// CompareFirst says, per repetition, whether the --compare fetch ran
	// before this build's (compareFirst).
	CompareFirst []bool                `json:"compare_first,omitempty"`
	MultiSeed    *benchRun             `json:"multi_seed,omitempty"`
	FullSeeds    int                   `json:"full_seeds"`
	Seeds        int                   `json:"seeds"`
	OneVsTCP     float64               `json:"one_seed_vs_tcp,omitempty"`
	OneVsTCPUser float64               `json:"one_seed_vs_tcp_userspace,omitempty"`
	OneVsTLS     float64               `json:"one_seed_vs_tls"`
	FullVsOne    float64               `json:"full_seeds_vs_one_seed,omitempty"`
	MultiVsOne   float64               `json:"multi_seed_vs_one_seed,omitempty"`
	MultiVsTCP   float64               `json:"multi_seed_vs_tcp,omitempty"`
	Ratios       map[string]benchRatio `json:"ratios"`
	Summaries    []*peer.Summary       `json:"summaries,omitempty"`
}

// benchRun is one kind of run over the repetitions.
type benchRun struct {
	// Seconds and MBps are medians; MinSeconds and MaxSeconds the extremes.
	Seconds    float64   `json:"seconds"`
	MBps       float64   `json:"mb_per_s"`
	MinSeconds float64   `json:"min_seconds"`
	MaxSeconds float64   `json:"max_seconds"`
	Each       []float64 `json:"each_seconds"`
	// PeakRSSMiB is the largest peak RSS of the fetch process, over the repetitions.
	PeakRSSMiB float64 `json:"peak_rss_mib,omitempty"`
	// RecvCPU and SendCPU are the median CPU seconds (user and system) of
	// the receiving side (the fetch process; for a copy, this process) and
	// of the sending side (the seeds while the fetch ran; the copy's
	// sender) over the repetitions: a measure of the work per byte that a
	// busy machine disturbs far less than the time.
	RecvCPU  float64   `json:"recv_cpu_seconds"`
	SendCPU  float64   `json:"send_cpu_seconds"`
	recvCPUs []float64 // each repetition's
	sendCPUs []float64
}

// benchRatio summarizes a throughput ratio taken within each repetition.
type benchRatio struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Each   []float64 `json:"each"`
}

// add records one repetition's seconds, the receiving and sending sides'
// CPU seconds and the fetch's peak RSS.
func (r *benchRun) add(secs float64, cpu benchCPU, rss float64) {
	r.Each = append(r.Each, secs)
	r.recvCPUs, r.sendCPUs = append(r.recvCPUs, cpu.recv), append(r.sendCPUs, cpu.send)
	r.PeakRSSMiB = max(r.PeakRSSMiB, rss)
}

// benchCPU is the CPU seconds (user and system) each side of a run used.
type benchCPU struct{ recv, send float64 }

// finish sets the median and extremes of the seconds and the median MB/s.
func (r *benchRun) finish(size int64) {
	if r == nil || len(r.Each) == 0 {
		return
	}
	r.Seconds = cliutil.Median(r.Each)
	r.MinSeconds, r.MaxSeconds = slices.Min(r.Each), slices.Max(r.Each)
	r.MBps = float64(size) / 1e6 / r.Seconds
	r.RecvCPU, r.SendCPU = cliutil.Median(r.recvCPUs), cliutil.Median(r.sendCPUs)
}

// speedRatio is the per-repetition throughput ratio of a to b (b's seconds
// over a's), summarized; nil when either run is missing.
func speedRatio(a, b *benchRun) *benchRatio {
	if a == nil || b == nil || len(a.Each) != len(b.Each) || len(a.Each) == 0 {
		return nil
	}
	r := &benchRatio{}
	for k := range a.Each {
		r.Each = append(r.Each, b.Each[k]/a.Each[k])
	}
	r.Median, r.Min, r.Max = cliutil.Median(r.Each), slices.Min(r.Each), slices.Max(r.Each)
	return r
}

// cpuRatio is the per-repetition ratio of the CPU seconds (both sides) of a
// to those of b, summarized; nil when either run is missing.
func cpuRatio(a, b *benchRun) *benchRatio {
	if a == nil || b == nil || len(a.recvCPUs) != len(b.recvCPUs) || len(a.recvCPUs) == 0 {
		return nil
	}
	r := &benchRatio{}
	for k := range a.recvCPUs {
		if d := b.recvCPUs[k] + b.sendCPUs[k]; d > 0 {
			r.Each = append(r.Each, (a.recvCPUs[k]+a.sendCPUs[k])/d)
		}
	}
	if len(r.Each) == 0 {
		return nil
	}
	r.Median, r.Min, r.Max = cliutil.Median(r.Each), slices.Min(r.Each), slices.Max(r.Each)
	return r
}

// benchConfig is what one bench run does.
type benchConfig struct {
	self, dir, file string
	bs              int64
	fetchArgs       []string
	profile         string
	logf            func(format string, args ...any)
	// settle is how long after removedAt, when the last timed run's output
	// was removed, the next timed run starts (waitSettle).
	settle    time.Duration
	removedAt time.Time
}

// removed notes that a timed run's output was just removed.
func (bc *benchConfig) removed() { bc.removedAt = time.Now() }

// waitSettle waits until bc.settle has passed since the last output was
// removed: every timed receiver then writes into memory freed as long ago.
// On a VM that reports freed pages to its host (free page reporting, after
// about 2 s), the first write into a reported page faults on the host and
// costs its writer system time: without the wait, a copy started right
// after the previous removal wrote into pages not yet reported, and a fetch,
// started after its seed had chunked the file, paid for all of them.
func (bc *benchConfig) waitSettle(ctx context.Context) {
	if d := time.Until(bc.removedAt.Add(bc.settle)); d > 0 && !bc.removedAt.IsZero() {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
}

func runBench(c *cli.Context) error {
	if addr := c.String("tcp-send"); addr != "" {
		mode := copyUser
		if c.Bool("zero-copy") {
			mode = copySendfile
		} else if c.Bool("tls") {
			mode = copyTLS
		}
		return benchTCPSend(addr, c.String("file"), mode)
	}
	size, err := cliutil.FlagSize(c, "size", 1, 0)
	if err != nil {
		return err
	}
	bs, err := cliutil.FlagSize(c, "block-size", chunker.MinBlockSize, chunker.MaxBlockSize)
	if err != nil {
		return err
	}
	nseeds, nfull, repeat := c.Int("seeds"), c.Int("full-seeds"), c.Int("repeat")
	if nseeds < 0 || nseeds > 16 {
		return cliutil.Usagef("--seeds %d: want 0 to 16", nseeds)
	}
	if nfull < 0 || nfull > 16 {
		return cliutil.Usagef("--full-seeds %d: want 0 to 16", nfull)
	}
	if repeat < 1 || repeat > 100 {
		return cliutil.Usagef("--repeat %d: want 1 to 100", repeat)
	}
	if nfull == 1 {
		nfull = 0 // the one-seed run
	}
	bc := benchConfig{bs: bs, profile: c.String("profile"), logf: cliutil.StepLog(c), settle: c.Duration("settle")}
	other := c.String("compare")
	if other != "" {
		if other, err = filepath.Abs(other); err != nil {
			return err
		}
	}
	otherFetch, otherSeed := strings.Fields(c.String("compare-fetch")), strings.Fields(c.String("compare-seed"))
	if other == "" && (len(otherFetch) > 0 || len(otherSeed) > 0) {
		other = "this build"
	}
	for _, name := range []string{"window", "sync-every"} {
		if v := c.Int(name); v < 0 {
			return cliutil.Usagef("--%s %d: want 0 (the default) or more", name, v)
		} else if v > 0 {
			bc.fetchArgs = append(bc.fetchArgs, "--"+name, fmt.Sprint(v))
		}
	}
	if bc.profile != "" {
		if err := os.MkdirAll(bc.profile, 0o755); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		if bc.profile, err = filepath.Abs(bc.profile); err != nil {
			return err
		}
	}
	if bc.self, err = os.Executable(); err != nil {
		return err
	}
	otherBin := other
	if other == "this build" {
		otherBin = bc.self
	}
	dir, done, err := cliutil.WorkFolder(c, "bench")
	if err != nil {
		return err
	}
	defer done()
	bc.dir = dir
	ctx, stop := cliutil.SignalContext()
	defer stop()
	logf := bc.logf
	bc.file = filepath.Join(dir, "bench.bin")
	logf("writing a %.0f MiB file...\n", cliutil.MiB(size))
	if err := samplefile.Write(bc.file, size, 42); err != nil {
		return err
	}
	rep := benchReport{Bytes: size, BlockSize: bs, Repeat: repeat, Seeds: nseeds, FullSeeds: nfull, Settle: bc.settle.Seconds(),
		TLS: &benchRun{}, OneSeed: &benchRun{}}
	if c.Bool("tcp") {
		rep.TCP, rep.TCPUser = &benchRun{}, &benchRun{}
	}
	if nfull > 0 {
		rep.FullSeed = &benchRun{}
	}
	if other != "" {
		rep.Compare = &benchRun{}
	}
	var parts []string
	if nseeds > 0 {
		rep.MultiSeed = &benchRun{}
		logf("preparing %d partial seeds...\n", nseeds)
		m, err := chunker.ChunkPath(ctx, bc.file, int(bs))
		if err != nil {
			return err
		}
		for j := 0; j < nseeds; j++ {
			out := filepath.Join(dir, fmt.Sprintf("part%d", j))
			lo, hi := j*m.BlockCount()/nseeds, (j+1)*m.BlockCount()/nseeds
			if _, err := samplefile.Prefill(bc.file, m, out, lo, hi); err != nil {
				return err
			}
			parts = append(parts, out)
		}
	}
	fulls := make([]string, max(nfull, 1))
	for j := range fulls {
		fulls[j] = bc.file
	}
	copyRun := func(r *benchRun, mode copyMode, what string) error {
		if r == nil {
			return nil
		}
		out := filepath.Join(dir, "tcp.out")
		bc.waitSettle(ctx)
		secs, cpu, err := benchTCP(ctx, bc.self, bc.file, out, mode)
		os.Remove(out)
		bc.removed()
		if err != nil {
			return fmt.Errorf("bench: %s: %w", what, err)
		}
		r.add(secs, cpu, 0)
		return nil
	}
	fetchRun := func(r *benchRun, paths []string, profile string) error {
		if r == nil {
			return nil
		}
		sum, cpu, rss, err := bc.fetchFrom(ctx, bc.self, paths, profile, nil, nil)
		if err != nil {
			return err
		}
		r.add(sum.Seconds, cpu, rss)
		rep.Summaries = append(rep.Summaries, sum)
		return nil
	}
	for k := range repeat {
		if repeat > 1 {
			logf("repetition %d of %d\n", k+1, repeat)
		}
		logf("  plain TCP and TLS 1.3 copies...\n")
		if err := copyRun(rep.TCP, copySendfile, "tcp copy"); err != nil {
			return err
		}
		if err := copyRun(rep.TCPUser, copyUser, "tcp copy"); err != nil {
			return err
		}
		if err := copyRun(rep.TLS, copyTLS, "tls copy"); err != nil {
			return err
		}
		logf("  fetch from one seed...\n")
		profile := ""
		if bc.profile != "" {
			profile = fmt.Sprint(k + 1)
		}
		compare := func() error {
			if rep.Compare == nil {
				return nil
			}
			logf("  fetch from one seed with %s %v %v...\n", other, otherSeed, otherFetch)
			sum, cpu, rss, err := bc.fetchFrom(ctx, otherBin, fulls[:1], "", otherSeed, otherFetch)
			if err != nil {
				return err
			}
			rep.Compare.add(sum.Seconds, cpu, rss)
			rep.CompareFirst = append(rep.CompareFirst, compareFirst(k))
			return nil
		}
		// The --compare fetch goes second in even repetitions and first in
		// odd ones: of two fetches run back to back, the second was up to
		// 1.15x faster whichever build it was (compareFirst).
		if compareFirst(k) {
			if err := compare(); err != nil {
				return err
			}
		}
		if err := fetchRun(rep.OneSeed, fulls[:1], profile); err != nil {
			return err
		}
		if !compareFirst(k) {
			if err := compare(); err != nil {
				return err
			}
		}
		if rep.FullSeed != nil {
			logf("  fetch from %d full seeds...\n", nfull)
			if err := fetchRun(rep.FullSeed, fulls, ""); err != nil {
				return err
			}
		}
		if rep.MultiSeed != nil {
			logf("  fetch from %d partial seeds...\n", nseeds)
			if err := fetchRun(rep.MultiSeed, parts, ""); err != nil {
				return err
			}
		}
	}
	for _, r := range []*benchRun{rep.TCP, rep.TCPUser, rep.TLS, rep.OneSeed, rep.Compare, rep.FullSeed, rep.MultiSeed} {
		r.finish(size)
	}
	rep.Ratios = map[string]benchRatio{}
	ratio := func(name string, a, b *benchRun, dst *float64) {
		if r := speedRatio(a, b); r != nil {
			rep.Ratios[name] = *r
			*dst = r.Median
		}
	}
	ratio("one_seed_vs_tls", rep.OneSeed, rep.TLS, &rep.OneVsTLS)
	ratio("one_seed_vs_tcp", rep.OneSeed, rep.TCP, &rep.OneVsTCP)
	ratio("one_seed_vs_tcp_userspace", rep.OneSeed, rep.TCPUser, &rep.OneVsTCPUser)
	var unused float64
	if r := cpuRatio(rep.OneSeed, rep.TLS); r != nil {
		rep.Ratios["cpu_one_seed_vs_tls"] = *r
	}
	if r := cpuRatio(rep.OneSeed, rep.Compare); r != nil {
		rep.Ratios["cpu_one_seed_vs_compare"] = *r
	}
	ratio("one_seed_vs_compare", rep.OneSeed, rep.Compare, &unused)
	ratio("compare_vs_tls", rep.Compare, rep.TLS, &unused)
	ratio("full_seeds_vs_one_seed", rep.FullSeed, rep.OneSeed, &rep.FullVsOne)
	ratio("multi_seed_vs_one_seed", rep.MultiSeed, rep.OneSeed, &rep.MultiVsOne)
	ratio("multi_seed_vs_tcp", rep.MultiSeed, rep.TCP, &rep.MultiVsTCP)
	if c.Bool("json") {
		return cliutil.WriteJSON(c.App.Writer, rep)
	}
	printBench(c.App.Writer, &rep)
	return nil
}

// printBench prints the report as text; it counts in MiB/s like every other
// command (the JSON keeps mb_per_s, 10^6 bytes).
func printBench(w io.Writer, rep *benchReport) {
	reps := "1 repetition"
	if rep.Repeat > 1 {
		reps = fmt.Sprintf("%d repetitions, medians (fastest-slowest)", rep.Repeat)
	}
	fmt.Fprintf(w, "%s file, %s blocks, loopback, every party its own process, %s\n", cliutil.HumanBytes(rep.Bytes), cliutil.HumanBytes(rep.BlockSize), reps)
	line := func(name string, r *benchRun) {
		if r == nil {
			return
		}
		fmt.Fprintf(w, "  %-36s %8.1f MiB/s  %.2f s", name, cliutil.MiB(rep.Bytes)/r.Seconds, r.Seconds)
		if rep.Repeat > 1 {
			fmt.Fprintf(w, " (%.2f-%.2f s)", r.MinSeconds, r.MaxSeconds)
		}
		fmt.Fprintf(w, ", CPU %.2f s + %.2f s", r.RecvCPU, r.SendCPU)
		if r.PeakRSSMiB > 0 {
			fmt.Fprintf(w, ", peak RSS %.0f MiB", r.PeakRSSMiB)
		}
		fmt.Fprintln(w)
	}
	line("plain TCP copy, sendfile/splice", rep.TCP)
	line("plain TCP copy, read/write loop", rep.TCPUser)
	line("TLS 1.3 copy (AES-GCM)", rep.TLS)
	line("fetch, 1 full seed", rep.OneSeed)
	line("fetch, 1 full seed, --compare build", rep.Compare)
	line(fmt.Sprintf("fetch, %d full seeds", rep.FullSeeds), rep.FullSeed)
	line(fmt.Sprintf("fetch, %d partial seeds", rep.Seeds), rep.MultiSeed)
	fmt.Fprintln(w, "ratios of throughput, taken in each repetition (higher is faster):")
	ratio := func(name, key string) {
		r, ok := rep.Ratios[key]
		if !ok {
			return
		}
		fmt.Fprintf(w, "  %-36s %6.2f x", name, r.Median)
		if rep.Repeat > 1 {
			fmt.Fprintf(w, "  (%.2f-%.2f)", r.Min, r.Max)
		}
		fmt.Fprintln(w)
	}
	ratio("1 seed / TLS copy", "one_seed_vs_tls")
	ratio("CPU of 1 seed / of TLS copy", "cpu_one_seed_vs_tls")
	ratio("1 seed / TCP copy (sendfile)", "one_seed_vs_tcp")
	ratio("1 seed / TCP copy (read/write)", "one_seed_vs_tcp_userspace")
	ratio("1 seed / 1 seed, --compare build", "one_seed_vs_compare")
	ratio("CPU of 1 seed / of --compare build", "cpu_one_seed_vs_compare")
	ratio("1 seed, --compare build / TLS", "compare_vs_tls")
	ratio(fmt.Sprintf("%d full seeds / 1 seed", rep.FullSeeds), "full_seeds_vs_one_seed")
	ratio(fmt.Sprintf("%d partial seeds / 1 seed", rep.Seeds), "multi_seed_vs_one_seed")
	ratio(fmt.Sprintf("%d partial seeds / TCP (sendfile)", rep.Seeds), "multi_seed_vs_tcp")
}
