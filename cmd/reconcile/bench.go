package main

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
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
)

func init() { register(benchCommand()) }

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure fetch speed over loopback against plain TCP and TLS copies, one seed against several",
		Description: "Runs every party as its own process of this binary, on loopback, in one run:\n" +
			"  1. plain TCP copies of the file between two processes, written to a file and\n" +
			"     fsynced: with the kernel's zero-copy paths (sendfile, splice) and with a\n" +
			"     read/write loop through user space (as nc does), and over TLS 1.3 (AES-GCM, as\n" +
			"     a Go program copying over crypto/tls does; libp2p's TLS is the same): the baselines;\n" +
			"  2. reconcile fetch from one full seed (reconcile seed FILE);\n" +
			"  3. reconcile fetch from --seeds seeds that each hold 1/--seeds of the blocks.\n" +
			"It reports MiB/s (the JSON: mb_per_s, 10^6 bytes), the ratio of each fetch to the TCP copy, the ratio of the\n" +
			"multi-seed fetch to the one-seed fetch, and the peak resident memory of each fetch\n" +
			"process. The timed span of a fetch is the fetch's own (connect, manifest,\n" +
			"reconciliation, transfer, verification, fsync), not the seeds' chunking.\n\n" +
			"Example:\n" +
			"   reconcile bench --size 1GiB\n" +
			"   reconcile bench --size 64MiB --seeds 4 --json",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "size", Value: "256MiB", Usage: "file size"},
			&cli.StringFlag{Name: "block-size", Value: "256KiB", Usage: "block size (1KiB to 16MiB)"},
			&cli.IntFlag{Name: "seeds", Value: 4, Usage: "seeds of the multi-seed run, each holding an equal part (1 to 16)"},
			&cli.StringFlag{Name: "dir", Usage: "work folder (default: a temporary folder, removed afterwards)"},
			&cli.BoolFlag{Name: "json", Usage: "print the figures as one JSON document"},
			&cli.StringFlag{Name: "tcp-send", Hidden: true, Usage: "internal: send --file to this address and exit"},
			&cli.StringFlag{Name: "file", Hidden: true, Usage: "internal: the file of --tcp-send"},
			&cli.BoolFlag{Name: "zero-copy", Hidden: true, Usage: "internal: --tcp-send with sendfile"},
			&cli.BoolFlag{Name: "tls", Hidden: true, Usage: "internal: --tcp-send over TLS 1.3"},
		},
		Action: runBench,
	}
}

// benchReport holds the figures of one bench run.
type benchReport struct {
	Bytes        int64           `json:"bytes"`
	BlockSize    int64           `json:"block_size"`
	TCP          benchRun        `json:"tcp_copy"`
	TCPUser      benchRun        `json:"tcp_copy_userspace"`
	TLS          benchRun        `json:"tls_copy"`
	OneSeed      benchRun        `json:"one_seed"`
	MultiSeed    benchRun        `json:"multi_seed"`
	Seeds        int             `json:"seeds"`
	OneVsTCP     float64         `json:"one_seed_vs_tcp"`
	OneVsTCPUser float64         `json:"one_seed_vs_tcp_userspace"`
	OneVsTLS     float64         `json:"one_seed_vs_tls"`
	MultiVsOne   float64         `json:"multi_seed_vs_one_seed"`
	MultiVsTCP   float64         `json:"multi_seed_vs_tcp"`
	Summaries    []*peer.Summary `json:"summaries,omitempty"`
}

