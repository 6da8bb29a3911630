package labbench

// The processes of a bench run: seeds, fetches and TCP or TLS copies, each a
// process of this binary (or a --compare build), and their CPU times.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reconcile-p2p/reconcile/internal/cputime"
	"github.com/reconcile-p2p/reconcile/peer"
)

// fetchFrom starts a seed process for each path (a file, or a store folder
// holding part of it), fetches from all of them into a fresh folder, stops
// the seeds and returns the fetch's summary and peak RSS in MiB. self is
// the reconcile binary both run (this one, or a --compare build), with
// seedArgs (the first seed) and fetchArgs added. With
// profile set, the first seed and the fetch write CPU profiles named after it.
func (bc *benchConfig) fetchFrom(ctx context.Context, self string, paths []string, profile string, seedArgs, fetchArgs []string) (*peer.Summary, benchCPU, float64, error) {
	if profile != "" {
		seedArgs = append(seedArgs, "--cpuprofile", filepath.Join(bc.profile, "seed-"+profile+".pprof"))
		fetchArgs = append(fetchArgs, "--cpuprofile", filepath.Join(bc.profile, "fetch-"+profile+".pprof"))
	}
	tks, pids, stopSeeds, err := benchSeedsAll(ctx, self, bc.dir, paths, bc.bs, seedArgs)
	if err != nil {
		return nil, benchCPU{}, 0, err
	}
	var extra []string
	for _, t := range tks[1:] {
		for _, ai := range t.Peers {
			for _, a := range ai.Addrs {
				extra = append(extra, a.String()+"/p2p/"+ai.ID.String())
			}
		}
	}
	out := filepath.Join(bc.dir, "fetched")
	os.RemoveAll(out)
	defer func() {
		os.RemoveAll(out)
		bc.removed()
	}()
	seedCPU := func() (t float64) {
		for _, pid := range pids {
			t += procCPU(pid)
		}
		return t
	}
	bc.waitSettle(ctx)
	before := seedCPU()
	sum, cpu, rss, err := benchFetch(ctx, self, tks[0], extra, out, append(fetchArgs, bc.fetchArgs...))
	cpu.send = seedCPU() - before
	stopSeeds()
	return sum, cpu, rss, err
}

// procCPU returns the CPU seconds (user and system) process pid has used,
// from /proc (0 where there is none; see readCPU).
func procCPU(pid int) float64 {
	s, _ := readCPU(pid)
	return s
}

// selfCPU returns the CPU seconds (user and system) this process has used.
func selfCPU() float64 {
	d, _ := cputime.Self()
	return d.Seconds()
}

// copyMode is how benchTCP copies: through the kernel's zero-copy paths,
// through user space, or through user space over TLS 1.3.
type copyMode int

const (
	copySendfile copyMode = iota
	copyUser
	copyTLS
)

// benchTCP times a copy of file from a child process to this one over
// loopback TCP (mode says how), written to out and fsynced, and returns the
// CPU seconds of this process (receiving) and of the child (sending).
func benchTCP(ctx context.Context, self, file, out string, mode copyMode) (float64, benchCPU, error) {
	secs, child, cpu, err := benchTCPRun(ctx, self, file, out, mode)
	if child != nil {
		if werr := child.Wait(); werr == nil && err == nil {
			cpu.send = (child.ProcessState.UserTime() + child.ProcessState.SystemTime()).Seconds()
		}
	}
	return secs, cpu, err
}

// compareFirst reports whether repetition k (from 0) runs the --compare
// fetch before this build's: in every other one, so that neither build is
// always the second of the two fetches run back to back. Measured here (1
// GiB, 5 repetitions), the second was faster by itself: a build with larger
// fsync groups was 1.15x and 1.19x faster than this one run second, 0.91x and
// 0.96x run first.
func compareFirst(k int) bool { return k%2 == 1 }

// benchTCPRun is benchTCP but for waiting for the child it started (nil if none).
func benchTCPRun(ctx context.Context, self, file, out string, mode copyMode) (float64, *exec.Cmd, benchCPU, error) {
	var cpu benchCPU
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, cpu, err
	}
	defer l.Close()
	if mode == copyTLS {
		cert, err := benchCert()
		if err != nil {
			return 0, nil, cpu, err
		}
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	}
	args := []string{"bench", "--tcp-send", l.Addr().String(), "--file", file, fmt.Sprintf("--zero-copy=%v", mode == copySendfile), fmt.Sprintf("--tls=%v", mode == copyTLS)}
	child := exec.CommandContext(ctx, self, args...)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return 0, nil, cpu, err
	}
	conn, err := l.Accept()
	if err != nil {
		return 0, child, cpu, err
	}
	defer conn.Close()
	start, cpu0 := time.Now(), selfCPU()
	f, err := os.Create(out)
	if err != nil {
		return 0, child, cpu, err
	}
	defer f.Close()
	var dst io.Writer = f
	var src io.Reader = conn
	if mode != copySendfile {
		dst, src = struct{ io.Writer }{f}, struct{ io.Reader }{conn}
	}
	if _, err := io.CopyBuffer(dst, src, make([]byte, 256<<10)); err != nil {
		return 0, child, cpu, err
	}
	if err := f.Sync(); err != nil {
		return 0, child, cpu, err
	}
	cpu.recv = selfCPU() - cpu0
	return time.Since(start).Seconds(), child, cpu, nil
}

