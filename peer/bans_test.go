package peer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/serve"
)

// TestResumeKeepsBans: a fetch that banned a liar and was interrupted is
// resumed by a new peer on the same output: it does not ask the liar for a
// block again (no corrupt block, no ban event) and completes from the honest
// seed. With its ban file removed, the same resume takes the liar's corrupt
// blocks again: the file is what keeps the liar out.
func TestResumeKeepsBans(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(map[bool]string{true: "kept", false: "removed"}[keep], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			liar, tk, src, out, asked := fetchUntilBan(ctx, t)
			banFile := filepath.Join(out+".reconcile", BanFile)
			b, err := os.ReadFile(banFile)
			if err != nil || !strings.Contains(string(b), liar.ID().String()) {
				t.Fatalf("ban file %s: %q, %v; want it to name the liar", banFile, b, err)
			}
			if !keep {
				os.Remove(banFile)
			}
			before := asked.total()

			second := newTestPeer(t)
			var evs2 eventLog
			if _, err := second.Fetch(ctx, tk, out, WithOutFile(), WithFetchEvents(evs2.add)); err != nil {
				t.Fatal(err)
			}
			sameFile(t, src, out)
			if _, err := os.Stat(banFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the ban file of a complete fetch: %v, want it removed", err)
			}
			again := asked.total() - before
			corrupt, still := 0, 0
			for _, ev := range evs2.all() {
				switch ev.Kind {
				case FetchCorruptBlock:
					corrupt++
				case FetchPeerStillBanned:
					still++
					if ev.Peer != liar.ID() || time.Until(ev.Until) < serve.BanFor-time.Minute || time.Until(ev.Until) > serve.BanFor {
						t.Errorf("still banned: %+v, want the liar for about %v", ev, serve.BanFor)
					}
				}
			}
			if want := map[bool]int{true: 1, false: 0}[keep]; still != want {
				t.Errorf("%d peer-still-banned events, want %d", still, want)
			}
			if keep && (again != 0 || corrupt != 0 || !second.guard.IsBanned(liar.ID())) {
				t.Errorf("resumed with the bans: the liar was asked for %d blocks, %d corrupt came, banned %v; want none and banned", again, corrupt, second.guard.IsBanned(liar.ID()))
			}
			if !keep && corrupt == 0 {
				t.Errorf("resumed without the ban file: no corrupt block came (liar asked %d times); the test proves nothing", again)
			}
		})
	}
}

// TestResumeOnlyBannedPeer: a resumed fetch whose only peer an earlier run
// banned ends with ErrNoPeers saying so, and naming the ban file.
func TestResumeOnlyBannedPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	liar, tk, _, out, _ := fetchUntilBan(ctx, t)
	_, err := newTestPeer(t).Fetch(ctx, Ticket{Root: tk.Root, Peers: []AddrInfo{liar.AddrInfo()}}, out, WithOutFile(), WithNoPeerTimeout(time.Second))
	if !errors.Is(err, ErrNoPeers) || !strings.Contains(err.Error(), "1 peer banned for misbehaving") || !strings.Contains(err.Error(), BanFile) {
		t.Fatalf("resumed with the liar alone: %v; want ErrNoPeers naming the ban and its file", err)
	}
	t.Log(err)
}

// fetchUntilBan seeds a 256 KiB file of 16 KiB blocks from a slow honest
// seed (64 KiB/s, 4 s for the file) and from a liar that sends every block
// zeroed, and fetches it into out (a single file) until the fetch bans the
// liar, where it is interrupted, long before it could complete. The ticket
// names the liar first; asked logs what the liar was asked for.
func fetchUntilBan(ctx context.Context, t *testing.T) (liar *Peer, tk Ticket, src, out string, asked *askLog) {
	t.Helper()
	dir := t.TempDir()
	const bs = 16 << 10
	seed, tk, src := seedFile(t, dir, 256<<10, bs, WithServeRate(64<<10))
	liar = newTestPeer(t)
	if _, err := liar.Seed(ctx, src, WithBlockSize(bs)); err != nil {
		t.Fatal(err)
	}
	m := seed.lib.Lookup(tk.Root[:]).Man
	asked = serveFromFile(liar, make([]byte, m.TotalSize()), bs, m.BlockCount(), func(i int, b []byte) []byte { return b })
	tk.Peers = append([]AddrInfo{liar.AddrInfo()}, tk.Peers...)
	out = filepath.Join(dir, "out")
	first := newTestPeer(t)
	fctx, stop := context.WithCancel(ctx)
	_, err := first.Fetch(fctx, tk, out, WithOutFile(), WithFetchEvents(func(ev FetchEvent) {
		if ev.Kind == FetchPeerBanned {
			stop()
		}
	}))
	stop()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first fetch: %v, want it interrupted after the ban", err)
	}
	first.Close()
	// The liar may still be reading wants the first fetch sent before it
	// stopped (a loaded machine): let its log settle, so that what it logs
	// from now on is what the next fetch asks of it.
	for n := -1; n != asked.total(); {
		n = asked.total()
		time.Sleep(100 * time.Millisecond)
	}
	return liar, tk, src, out, asked
}

// total is the number of block requests logged.
func (a *askLog) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, k := range a.n {
		n += k
	}
	return n
}
