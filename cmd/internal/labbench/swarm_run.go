package labbench

// One repetition of reconcile bench swarm: the seed and fetch processes,
// their times, their CPU and what each uploaded.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/reconcile-p2p/reconcile/peer"
)

// swarmProc is one running fetch process of a swarm.
type swarmProc struct {
	cmd      *exec.Cmd
	out      string
	launched time.Time
	done     time.Time // when its summary came
	sum      swarmSummary
	stderr   bytes.Buffer // read only once exited has been received
	got      chan error   // the summary came (nil) or never will
	exited   chan error
	ended    bool // exited has been received
	cpu      float64
	cpuOK    bool
}

// swarmSummary is a fetch's JSON summary.
type swarmSummary struct {
	peer.Summary
	FirstBlockSeconds float64 `json:"first_block_seconds"`
}

// run runs one repetition: a fresh seed and fresh fetchers, until every
// fetcher is done, and returns its figures.
func (sc *swarmConfig) run(ctx context.Context) (*swarmRun, error) {
	ctx, cancel := context.WithTimeout(ctx, sc.timeout)
	defer cancel()
	seedArgs := append([]string{"--quiet", "--log-every", "0"}, swarmNetFlags...)
	if sc.seedRate > 0 {
		seedArgs = append(seedArgs, "--rate", fmt.Sprint(sc.seedRate))
	}
	seedArgs = append(seedArgs, fmt.Sprintf("--super-seed=%t", sc.superSeed), "--trees", fmt.Sprint(sc.trees))
	if sc.profile != "" {
		seedArgs = append(seedArgs, "--cpuprofile", filepath.Join(sc.profile, fmt.Sprintf("seed-%d.pprof", sc.rep)))
	}
	tks, pids, stopSeed, err := benchSeedsAll(ctx, sc.self, sc.dir, []string{sc.file}, sc.bs, seedArgs)
	if err != nil {
		return nil, err
	}
	defer stopSeed()
	seedPid := pids[0]
	procs := make([]*swarmProc, sc.fetchers)
	defer func() { // on an error: stop those still running
		for _, p := range procs {
			if p != nil && !p.ended {
				p.cmd.Process.Signal(os.Interrupt)
				p.wait()
			}
		}
	}()
	seedCPU0, _ := readCPU(seedPid)
	self0 := selfCPU()
	busy0, total0, machineOK := readMachineCPU()
	t0 := time.Now()
	for i := range procs {
		if i > 0 && sc.stagger > 0 {
			select {
			case <-time.After(sc.stagger):
			case <-ctx.Done():
				return nil, fmt.Errorf("bench swarm: %w", ctx.Err())
			}
		}
		if procs[i], err = sc.startFetch(ctx, i, tks[0].String()); err != nil {
			return nil, err
		}
	}
	for i, p := range procs {
		select {
		case err := <-p.got:
			if err != nil {
				p.wait()
				return nil, fmt.Errorf("bench swarm: fetcher %d: %v: %s", i, err, strings.TrimSpace(p.stderr.String()))
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("bench swarm: fetcher %d not done after %v: %w", i, sc.timeout, ctx.Err())
		}
	}
	// Every fetcher is done: the CPU the processes used until now.
	end := time.Now()
	seedCPU1, _ := readCPU(seedPid)
	self1 := selfCPU()
	busy1, total1, _ := readMachineCPU()
	for _, p := range procs {
		p.cpu, p.cpuOK = readCPU(p.cmd.Process.Pid)
	}
	for _, p := range procs {
		if !sc.leave {
			p.cmd.Process.Signal(os.Interrupt)
		}
		if err := p.wait(); err != nil {
			return nil, fmt.Errorf("bench swarm: a fetcher's exit: %v: %s", err, strings.TrimSpace(p.stderr.String()))
		}
		if !p.cpuOK {
			p.cpu = (p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()).Seconds()
		}
	}
	run := &swarmRun{Wall: end.Sub(t0).Seconds(), SeedCPU: seedCPU1 - seedCPU0, BenchCPU: self1 - self0}
	if machineOK && total1 > total0 {
		run.MachineBusy = (busy1 - busy0) / (total1 - total0)
	}
	for i, p := range procs {
		if err := sameFileBytes(sc.file, p.out); err != nil {
			return nil, fmt.Errorf("bench swarm: fetcher %d: %w", i, err)
		}
		os.Remove(p.out)
		os.RemoveAll(p.out + ".reconcile")
		run.Each = append(run.Each, swarmFetcher{ID: sc.ids[i].String(), Seconds: p.done.Sub(p.launched).Seconds(),
			FetchSeconds: p.sum.Seconds, FirstBlockSeconds: p.sum.FirstBlockSeconds, CPU: p.cpu,
			PeakRSSMiB: peakRSSMiB(p.cmd.ProcessState)})
	}
	sums := make([]*swarmSummary, len(procs))
	for i, p := range procs {
		sums[i] = &p.sum
	}
	run.tally(tks[0].Peers[0].ID.String(), sums, numCPU())
	return run, nil
}

// startFetch launches fetcher i of ticket and starts reading its summary.
func (sc *swarmConfig) startFetch(ctx context.Context, i int, ticket string) (*swarmProc, error) {
	p := &swarmProc{out: filepath.Join(sc.dir, fmt.Sprintf("out%d.bin", i)), got: make(chan error, 1), exited: make(chan error, 1)}
	os.Remove(p.out)
	os.RemoveAll(p.out + ".reconcile")
	args := append([]string{"fetch", ticket, "--out", p.out, "--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--progress", "none",
		"--key", sc.keys[i]}, swarmNetFlags...)
	if sc.rate > 0 {
		args = append(args, "--rate", fmt.Sprint(sc.rate))
	}
	if !sc.leave {
		args = append(args, "--seed-after")
	}
	if sc.profile != "" {
		args = append(args, "--cpuprofile", filepath.Join(sc.profile, fmt.Sprintf("fetch-%d-%d.pprof", sc.rep, i)))
	}
	if sc.trees > 0 {
		// On loopback a fetch would not join (peer.NearAddr).
		args = append(args, "--join-near")
	}
	p.cmd = exec.CommandContext(ctx, sc.self, append(args, sc.fetchArgs...)...)
	p.cmd.Stderr = &p.stderr
	if sc.logs != "" {
		lf, err := os.Create(filepath.Join(sc.logs, fmt.Sprintf("fetch-%d-%d.log", sc.rep, i)))
		if err != nil {
			return nil, err
		}
		defer lf.Close() // the child has its own descriptor once started
		p.cmd.Stderr = lf
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.launched = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	// The summary comes on standard output when the fetch is done; with
	// --seed-after the process runs on. Reads end before Wait, which
	// closes the pipe.
	go func() {
		err := json.NewDecoder(stdout).Decode(&p.sum)
		p.done = time.Now()
		if err != nil {
			err = fmt.Errorf("summary: %w", err)
		} else if p.sum.Bytes == 0 || p.sum.Fetched+p.sum.Resumed != p.sum.Blocks {
			err = errors.New("summary: not every block fetched")
		}
		p.got <- err
		io.Copy(io.Discard, stdout)
		p.exited <- p.cmd.Wait()
	}()
	return p, nil
}

// wait waits for the process's end (once) and returns how it ended.
func (p *swarmProc) wait() error {
	if p.ended {
		return nil
	}
	select {
	case err := <-p.exited:
		p.ended = true
		return err
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		p.ended = true
		return fmt.Errorf("bench swarm: process %d did not exit when asked", p.cmd.Process.Pid)
	}
}

// readMachineCPU returns the busy and total CPU ticks of the whole machine,
// all CPUs, from the first line of /proc/stat (busy: all but idle and
// iowait), and false where there is no such file.
func readMachineCPU() (busy, total float64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return machineTicks(line)
}

// machineTicks parses the "cpu" line of /proc/stat: user nice system idle
// iowait irq softirq steal ...
func machineTicks(line string) (busy, total float64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, false
	}
	for k, s := range f[1:9] {
		var v float64
		if _, err := fmt.Sscan(s, &v); err != nil {
			return 0, 0, false
		}
		total += v
		if k != 3 && k != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, true
}
