package peer

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// syncBuffer is a bytes.Buffer for a logger writing from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestSeedSourceChanged: when the seeded file changes under a running seed,
// the seed notices (its periodic check), logs one line naming the file and
// the blocks that no longer match, and stops serving and offering them; a
// fetcher then gets every block still served and fails naming the blocks no
// peer has any more (not dropping the seed for corrupt blocks).
func TestSeedSourceChanged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	const bs = 16 << 10
	src := writeRandomFile(t, dir, "data.bin", 16*bs, 7)
	var logs syncBuffer
	seed := newTestPeer(t, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	tk, err := seed.Seed(ctx, src, WithBlockSize(bs), WithSourceCheck(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the first 15 blocks with other bytes, the size unchanged.
	other := writeRandomFile(t, t.TempDir(), "other.bin", 15*bs, 8)
	b, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(src, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	later := time.Now().Add(time.Hour) // a new mtime whatever the file system's granularity
	if err := os.Chtimes(src, later, later); err != nil {
		t.Fatal(err)
	}
	for {
		if held, _, _ := seed.Held(tk.Root); held == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the seed did not notice the change")
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := `msg="source file data.bin changed: 15 of 16 blocks no longer match (blocks 0-14); not serving them"`
	if got := logs.String(); strings.Count(got, "source file") != 1 || !strings.Contains(got, want) {
		t.Fatalf("seed log:\n%s\nwant one line with %s", got, want)
	}
	fetcher := newTestPeer(t)
	var evs eventLog
	sum, err := fetcher.Fetch(ctx, tk, filepath.Join(dir, "out"), WithNoPeerTimeout(time.Second), WithFetchEvents(evs.add))
	if !errors.Is(err, ErrNoPeers) || !strings.Contains(err.Error(), "15 of 16 blocks missing (blocks 0-14)") {
		t.Fatalf("fetch error %v; want ErrNoPeers naming blocks 0-14", err)
	}
	if sum == nil || sum.Fetched != 1 || sum.Rejected != 0 || len(evs.all()) != 0 {
		t.Fatalf("summary %+v, events %v: want the 1 block served, nothing corrupt", sum, evs.all())
	}
}

// TestSeedSourceChangedUnread: with no periodic check, the first block read
// for a fetcher after the file changed makes the seed re-hash the file: the
// fetcher gets no changed bytes, keeps the seed (one failed stream, not three)
// and fails naming the blocks no peer has.
func TestSeedSourceChangedUnread(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	const bs = 16 << 10
	src := writeRandomFile(t, dir, "data.bin", 16*bs, 7)
	seed := newTestPeer(t)
	tk, err := seed.Seed(ctx, src, WithBlockSize(bs), WithSourceCheck(0))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(src, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 15*bs), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(src, later, later); err != nil {
		t.Fatal(err)
	}
	if held, _, _ := seed.Held(tk.Root); held != 16 {
		t.Fatalf("held %d before any read: the periodic check is off", held)
	}
	fetcher := newTestPeer(t)
	var evs eventLog
	sum, err := fetcher.Fetch(ctx, tk, filepath.Join(dir, "out"), WithNoPeerTimeout(time.Second), WithFetchEvents(evs.add))
	if !errors.Is(err, ErrNoPeers) || !strings.Contains(err.Error(), "15 of 16 blocks missing (blocks 0-14)") {
		t.Fatalf("fetch error %v; want ErrNoPeers naming blocks 0-14", err)
	}
	if sum.Fetched != 1 || sum.Rejected != 0 || len(evs.all()) != 0 || len(sum.Peers) != 1 || sum.Peers[0].Dropped != "" {
		t.Fatalf("summary %+v, events %v: want the 1 block served, nothing corrupt, the seed kept", sum, evs.all())
	}
	if held, _, _ := seed.Held(tk.Root); held != 1 {
		t.Fatalf("seed holds %d blocks after the reads, want 1", held)
	}
}

// TestSeedProgress: WithSeedProgress hears the bytes read as Seed chunks,
// never more than the total, ending at the total.
func TestSeedProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const size = 3<<20 + 5
	src := writeRandomFile(t, t.TempDir(), "data.bin", size, 9)
	var last, calls int64
	_, err := newTestPeer(t).Seed(ctx, src, WithBlockSize(64<<10), WithSeedProgress(func(done, total int64) {
		if total != size || done < last || done > total {
			t.Errorf("progress %d of %d after %d, want up to %d", done, total, last, size)
		}
		last = done
		calls++
	}))
	if err != nil {
		t.Fatal(err)
	}
	if last != size || calls < 2 {
		t.Errorf("progress ended at %d after %d calls, want %d and a call per read", last, calls, size)
	}
}

// TestSeedNamesLeftOut: Seed warns, naming each, of the entries a folder's
// content leaves out (a link whose target is absolute, one that leaves the
// tree), and keeps a link that stays inside.
func TestSeedNamesLeftOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRandomFile(t, dir, "a.bin", 1000, 1)
	for link, target := range map[string]string{"abs": "/etc/hostname", "up": "../x", "in": "a.bin"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncBuffer
	seed := newTestPeer(t, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if _, err := seed.Seed(context.Background(), dir, WithContentDefined(chunker.Chunking{})); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, name := range []string{"abs", "up"} {
		if !strings.Contains(out, filepath.Join(dir, name)) {
			t.Errorf("no warning names %s: %q", name, out)
		}
	}
	if strings.Contains(out, filepath.Join(dir, "in")+" ") {
		t.Errorf("a link inside the tree was left out: %q", out)
	}
}
