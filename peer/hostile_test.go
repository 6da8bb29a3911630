package peer

import (
	"bufio"
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer/admit"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestSilentReconcileStreams: one peer holding silent reconcile streams (a
// hello and nothing more) takes no reconcile slot, so a legitimate fetch of
// the same seed goes through at once (it used to wait for the 8 slots to time
// out and fail with "no peer reached has them").
func TestSilentReconcileStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, src := seedFile(t, dir, 512<<10, 16<<10)
	evil := connectedPeer(ctx, t, seed)
	for range DefaultLimits.StreamsPerPeer {
		openRecon(ctx, t, evil, seed, tk.Root, false)
	}
	out := filepath.Join(dir, "out")
	start := time.Now()
	if _, err := newTestPeer(t).Fetch(ctx, tk, out, WithNoPeerTimeout(5*time.Second)); err != nil {
		t.Fatalf("fetch beside %d silent reconcile streams: %v", DefaultLimits.StreamsPerPeer, err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
	t.Logf("fetched in %v beside the silent streams", time.Since(start))
}

// TestReconcileSharePerPeer: a peer holds at most Limits.ReconcilesPerPeer
// reconcile slots; a further session of it is told "busy" (ErrBusy) at once,
// and the observer hears of it (EventBusy), while another peer still gets a
// slot.
func TestReconcileSharePerPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	busy := make(chan ServeEvent, 8)
	seed, tk, _ := seedFile(t, t.TempDir(), 256<<10, 1<<10, WithLimits(Limits{ReconcilesPerPeer: 2}),
		WithServeObserver(func(ev ServeEvent) {
			if ev.Kind == EventBusy {
				select {
				case busy <- ev:
				default: // never hold up the serving goroutine
				}
			}
		}))
	n := seed.lib.Lookup(tk.Root[:]).Man.BlockCount()
	u, err := reconcile.NewUniverse(n)
	if err != nil {
		t.Fatal(err)
	}
	// IBLT sessions that stop after the first cells hold their slot: the
	// server asks for more cells and waits.
	open := func(p *Peer) (reconcile.Message, error) {
		s, err := reconcile.NewSession(7, reconcile.Config{Method: reconcile.IBLT, OneWay: true}, u, reconcile.NewSet(n), nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		r := openRecon(ctx, t, p, seed, tk.Root, false)
		for _, m := range s.Ready() {
			r.send(m)
		}
		return r.recv()
	}
	evil := connectedPeer(ctx, t, seed)
	for i := range 2 {
		m, err := open(evil)
		if err != nil || m.Type != reconcile.MsgMore {
			t.Fatalf("session %d: %v %v, want a request for more cells", i, m.Type, err)
		}
	}
	if _, err := open(evil); !errors.Is(err, ErrBusy) {
		t.Fatalf("third session of one peer: %v, want ErrBusy", err)
	}
	select {
	case ev := <-busy:
		if ev.Peer != evil.ID() || ev.Root != tk.Root || ev.Kind.String() != "busy" {
			t.Fatalf("busy event %+v, want one for %s, root %s", ev, evil.ID(), tk.Root)
		}
	default:
		t.Fatal("no EventBusy for the session turned away")
	}
	other := newTestPeer(t)
	if err := other.Host().Connect(ctx, seed.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if m, err := open(other); err != nil || m.Type != reconcile.MsgMore {
		t.Fatalf("another peer's session: %v %v, want a slot", m.Type, err)
	}
}

// TestManifestRetried: a seed whose first manifest answers are reset is asked
// again, and the fetch completes (one reset used to fail the whole fetch).
func TestManifestRetried(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, src := seedFile(t, dir, 64<<10, 16<<10)
	serve := seed.srv.Handler(seed.srv.ServeManifest)
	var resets atomic.Int32
	seed.Host().SetStreamHandler(ProtoManifest, func(s network.Stream) {
		if resets.Add(1) <= 2 {
			s.Reset()
			return
		}
		serve(s)
	})
	out := filepath.Join(dir, "out")
	if _, err := newTestPeer(t).Fetch(ctx, tk, out); err != nil {
		t.Fatalf("fetch after %d reset manifest requests: %v", resets.Load()-1, err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
	if resets.Load() != 3 {
		t.Fatalf("%d manifest requests, want 3", resets.Load())
	}
}

// TestRepeatedBlockBounded: a peer that asks for the same block again and
// again is sent it 1+maxRepeats times in the window, is told "missing"
// after that, and is banned once its abuse score reaches admit.BanScore; another
// peer still fetches.
func TestRepeatedBlockBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, src := seedFile(t, dir, 64<<10, 16<<10)
	evil := connectedPeer(ctx, t, seed)
	cs, err := evil.nd.Request(ctx, seed.ID(), ProtoBlocks, tk.Root, false)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Reset()
	sent, missing := 0, 0
	for range 2 * admit.BanScore / admit.StrikeRepeat {
		if err := cs.Send(wire.AppendWant(nil, []int{0})); err != nil {
			break
		}
		if err := cs.Flush(); err != nil {
			break
		}
		f, err := cs.Next(1 << 20)
		if err != nil {
			break // reset: banned
		}
		_, data, ok, err := wire.DecodeBlock(f, 4)
		if err != nil {
			t.Fatal(err)
		}
		if ok && len(data) > 0 {
			sent++
		} else {
			missing++
		}
	}
	if sent != 1+admit.MaxRepeats {
		t.Errorf("block 0 sent %d times, want %d", sent, 1+admit.MaxRepeats)
	}
	if want := admit.BanScore / admit.StrikeRepeat; missing < want || missing > want+1 {
		t.Errorf("%d answers of missing before the ban, want about %d", missing, want)
	}
	if !seed.guard.IsBanned(evil.ID()) {
		t.Errorf("the peer asking again and again is not banned")
	}
	out := filepath.Join(dir, "out")
	if _, err := newTestPeer(t).Fetch(ctx, tk, out); err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
}

// TestMalformedBanned: a peer that keeps sending malformed frames is banned
// after ceil(admit.BanScore/admit.StrikeMalformed) of them.
func TestMalformedBanned(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seed, tk, _ := seedFile(t, t.TempDir(), 64<<10, 16<<10)
	evil := connectedPeer(ctx, t, seed)
	n := (admit.BanScore + admit.StrikeMalformed - 1) / admit.StrikeMalformed
	for i := range n {
		if seed.guard.IsBanned(evil.ID()) {
			t.Fatalf("banned after %d malformed frames", i)
		}
		cs, err := evil.nd.Request(ctx, seed.ID(), ProtoBlocks, tk.Root, false)
		if err != nil {
			t.Fatal(err)
		}
		cs.Send([]byte{0xff, 0x01})
		cs.Flush()
		if _, err := cs.Next(1 << 20); err == nil {
			t.Fatalf("frame %d: the malformed want was answered", i)
		}
		cs.Reset()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !seed.guard.IsBanned(evil.ID()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !seed.guard.IsBanned(evil.ID()) {
		t.Fatalf("not banned after %d malformed frames", n)
	}
}

// TestStreamChurnBanned: a peer that opens streams as fast as it can (one
// after the other, as an attacker whose streams a seed resets opens the
// next) is banned once well past serve.StreamBurst, and from then on its streams
// are refused by the host before any protocol is negotiated; a fetch of the
// same seed goes through meanwhile.
func TestStreamChurnBanned(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, src := seedFile(t, dir, 256<<10, 16<<10)
	evil := connectedPeer(ctx, t, seed)
	hello := wire.Hello{Root: tk.Root[:]}.Append(nil)
	for i := 0; i < 4*serve.StreamBurst && !seed.guard.IsBanned(evil.ID()); i++ {
		s, err := evil.Host().NewStream(ctx, seed.ID(), ProtoManifest)
		if err != nil {
			continue // refused once banned
		}
		bw := bufio.NewWriter(s)
		wire.WriteFrame(bw, hello)
		bw.Flush()
		io.Copy(io.Discard, s) // the manifest, or the reset
		s.Reset()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !seed.guard.IsBanned(evil.ID()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !seed.guard.IsBanned(evil.ID()) {
		t.Fatalf("a peer that opened %d streams at once is not banned", 4*serve.StreamBurst)
	}
	if _, err := evil.nd.FetchManifest(ctx, tk.Root, []lpeer.ID{seed.ID()}, nil); err == nil {
		t.Error("a banned peer got the manifest")
	}
	out := filepath.Join(dir, "out")
	if _, err := newTestPeer(t).Fetch(ctx, tk, out); err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
}
