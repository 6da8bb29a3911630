package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/peer"
)

// e2eBinary builds the reconcile command once per test run.
func e2eBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := cliutil.BuildReconcile()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// startSeed runs "reconcile seed" and returns its ticket file once written.
func startSeed(t *testing.T, bin, dir, file string, args ...string) string {
	t.Helper()
	tk := filepath.Join(dir, "ticket")
	cmd := exec.Command(bin, append([]string{"seed", file, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--ticket-file", tk}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("seed did not shut down cleanly: %v\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("seed did not stop on SIGINT")
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(tk); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return tk
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("seed wrote no ticket: %s", stderr.String())
	return ""
}

func writeRandom(t *testing.T, path string, size int) {
	t.Helper()
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// prefillStore creates a store for path's content in out holding the blocks keep selects.
func prefillStore(t *testing.T, path, out string, blockSize int, keep func(i, n int) bool) {
	t.Helper()
	m, err := chunker.ChunkPath(context.Background(), path, blockSize)
	if err != nil {
		t.Fatal(err)
	}
	src, err := chunker.SeedStore(context.Background(), path, m)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	st, err := chunker.CreateStore(context.Background(), out, m)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var buf []byte
	for i := 0; i < m.BlockCount(); i++ {
		if !keep(i, m.BlockCount()) {
			continue
		}
		if buf, err = src.ReadBlock(i, buf); err != nil {
			t.Fatal(err)
		}
		if err := st.PutBlock(i, buf); err != nil {
			t.Fatal(err)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func keyID(t *testing.T, path string) lpeer.ID {
	t.Helper()
	k, err := peer.LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := lpeer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func sameBytes(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Fatalf("%s and %s differ", a, b)
	}
}

// TestE2ESeedTwoHalves: the built binary seeds a file; two fetchers, each
// starting with a different half of the blocks, fetch from the seed and from
// each other; all three copies end byte-identical.
func TestE2ESeedTwoHalves(t *testing.T) {
	bin := e2eBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "data.bin")
	writeRandom(t, file, 4<<20+77)
	tk := startSeed(t, bin, dir, file, "--block-size", "64KiB", "--rate", "8MiB")
	names := []string{"a", "b"}
	ports := []int{freePort(t), freePort(t)}
	ids := []lpeer.ID{keyID(t, filepath.Join(dir, "a.key")), keyID(t, filepath.Join(dir, "b.key"))}
	for j, n := range names {
		prefillStore(t, file, filepath.Join(dir, n), 64<<10, func(i, count int) bool { return (i < count/2) == (j == 0) })
	}
	var wg sync.WaitGroup
	sums := make([]peer.Summary, 2)
	errs := make([]error, 2)
	for j, n := range names {
		o := 1 - j
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "fetch", "--ticket-file", tk, "--out", filepath.Join(dir, n),
				"--key", filepath.Join(dir, n+".key"), "--listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", ports[j]), "--no-mdns",
				"--peer", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", ports[o], ids[o]), "--json")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				errs[j] = fmt.Errorf("fetch %s: %v: %s", n, err, stderr.String())
				return
			}
			errs[j] = json.Unmarshal(out, &sums[j])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for j, n := range names {
		sameBytes(t, file, filepath.Join(dir, n, "data.bin"))
		s := sums[j]
		// The seed serves at 8 MiB/s, the other fetcher far faster: the
		// endgame may ask the latter for a last block or two the seed holds
		// (sched.EndgameBlocks at most), the first copy kept.
		if s.Resumed+s.Fetched != s.Blocks || s.Resumed < s.Blocks/2 || s.Redundant > 8 {
			t.Errorf("%s: %+v", n, s)
		}
		t.Logf("%s: resumed %d, fetched %d, peers %+v", n, s.Resumed, s.Fetched, s.Peers)
	}
}

// TestE2EKillResume: an update (a fetch into an older version of the file)
// killed with SIGKILL leaves the older version as it was, and started again
// ends byte-identical and downloads no stored block again, with a durable
// record per block (the default) and with grouped fsyncs (where the resumed
// fetch re-hashes the staged file). The finished download keeps its manifest.
func TestE2EKillResume(t *testing.T) {
	for _, every := range []string{"1", "16"} {
		t.Run("sync-every="+every, func(t *testing.T) { testKillResume(t, every) })
	}
}

func testKillResume(t *testing.T, syncEvery string) {
	bin := e2eBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "data.bin")
	writeRandom(t, file, 3<<20)
	tk := startSeed(t, bin, dir, file, "--block-size", "32KiB", "--rate", "2MiB")
	out := filepath.Join(dir, "copy.bin") // --out names the file; its state is copy.bin.reconcile/
	// The older version: the file with 256 KiB overwritten at 1 MiB.
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	copy(old[1<<20:], bytes.Repeat([]byte{7}, 256<<10))
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "fetch", "--ticket-file", tk, "--out", out, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--json", "--sync-every", syncEvery)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once some blocks are recorded as held (the seed's rate cap
	// leaves more than a second before the last one).
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		hs, _ := filepath.Glob(out + ".reconcile/held")
		more, _ := filepath.Glob(out + ".reconcile/*/held")
		if hs = append(hs, more...); len(hs) == 1 && fileSize(hs[0]) > 256 {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("the older version changed under an unfinished update (%v)", err)
	}
	res, err := exec.Command(bin, "fetch", "--ticket-file", tk, "--out", out, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--json", "--sync-every", syncEvery).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("resumed fetch: %v: %s", err, stderr)
	}
	var s peer.Summary
	if err := json.Unmarshal(res, &s); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, file, out)
	if _, err := os.Stat(filepath.Join(out+".reconcile", "manifest")); err != nil {
		t.Errorf("the finished download kept no manifest: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out+".reconcile", "data")); !os.IsNotExist(err) {
		t.Errorf("the staged data is still there once complete: %v", err)
	}
	if s.Out != out || len(s.Files) != 1 || s.Files[0] != out {
		t.Errorf("summary names %q, %v; want %q", s.Out, s.Files, out)
	}
	// The blocks the overwrite fell in come as deltas when the restart asks
	// for them (the killed run may have stored them already: resumed).
	if s.Resumed == 0 || s.Resumed == s.Blocks || s.Resumed+s.ReusedBlocks+s.DeltaBlocks+s.Fetched != s.Blocks {
		t.Fatalf("after kill -9: resumed %d, reused %d, rebuilt from deltas %d, fetched %d of %d", s.Resumed, s.ReusedBlocks, s.DeltaBlocks, s.Fetched, s.Blocks)
	}
	t.Logf("killed after %d of %d blocks; the restart fetched the other %d", s.Resumed, s.Blocks, s.Fetched)
}

// TestE2EErrors: errors a user can act on give one line and a non-zero exit.
func TestE2EErrors(t *testing.T) {
	bin := e2eBinary(t)
	dir := t.TempDir()
	deadKey := filepath.Join(dir, "dead.key")
	id := keyID(t, deadKey)
	addr := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t))
	var root chunker.ID
	ai, err := lpeer.AddrInfoFromString(addr + "/p2p/" + id.String())
	if err != nil {
		t.Fatal(err)
	}
	dead := peer.Ticket{Root: root, Peers: []lpeer.AddrInfo{*ai}}.String()
	cases := []struct {
		name   string
		args   []string
		want   string
		before string // a progress line before the error, if any
	}{
		{"bad ticket", []string{"fetch", "not-a-ticket", "--out", dir}, "bad ticket", ""},
		{"no peer", []string{"fetch", dead, "--out", filepath.Join(dir, "o"), "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--no-dht", "--no-mdns"}, "no reachable peer",
			"fetch: cannot reach peer " + shortID(id.String()) + " yet ([" + addr + "] dial tcp4 127.0.0.1:"},
		{"bad method", []string{"fetch", dead, "--method", "magic"}, "--method", ""},
		{"missing file", []string{"seed", filepath.Join(dir, "nope"), "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns"}, "no such file", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, tc.args...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			if err == nil {
				t.Fatalf("exit 0, stderr %q", stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if tc.before != "" {
				first, rest, _ := strings.Cut(msg, "\n")
				if !strings.HasPrefix(first, tc.before) {
					t.Fatalf("stderr %q, want a first line starting %q", msg, tc.before)
				}
				msg = rest
			}
			if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, tc.want) {
				t.Fatalf("stderr %q, want one line containing %q", msg, tc.want)
			}
		})
	}
}

// fileSize returns the size of the file at p, or -1.
func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// TestE2EFetchNoSpace: a fetch to a disk too small for the file fails as it
// creates the output file, in one line that says how much space is needed
// and what to do, rather than after the disk has filled up (Linux, root:
// it mounts a 1 MiB tmpfs).
func TestE2EFetchNoSpace(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: Linux and root only")
	}
	bin := e2eBinary(t)
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.Mkdir(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", small).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, out)
		}
	})
	src := filepath.Join(dir, "src.bin")
	writeRandom(t, src, 4<<20)
	tk := startSeed(t, bin, dir, src)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "fetch", "--ticket-file", tk, "--out", filepath.Join(small, "src.bin"), "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--progress", "none")
	cmd.Stderr = &stderr
	err := cmd.Run()
	msg := strings.TrimSpace(stderr.String())
	if err == nil || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "not enough disk space: 4194304 bytes needed") || !strings.Contains(msg, "choose another --out") {
		t.Fatalf("exit %v, stderr %q; want one line on the disk space", err, msg)
	}
}

