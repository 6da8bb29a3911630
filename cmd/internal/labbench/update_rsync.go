package labbench

// The rsync half of reconcile bench update: an rsync daemon on loopback
// serving the v2 folder, an rsync client that updates a copy of v1 from
// it, and the figures of its --stats.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// rsyncModule is the name of the daemon's module, the v2 folder.
const rsyncModule = "v2"

// rsyncDaemon is an rsync daemon process on 127.0.0.1 serving one folder,
// read-only, as module rsyncModule.
type rsyncDaemon struct {
	cmd    *exec.Cmd
	port   int
	exited chan error
	log    string // its log file
}

// errNoRsync means rsync is not installed.
var errNoRsync = errors.New("bench update: rsync is not installed (e.g. apt-get install rsync)")

// rsyncVersion returns the first line of rsync --version ("rsync  version
// 3.2.7  protocol version 31"), with its spaces squeezed.
func rsyncVersion() (string, error) {
	if _, err := exec.LookPath("rsync"); err != nil {
		return "", errNoRsync
	}
	out, err := exec.Command("rsync", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("bench update: rsync --version: %w", err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.Join(strings.Fields(line), " "), nil
}

// rsyncdConf is the daemon's configuration: no chroot and, when run by
// root, no switch to the user nobody (who could not read a private work
// folder), so that it needs no privilege of its own.
func rsyncdConf(dir, module string, uid, gid int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "use chroot = no\nlog file = %s\npid file = %s\n",
		filepath.Join(dir, "rsyncd.log"), filepath.Join(dir, "rsyncd.pid"))
	if uid == 0 {
		fmt.Fprintf(&b, "uid = %d\ngid = %d\n", uid, gid)
	}
	fmt.Fprintf(&b, "[%s]\n    path = %s\n    read only = yes\n", rsyncModule, module)
	return b.String()
}

// startRsyncDaemon starts an rsync daemon serving folder module, its
// configuration and log in dir, on a free port of 127.0.0.1, and waits
// until it accepts connections.
func startRsyncDaemon(ctx context.Context, dir, module string) (*rsyncDaemon, error) {
	conf := filepath.Join(dir, "rsyncd.conf")
	if err := os.WriteFile(conf, []byte(rsyncdConf(dir, module, os.Getuid(), os.Getgid())), 0o644); err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 { // the free port may be taken before the daemon binds it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		d := &rsyncDaemon{port: port, exited: make(chan error, 1), log: filepath.Join(dir, "rsyncd.log")}
		d.cmd = exec.CommandContext(ctx, "rsync", "--daemon", "--no-detach", "--address", "127.0.0.1",
			"--port", strconv.Itoa(port), "--config", conf)
		var stderr bytes.Buffer
		d.cmd.Stderr = &stderr
		if err := d.cmd.Start(); err != nil {
			return nil, fmt.Errorf("bench update: rsync daemon: %w", err)
		}
		go func() { d.exited <- d.cmd.Wait() }()
		if lastErr = d.waitReady(ctx); lastErr == nil {
			return d, nil
		}
		d.stop()
		lastErr = fmt.Errorf("bench update: rsync daemon: %v: %s (its log: %s)", lastErr, strings.TrimSpace(stderr.String()), d.log)
	}
	return nil, lastErr
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady waits until the daemon accepts a connection, or exits.
func (d *rsyncDaemon) waitReady(ctx context.Context) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(d.port))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-d.exited:
			d.exited <- err // for stop
			return fmt.Errorf("exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return errors.New("not listening after 10 s")
}

// stop ends the daemon (the transfers it forked end with their client).
func (d *rsyncDaemon) stop() {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
		d.cmd.Process.Kill()
		<-d.exited
	}
}

// url is the rsync:// address of rel, a path in the module.
func (d *rsyncDaemon) url(rel string) string {
	return fmt.Sprintf("rsync://127.0.0.1:%d/%s/%s", d.port, rsyncModule, filepath.ToSlash(rel))
}

