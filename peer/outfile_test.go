package peer

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOutFile: with WithOutFile, single-file content is written at out (not
// out/<name>), with its state beside it; the summary names the file; the
// fetch resumes from that state; a tree still goes under out as a folder.
func TestOutFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, tk, src := seedFile(t, dir, 200<<10, 16<<10)
	out := filepath.Join(dir, "my copy.bin")
	sum, err := newTestPeer(t).Fetch(ctx, tk, out, WithOutFile())
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, out)
	if sum.Out != out || len(sum.Files) != 1 || sum.Files[0] != out || sum.FileCount != 1 {
		t.Fatalf("summary out %q files %v (%d), want %q", sum.Out, sum.Files, sum.FileCount, out)
	}
	if _, err := os.Stat(out + ".reconcile"); err != nil {
		t.Fatalf("state beside the file: %v", err)
	}
	// Again: the output is complete, nothing is fetched.
	again, err := newTestPeer(t).Fetch(ctx, tk, out, WithOutFile())
	if err != nil || again.Fetched != 0 || again.Resumed != again.Blocks || again.Out != out {
		t.Fatalf("second fetch: %+v, %v", again, err)
	}
	// An existing folder stays a folder.
	folder := filepath.Join(dir, "dl")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	sum, err = newTestPeer(t).Fetch(ctx, tk, folder, WithOutFile())
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, filepath.Join(folder, "data.bin"))
	if sum.Files[0] != filepath.Join(folder, "data.bin") {
		t.Fatalf("files %v", sum.Files)
	}
}

// TestCheckProgress: a fetch that resumes a store re-hashes the blocks on
// disk first and reports it through WithCheckProgress, ending at total.
func TestCheckProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, src := seedFile(t, dir, 256<<10, 16<<10)
	m := seed.lib.Lookup(tk.Root[:]).Man
	out := filepath.Join(dir, "out")
	prefill(t, src, m, out, func(i int) bool { return i%2 == 0 })
	var calls, lastDone, lastTotal int
	if _, err := newTestPeer(t).Fetch(ctx, tk, out, WithCheckProgress(func(done, total int) {
		calls++
		lastDone, lastTotal = done, total
	})); err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
	if calls < 2 || lastTotal == 0 || lastDone != lastTotal {
		t.Fatalf("%d calls, last %d of %d", calls, lastDone, lastTotal)
	}
}