type benchRun struct {
	Seconds    float64 `json:"seconds"`
	MBps       float64 `json:"mb_per_s"`
	PeakRSSMiB float64 `json:"peak_rss_mib,omitempty"`
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
	size, err := flagSize(c, "size", 1, 0)
	if err != nil {
		return err
	}
	bs, err := flagSize(c, "block-size", chunker.MinBlockSize, chunker.MaxBlockSize)
	if err != nil {
		return err
	}
	nseeds := c.Int("seeds")
	if nseeds < 1 || nseeds > 16 {
		return usagef("--seeds %d: want 1 to 16", nseeds)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, done, err := workFolder(c, "bench")
	if err != nil {
		return err
	}
	defer done()
	ctx, stop := signalContext()
	defer stop()
	logf := stepLog(c)
	file := filepath.Join(dir, "bench.bin")
	logf("writing a %.0f MiB file...\n", mib(size))
	if err := writeDemoFile(file, size, 42); err != nil {
		return err
	}
	rep := benchReport{Bytes: size, BlockSize: bs, Seeds: nseeds}
	mbps := func(secs float64) float64 { return float64(size) / 1e6 / secs }

	// 1. The baselines: plain TCP copies between two processes, with the
	// kernel's zero-copy paths (sendfile, splice) and with a read/write loop
	// through user space (what nc or a simple Go program does).
	logf("plain TCP copies...\n")
	secs, err := benchTCP(ctx, self, file, filepath.Join(dir, "tcp.out"), copySendfile)
	if err != nil {
		return fmt.Errorf("bench: tcp copy: %w", err)
	}
	rep.TCP = benchRun{Seconds: secs, MBps: mbps(secs)}
	os.Remove(filepath.Join(dir, "tcp.out"))
	secs, err = benchTCP(ctx, self, file, filepath.Join(dir, "tcp.out"), copyUser)
	if err != nil {
		return fmt.Errorf("bench: tcp copy: %w", err)
	}
	rep.TCPUser = benchRun{Seconds: secs, MBps: mbps(secs)}
	os.Remove(filepath.Join(dir, "tcp.out"))
	logf("TLS 1.3 copy...\n")
	secs, err = benchTCP(ctx, self, file, filepath.Join(dir, "tcp.out"), copyTLS)
	if err != nil {
		return fmt.Errorf("bench: tls copy: %w", err)
	}
	rep.TLS = benchRun{Seconds: secs, MBps: mbps(secs)}
	os.Remove(filepath.Join(dir, "tcp.out"))

	// 2. One full seed.
	logf("fetch from one seed...\n")
	tk, stopSeeds, err := benchSeeds(ctx, self, dir, []string{file}, bs)
	if err != nil {
		return err
	}
	sum, rss, err := benchFetch(ctx, self, tk, nil, filepath.Join(dir, "one"))
	stopSeeds()
	if err != nil {
		return err
	}
	rep.OneSeed = benchRun{Seconds: sum.Seconds, MBps: mbps(sum.Seconds), PeakRSSMiB: rss}
	rep.Summaries = append(rep.Summaries, sum)
	os.RemoveAll(filepath.Join(dir, "one"))

	// 3. Several seeds holding a part each.
	logf("preparing %d partial seeds...\n", nseeds)
	m, err := chunker.ChunkPath(ctx, file, int(bs))
	if err != nil {
		return err
	}
	var parts []string
	for j := 0; j < nseeds; j++ {
		out := filepath.Join(dir, fmt.Sprintf("part%d", j))
		lo, hi := j*m.BlockCount()/nseeds, (j+1)*m.BlockCount()/nseeds
		if _, err := prefillDemo(file, m, out, lo, hi); err != nil {
			return err
		}
		parts = append(parts, out)
	}
	logf("fetch from %d partial seeds...\n", nseeds)
	tks, stopSeeds, err := benchSeedsAll(ctx, self, dir, parts, bs)
	if err != nil {
		return err
	}
	var extra []string
	for _, t := range tks[1:] {
		for _, ai := range t.Peers {
			for _, a := range ai.Addrs {
				extra = append(extra, a.String()+"/p2p/"+ai.ID.String())
			}
		}
	}
	sum, rss, err = benchFetch(ctx, self, tks[0], extra, filepath.Join(dir, "multi"))
	stopSeeds()
	if err != nil {
		return err
	}
	rep.MultiSeed = benchRun{Seconds: sum.Seconds, MBps: mbps(sum.Seconds), PeakRSSMiB: rss}
	rep.Summaries = append(rep.Summaries, sum)
	rep.OneVsTCP = rep.OneSeed.MBps / rep.TCP.MBps
	rep.OneVsTCPUser = rep.OneSeed.MBps / rep.TCPUser.MBps
	rep.OneVsTLS = rep.OneSeed.MBps / rep.TLS.MBps
	rep.MultiVsOne = rep.MultiSeed.MBps / rep.OneSeed.MBps
	rep.MultiVsTCP = rep.MultiSeed.MBps / rep.TCP.MBps
	if c.Bool("json") {
		return writeJSON(c.App.Writer, rep)
	}
	// The text counts in MiB/s like every other command; the JSON keeps mb_per_s (10^6 bytes).
	mibps := func(r benchRun) float64 { return mib(size) / r.Seconds }
	w := c.App.Writer
	fmt.Fprintf(w, "%s file, %s blocks, loopback, every party its own process\n", humanBytes(size), humanBytes(bs))
	fmt.Fprintf(w, "  plain TCP copy, sendfile/splice  %8.1f MiB/s  (%.2f s)\n", mibps(rep.TCP), rep.TCP.Seconds)
	fmt.Fprintf(w, "  plain TCP copy, read/write loop  %8.1f MiB/s  (%.2f s)\n", mibps(rep.TCPUser), rep.TCPUser.Seconds)
	fmt.Fprintf(w, "  TLS 1.3 copy (AES-GCM)           %8.1f MiB/s  (%.2f s)\n", mibps(rep.TLS), rep.TLS.Seconds)
	fmt.Fprintf(w, "  fetch, 1 full seed               %8.1f MiB/s  (%.2f s)  %.2f x TLS copy, %.2f x TCP (sendfile), %.2f x TCP (read/write), peak RSS %.0f MiB\n", mibps(rep.OneSeed), rep.OneSeed.Seconds, rep.OneVsTLS, rep.OneVsTCP, rep.OneVsTCPUser, rep.OneSeed.PeakRSSMiB)
	fmt.Fprintf(w, "  fetch, %d partial seeds           %8.1f MiB/s  (%.2f s)  %.2f x TCP, %.2f x one seed, peak RSS %.0f MiB\n", nseeds, mibps(rep.MultiSeed), rep.MultiSeed.Seconds, rep.MultiVsTCP, rep.MultiVsOne, rep.MultiSeed.PeakRSSMiB)
	return nil
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
// loopback TCP (mode says how), written to out and fsynced.
func benchTCP(ctx context.Context, self, file, out string, mode copyMode) (float64, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	if mode == copyTLS {
		cert, err := benchCert()
		if err != nil {
			return 0, err
		}
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	}
	args := []string{"bench", "--tcp-send", l.Addr().String(), "--file", file, fmt.Sprintf("--zero-copy=%v", mode == copySendfile), fmt.Sprintf("--tls=%v", mode == copyTLS)}
	child := exec.CommandContext(ctx, self, args...)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return 0, err
	}
	defer child.Wait()
	conn, err := l.Accept()
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	start := time.Now()
	f, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var dst io.Writer = f
	var src io.Reader = conn
	if mode != copySendfile {
		dst, src = struct{ io.Writer }{f}, struct{ io.Reader }{conn}
	}
	if _, err := io.CopyBuffer(dst, src, make([]byte, 256<<10)); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
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

// benchSeeds starts one seed process per path and returns the first ticket.
func benchSeeds(ctx context.Context, self, dir string, paths []string, bs int64) (peer.Ticket, func(), error) {
	tks, stop, err := benchSeedsAll(ctx, self, dir, paths, bs)
	if err != nil {
		return peer.Ticket{}, nil, err
	}
	return tks[0], stop, nil
}

func benchSeedsAll(ctx context.Context, self, dir string, paths []string, bs int64) ([]peer.Ticket, func(), error) {
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
		cmd := exec.CommandContext(ctx, self, "seed", p, "--listen", "/ip4/127.0.0.1/tcp/0", "--block-size", fmt.Sprint(bs), "--ticket-file", tf)
		sp := &seedProc{exited: make(chan error, 1)}
		cmd.Stdout = io.Discard
		cmd.Stderr = &sp.stderr
		if err := cmd.Start(); err != nil {
			stop()
			return nil, nil, err
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
			return nil, nil, err
		}
		tks = append(tks, tk)
	}
	return tks, stop, nil
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

// benchFetch runs a fetch process and returns its summary and peak RSS in MiB.
func benchFetch(ctx context.Context, self string, tk peer.Ticket, extra []string, out string) (*peer.Summary, float64, error) {
	args := []string{"fetch", tk.String(), "--out", out, "--listen", "/ip4/127.0.0.1/tcp/0", "--json"}
	for _, e := range extra {
		args = append(args, "--peer", e)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return nil, 0, fmt.Errorf("bench: fetch: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var sum peer.Summary
	if err := json.NewDecoder(bufio.NewReader(bytes.NewReader(stdout))).Decode(&sum); err != nil {
		return nil, 0, fmt.Errorf("bench: fetch summary: %w", err)
	}
	rss := 0.0
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return &sum, rss, nil
}