// TestE2ESeedFolderOfStores: a folder that two fetches of two contents wrote
// into is seeded whole, one ticket per content, and both fetch from it.
func TestE2ESeedFolderOfStores(t *testing.T) {
	bin := e2eBinary(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.bin"), filepath.Join(dir, "b.bin")
	writeRandom(t, a, 600<<10)
	writeRandom(t, b, 900<<10)
	out := filepath.Join(dir, "out")
	for i, src := range []string{a, b} {
		sdir := filepath.Join(dir, fmt.Sprint("s", i))
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			t.Fatal(err)
		}
		tk := startSeed(t, bin, sdir, src)
		if msg, err := exec.Command(bin, "fetch", "--ticket-file", tk, "--out", out+"/", "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--progress", "none").CombinedOutput(); err != nil {
			t.Fatalf("fetch %s: %v\n%s", src, err, msg)
		}
	}
	cmd := exec.Command(bin, "seed", out, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--json", "-q")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	var rep seedReport
	if err := json.NewDecoder(stdout).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.More) != 1 || rep.Held != rep.Blocks || rep.More[0].Held != rep.More[0].Blocks {
		t.Fatalf("seed of a folder of two stores: %+v", rep)
	}
	for k, tk := range []string{rep.Ticket, rep.More[0].Ticket} {
		out2 := filepath.Join(dir, fmt.Sprint("again", k))
		if msg, err := exec.Command(bin, "fetch", tk, "--out", out2+"/", "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--progress", "none").CombinedOutput(); err != nil {
			t.Fatalf("fetch %d from the folder's seed: %v\n%s", k, err, msg)
		}
	}
	for _, name := range []string{"a.bin", "b.bin"} {
		src := filepath.Join(dir, name)
		got := filepath.Join(dir, "again0", name)
		if _, err := os.Stat(got); err != nil {
			got = filepath.Join(dir, "again1", name)
		}
		sameBytes(t, src, got)
	}
}