// benchCert returns a fresh self-signed ECDSA P-256 certificate for the TLS
// copy (the sender does not verify it: it measures the cipher, as libp2p's
// TLS does with its own certificates).
func benchCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// benchTCPSend is the sending child of benchTCP.
func benchTCPSend(addr, file string, mode copyMode) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	switch mode {
	case copySendfile:
		_, err = io.Copy(conn, f) // sendfile(2) on Linux
		return err
	case copyTLS:
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}) // a benchmark of the cipher, see benchCert
		defer tc.Close()
		_, err = io.CopyBuffer(tc, struct{ io.Reader }{f}, make([]byte, 256<<10))
		return err
	}
	_, err = io.CopyBuffer(struct{ io.Writer }{conn}, struct{ io.Reader }{f}, make([]byte, 256<<10))
	return err
}

// benchSeedsAll starts one seed process per path (the first given args
// too) and returns their tickets, their process ids and a function that
// stops them. bs is the seeds' --block-size (0: none given, the seed's
// default).
func benchSeedsAll(ctx context.Context, self, dir string, paths []string, bs int64, args []string) ([]peer.Ticket, []int, func(), error) {
	// Each seed's standard error is kept, not shown: it says "shutting down"
	// when stopped, and is reported only if the seed fails to start.
	type seedProc struct {
		stderr bytes.Buffer
		exited chan error
	}
	var procs []*seedProc
	var cmds []*exec.Cmd
	stop := func() {
		for j, c := range cmds {
			c.Process.Signal(os.Interrupt)
			<-procs[j].exited
		}
	}
	var tks []peer.Ticket
	for j, p := range paths {
		tf := filepath.Join(dir, fmt.Sprintf("seed%d.ticket", j))
		os.Remove(tf)
		// Later flags win: args may set another --block-size, or cut
		// content-defined blocks instead (which takes no --block-size).
		base := []string{"seed", p, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--ticket-file", tf}
		if bs > 0 && !slices.Contains(args, "--content-defined") {
			base = append(base, "--block-size", fmt.Sprint(bs))
		}
		cmd := exec.CommandContext(ctx, self, append(base, args...)...)
		args = nil // the first seed's only
		sp := &seedProc{exited: make(chan error, 1)}
		cmd.Stdout = io.Discard
		cmd.Stderr = &sp.stderr
		if err := cmd.Start(); err != nil {
			stop()
			return nil, nil, nil, err
		}
		cmds, procs = append(cmds, cmd), append(procs, sp)
		go func() { sp.exited <- cmd.Wait() }()
		tk, err := waitTicket(ctx, tf, sp.exited)
		if err != nil {
			if errors.Is(err, errSeedExited) {
				cmds, procs = cmds[:j], procs[:j]
				err = fmt.Errorf("bench: seed: %s", strings.TrimPrefix(strings.TrimSpace(sp.stderr.String()), "reconcile: "))
			}
			stop()
			return nil, nil, nil, err
		}
		tks = append(tks, tk)
	}
	pids := make([]int, len(cmds))
	for j, c := range cmds {
		pids[j] = c.Process.Pid
	}
	return tks, pids, stop, nil
}

// errSeedExited means a seed process ended before it wrote its ticket.
var errSeedExited = errors.New("bench: a seed exited before writing its ticket")

// waitTicket waits for a seed to write its ticket file, or to exit (exited
// gets its end; the error is then errSeedExited).
func waitTicket(ctx context.Context, path string, exited <-chan error) (peer.Ticket, error) {
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return peer.ParseTicket(string(b))
		}
		select {
		case <-ctx.Done():
			return peer.Ticket{}, ctx.Err()
		case err := <-exited:
			return peer.Ticket{}, fmt.Errorf("%w: %v", errSeedExited, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return peer.Ticket{}, errors.New("bench: a seed wrote no ticket")
}

// benchFetch runs a fetch process (with more args) and returns its summary,
// its CPU seconds (as benchCPU.recv) and its peak RSS in MiB.
func benchFetch(ctx context.Context, self string, tk peer.Ticket, extra []string, out string, more []string) (*peer.Summary, benchCPU, float64, error) {
	var sum peer.Summary
	_, cpu, rss, err := runFetch(ctx, self, tk, extra, out, more, &sum)
	if err != nil {
		return nil, benchCPU{}, 0, err
	}
	return &sum, cpu, rss, nil
}

// runFetch runs a fetch process (with more args), decodes its JSON summary
// into v and returns the process's wall seconds (start to exit), its CPU
// seconds (as benchCPU.recv) and its peak RSS in MiB.
func runFetch(ctx context.Context, self string, tk peer.Ticket, extra []string, out string, more []string, v any) (float64, benchCPU, float64, error) {
	args := append([]string{"fetch", tk.String(), "--out", out, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--json"}, more...)
	for _, e := range extra {
		args = append(args, "--peer", e)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	stdout, err := cmd.Output()
	secs := time.Since(start).Seconds()
	if err != nil {
		return 0, benchCPU{}, 0, fmt.Errorf("bench: fetch: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	if err := json.NewDecoder(bufio.NewReader(bytes.NewReader(stdout))).Decode(v); err != nil {
		return 0, benchCPU{}, 0, fmt.Errorf("bench: fetch summary: %w", err)
	}
	rss := peakRSSMiB(cmd.ProcessState)
	cpu := benchCPU{recv: (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()}
	return secs, cpu, rss, nil
}
