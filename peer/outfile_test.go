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
