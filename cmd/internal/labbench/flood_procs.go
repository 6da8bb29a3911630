package labbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/internal/flood"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/urfave/cli/v2"
)

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

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

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
	return float64(user+sys) / clockTicks, true
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