// rsyncArgs are the arguments of an rsync client updating dest from the
// daemon's src: a file (rsync --no-whole-file), or a folder (rsync -a
// --delete --no-whole-file, src and dest ending in a slash: their contents).
func (d *rsyncDaemon) rsyncArgs(src, dest string, folder bool) []string {
	if folder {
		return []string{"-a", "--delete", "--no-whole-file", "--stats", d.url(src) + "/", dest + string(filepath.Separator)}
	}
	return []string{"--no-whole-file", "--stats", d.url(src), dest}
}

// rsyncRun runs an rsync client that updates dest (a copy of v1) from the
// daemon's src (v2, a path in the module), and returns its --stats figures
// and wall seconds (start to exit).
func (d *rsyncDaemon) rsyncRun(ctx context.Context, src, dest string, folder bool) (rsyncStats, float64, error) {
	cmd := exec.CommandContext(ctx, "rsync", d.rsyncArgs(src, dest, folder)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	secs := time.Since(start).Seconds()
	if err != nil {
		return rsyncStats{}, 0, fmt.Errorf("bench update: rsync %s: %v: %s", strings.Join(cmd.Args[1:], " "), err, strings.TrimSpace(stderr.String()))
	}
	st, err := parseRsyncStats(stdout.String())
	if err != nil {
		return rsyncStats{}, 0, fmt.Errorf("bench update: rsync --stats: %w\n%s", err, stdout.String())
	}
	return st, secs, nil
}

// rsyncStats are the figures of rsync --stats the bench reads: the bytes
// the client sent and received (the protocol's: file list, checksums,
// literal data and match tokens, compressed or not; not the TCP/IP
// headers), and the file data it took from the server (literal) and from
// the basis file it had (matched).
type rsyncStats struct {
	Sent     int64 `json:"bytes_sent"`
	Received int64 `json:"bytes_received"`
	Literal  int64 `json:"literal_bytes"`
	Matched  int64 `json:"matched_bytes"`
}

// parseRsyncStats reads the figures of rsync --stats output. Total bytes
// sent and received must be there.
func parseRsyncStats(out string) (rsyncStats, error) {
	var st rsyncStats
	fields := map[string]*int64{"Total bytes sent": &st.Sent, "Total bytes received": &st.Received,
		"Literal data": &st.Literal, "Matched data": &st.Matched}
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		dst, known := fields[key]
		if !ok || !known {
			continue
		}
		n, err := parseRsyncNumber(val)
		if err != nil {
			return rsyncStats{}, fmt.Errorf("%s: %w", key, err)
		}
		*dst, seen[key] = n, true
	}
	for _, key := range []string{"Total bytes sent", "Total bytes received"} {
		if !seen[key] {
			return rsyncStats{}, fmt.Errorf("no %q line", key)
		}
	}
	return st, nil
}

// rsyncSeparators are the thousands separators rsync may print, after the
// locale: 1,234,567 or 1.234.567, 1'234'567, 1 234 567 (a space, a
// no-break space or a narrow one).
const rsyncSeparators = ",.' \u00a0\u202f"

// parseRsyncNumber reads a count as rsync --stats prints it ("17,041",
// "8,000,000 bytes"), with the thousands separators of any locale. A size
// in human-readable units (rsync -hh: "7.63M") is refused.
func parseRsyncNumber(s string) (int64, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), " bytes")
	groups := strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(rsyncSeparators, r) })
	bad := fmt.Errorf("%q is not a count of bytes", s)
	if len(groups) == 0 {
		return 0, bad
	}
	var digits strings.Builder
	for j, g := range groups {
		if len(g) == 0 || len(groups) > 1 && (j == 0 && len(g) > 3 || j > 0 && len(g) != 3) {
			return 0, bad
		}
		digits.WriteString(g)
	}
	n, err := strconv.ParseInt(digits.String(), 10, 64)
	if err != nil {
		return 0, bad
	}
	return n, nil
}
