package peer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/delta"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// updateCase writes v1 (2 MiB of random bytes) at out and v2 (1 KiB
// inserted in its middle) in a folder of its own, seeds v2 on a new peer
// and returns the seed, v2's ticket and its path.
func updateCase(t *testing.T, ctx context.Context, out string) (*Peer, Ticket, string) {
	t.Helper()
	old, _, v2 := writeVersions(t, 2<<20, 41, make([]byte, 1<<10))
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	seed := newTestPeer(t)
	tk, err := seed.Seed(ctx, v2, WithContentDefined(chunker.Chunking{}))
	if err != nil {
		t.Fatal(err)
	}
	return seed, tk, v2
}

// writeVersions writes v1, size random bytes from seed, and v2, v1 with ins
// inserted at 1 MiB, in a folder of their own, and returns v1's bytes and
// both paths.
func writeVersions(t *testing.T, size int, seed uint64, ins []byte) (old []byte, v1, v2 string) {
	t.Helper()
	dir := t.TempDir()
	v1 = writeRandomFile(t, dir, "v1.bin", size, seed)
	old, err := os.ReadFile(v1)
	if err != nil {
		t.Fatal(err)
	}
	v2 = filepath.Join(dir, "v2.bin")
	if err := os.WriteFile(v2, slices.Concat(old[:1<<20], ins, old[1<<20:]), 0o644); err != nil {
		t.Fatal(err)
	}
	return old, v1, v2
}

// TestUpdateDeltas: updating a file after an insertion rebuilds the block it
// fell in from a delta (a few KiB on the wire, not the block), and
// WithoutDeltas fetches that block whole.
func TestUpdateDeltas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wire [2]int64
	for k, opts := range [][]FetchOption{{WithOutFile()}, {WithOutFile(), WithoutDeltas()}} {
		out := filepath.Join(t.TempDir(), "data.bin")
		_, tk, v2 := updateCase(t, ctx, out)
		sum, err := newTestPeer(t).Fetch(ctx, tk, out, opts...)
		if err != nil {
			t.Fatal(err)
		}
		sameFile(t, v2, out)
		t.Logf("deltas %v: %d reused, %d rebuilt (%d bytes), %d fetched, %d bytes received", k == 0, sum.ReusedBlocks, sum.DeltaBlocks, sum.DeltaBytes, sum.Fetched, sum.WireBytesReceived)
		if sum.ReusedBlocks+sum.DeltaBlocks+sum.Fetched != sum.Blocks {
			t.Fatalf("reused %d + rebuilt %d + fetched %d of %d blocks", sum.ReusedBlocks, sum.DeltaBlocks, sum.Fetched, sum.Blocks)
		}
		if (k == 0) != (sum.DeltaBlocks > 0) {
			t.Fatalf("%d blocks rebuilt from deltas (deltas on: %v)", sum.DeltaBlocks, k == 0)
		}
		wire[k] = sum.WireBytesReceived
	}
	// The manifest is about 0.6 KiB, the delta about 1 KiB and a signature
	// block; the block an insertion falls in is 56 KiB or more.
	if wire[0] > 8<<10 || wire[1] < wire[0]+48<<10 {
		t.Fatalf("received %d bytes with deltas, %d without", wire[0], wire[1])
	}
}

// TestUpdateLyingDelta: a source whose deltas rebuild wrong bytes costs the
// fetch nothing but those bytes: the blocks fail their check, are fetched
// whole, and the output is v2.
func TestUpdateLyingDelta(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := filepath.Join(t.TempDir(), "data.bin")
	seed, tk, v2 := updateCase(t, ctx, out)
	man := seed.lib.Get(tk.Root).Man
	// Each ask is answered with a literal of the run's length, all zeros.
	seed.Host().SetStreamHandler(wire.ProtoDelta, func(s network.Stream) {
		defer s.Close()
		fr, bw := wire.NewReader(s), bufio.NewWriter(s)
		if _, err := fr.Next(wire.MaxRootLen + 8); err != nil { // the hello
			return
		}
		for {
			f, err := fr.Next(1 << 20)
			if err != nil {
				return
			}
			first, count, _, err := wire.DecodeDeltaAsk(f, man.BlockCount(), 1<<12)
			if err != nil {
				return
			}
			var n int64
			for i := first; i < first+count; i++ {
				n += int64(man.BlockLen(i))
			}
			d := binary.BigEndian.AppendUint32([]byte{wire.TypeDelta, 0x72, 0x73, 0x02, 0x36, 0x43}, uint32(n))
			d = append(append(d, make([]byte, n)...), 0)
			if wire.WriteFrame(bw, d) != nil || bw.Flush() != nil {
				return
			}
		}
	})
	sum, err := newTestPeer(t).Fetch(ctx, tk, out, WithOutFile())
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, v2, out)
	if sum.DeltaBlocks != 0 || sum.Rejected == 0 || sum.Fetched == 0 {
		t.Fatalf("rebuilt %d, rejected %d, fetched %d", sum.DeltaBlocks, sum.Rejected, sum.Fetched)
	}
}

// TestServeDeltaBounds: a source answers good asks with deltas and an ask
// past a request's bytes (MaxDeltaBytes) with a missing frame, resets a stream whose
// signature is not one of ours, and answers "busy" to a peer that asks too
// often, or once more than MaxDeltaSwarm other peers of the content are
// connected to it.
func TestServeDeltaBounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := filepath.Join(t.TempDir(), "data.bin")
	seed, tk, _ := updateCase(t, ctx, out)
	asker := newTestPeer(t)
	if err := asker.Host().Connect(ctx, seed.Host().Peerstore().PeerInfo(seed.ID())); err != nil {
		t.Fatal(err)
	}
	sig, err := delta.Signature(bytes.NewReader(make([]byte, 4096)), 4096)
	if err != nil {
		t.Fatal(err)
	}
	// ask sends the asks and returns the type of each answer (0: the
	// stream ended or was reset instead).
	ask := func(asks ...[]byte) []byte {
		s, err := asker.Host().NewStream(ctx, seed.ID(), wire.ProtoDelta)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Reset()
		bw := bufio.NewWriter(s)
		wire.WriteFrame(bw, wire.Hello{Root: tk.Root[:]}.Append(nil))
		for _, a := range asks {
			wire.WriteFrame(bw, a)
		}
		bw.Flush()
		s.CloseWrite()
		fr := wire.NewReader(s)
		var types []byte
		for range asks {
			f, err := fr.Next(64 << 20)
			if err != nil {
				types = append(types, 0)
				break
			}
			types = append(types, f[0])
		}
		return types
	}
	n := seed.lib.Get(tk.Root).Man.BlockCount()
	good, whole := wire.AppendDeltaAsk(nil, 0, 1, sig), wire.AppendDeltaAsk(nil, 0, n, sig)
	if serve.MaxDeltaBytes != 16*(2<<20) {
		t.Fatalf("MaxDeltaBytes is %d: the asks below expect 32 MiB", serve.MaxDeltaBytes)
	}
	for _, c := range []struct {
		name string
		asks [][]byte
		want []byte
	}{
		{"a good ask, then 16 of the whole content", append([][]byte{good}, slices.Repeat([][]byte{whole}, 16)...),
			append(bytes.Repeat([]byte{wire.TypeDelta}, 16), wire.TypeMissing)},
		{"a signature not of ours", [][]byte{wire.AppendDeltaAsk(nil, 0, 1, sig[:5])}, []byte{0}},
		{"over the rate", [][]byte{good}, []byte{wire.TypeError}},
	} {
		got := ask(c.asks...)
		if c.name == "over the rate" { // the burst is 4 requests
			for range 4 {
				got = ask(c.asks...)
			}
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s: answers %x, want %x", c.name, got, c.want)
		}
	}
	// Two more peers of the content: with the asker, three others for a
	// fourth, which is told "busy" (fetch the blocks from the swarm).
	for range 2 {
		o := newTestPeer(t)
		if err := o.Host().Connect(ctx, seed.Host().Peerstore().PeerInfo(seed.ID())); err != nil {
			t.Fatal(err)
		}
		s, err := o.Host().NewStream(ctx, seed.ID(), wire.ProtoManifest)
		if err != nil {
			t.Fatal(err)
		}
		bw := bufio.NewWriter(s)
		wire.WriteFrame(bw, wire.Hello{Root: tk.Root[:]}.Append(nil))
		bw.Flush()
		if _, err := wire.NewReader(s).Next(1 << 20); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	asker = newTestPeer(t)
	if err := asker.Host().Connect(ctx, seed.Host().Peerstore().PeerInfo(seed.ID())); err != nil {
		t.Fatal(err)
	}
	if got := ask(good); !bytes.Equal(got, []byte{wire.TypeError}) {
		t.Errorf("a source with 3 other peers of the content connected answered %x, want busy (MaxDeltaSwarm %d)", got, serve.MaxDeltaSwarm)
	}
	// The runs and deltas held for serving were all given back.
	deadline := time.Now().Add(5 * time.Second)
	for seed.srv.ServeBytesHeld() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := seed.srv.ServeBytesHeld(); n != 0 {
		t.Errorf("%d bytes of the serve budget still held", n)
	}
}

// TestUpdateManifestDelta: when the older version at the output was fetched
// (its manifest kept), the new version's manifest comes as a delta against
// the older one: the update then receives far less than the manifest, and a
// plain copy of the older version (no manifest kept) receives it whole.
func TestUpdateManifestDelta(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rule := chunker.Chunking{Min: 2 << 10, Normal: 4 << 10, Max: 16 << 10}
	old, v1, v2 := writeVersions(t, 4<<20, 43, []byte("an insertion"))
	seed := newTestPeer(t)
	tk1, err := seed.Seed(ctx, v1, WithContentDefined(rule))
	if err != nil {
		t.Fatal(err)
	}
	tk2, err := seed.Seed(ctx, v2, WithContentDefined(rule))
	if err != nil {
		t.Fatal(err)
	}
	manLen := int64(seed.lib.Get(tk2.Root).Man.EncodedLen())
	var got [2]int64
	for k, fetched := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "data.bin")
		if fetched {
			if _, err := newTestPeer(t).Fetch(ctx, tk1, out, WithOutFile()); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(out, old, 0o644); err != nil {
			t.Fatal(err)
		}
		sum, err := newTestPeer(t).Fetch(ctx, tk2, out, WithOutFile())
		if err != nil {
			t.Fatal(err)
		}
		sameFile(t, v2, out)
		got[k] = sum.WireBytesReceived
		t.Logf("v1 fetched %v: %d bytes received (manifest %d bytes), %d blocks rebuilt from deltas", fetched, got[k], manLen, sum.DeltaBlocks)
	}
	if got[1] > got[0]-manLen*3/4 {
		t.Fatalf("received %d bytes over a fetched v1, %d over a copy: the manifest (%d bytes) came whole", got[1], got[0], manLen)
	}

	// A source whose manifest delta rebuilds something else: the fetch
	// takes the whole manifest instead.
	seed.Host().SetStreamHandler(wire.ProtoManifestDelta, func(s network.Stream) {
		defer s.Close()
		fr, bw := wire.NewReader(s), bufio.NewWriter(s)
		if _, err := fr.Next(wire.MaxRootLen + 8); err != nil {
			return
		}
		if _, err := fr.Next(1 << 20); err != nil {
			return
		}
		lie := binary.BigEndian.AppendUint32([]byte{wire.TypeDelta, 0x72, 0x73, 0x02, 0x36, 0x43}, 100)
		wire.WriteFrame(bw, append(append(lie, make([]byte, 100)...), 0))
		bw.Flush()
	})
	out := filepath.Join(t.TempDir(), "data.bin")
	if _, err := newTestPeer(t).Fetch(ctx, tk1, out, WithOutFile()); err != nil {
		t.Fatal(err)
	}
	if _, err := newTestPeer(t).Fetch(ctx, tk2, out, WithOutFile()); err != nil {
		t.Fatal(err)
	}
	sameFile(t, v2, out)
}

// TestUpdateStalledDeltas: a source that answers each ask for a delta just
// within the stream's idle time holds the update no longer than the bound of
// one request (swarm's deltaWait); the runs it did not answer are fetched
// whole and the output is v2.
func TestUpdateStalledDeltas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	v1 := writeRandomFile(t, dir, "v1.bin", 4<<20, 43)
	b, err := os.ReadFile(v1)
	if err != nil {
		t.Fatal(err)
	}
	const edits = 20
	for k := range edits { // 100 bytes overwritten every 200 KiB: about one run each
		copy(b[(k+1)*200<<10:], bytes.Repeat([]byte{byte(k)}, 100))
	}
	v2 := filepath.Join(dir, "v2.bin")
	if err := os.WriteFile(v2, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "data.bin")
	if err := os.Link(v1, out); err != nil {
		t.Fatal(err)
	}
	seed := newTestPeer(t)
	tk, err := seed.Seed(ctx, v2, WithContentDefined(chunker.Chunking{}))
	if err != nil {
		t.Fatal(err)
	}
	const idle = time.Second
	var asked, answered atomic.Int32
	seed.Host().SetStreamHandler(wire.ProtoDelta, func(s network.Stream) {
		defer s.Close()
		fr, bw := wire.NewReader(s), bufio.NewWriter(s)
		if _, err := fr.Next(wire.MaxRootLen + 8); err != nil { // the hello
			return
		}
		var firsts []int
		for {
			f, err := fr.Next(1 << 20)
			if err != nil {
				break // every ask read (or the stream reset)
			}
			first, _, _, err := wire.DecodeDeltaAsk(f, 1<<20, 1<<12)
			if err != nil {
				return
			}
			firsts = append(firsts, first)
		}
		asked.Store(int32(len(firsts)))
		for _, first := range firsts {
			time.Sleep(idle * 9 / 10)
			if wire.WriteFrame(bw, wire.AppendMissing(nil, first)) != nil || bw.Flush() != nil {
				return
			}
			answered.Add(1)
		}
	})
	sum, err := newTestPeer(t, WithStreamIdle(idle)).Fetch(ctx, tk, out, WithOutFile())
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, v2, out)
	if sum.DeltaBlocks != 0 || sum.Fetched == 0 {
		t.Errorf("rebuilt %d, fetched %d: want every run fetched whole", sum.DeltaBlocks, sum.Fetched)
	}
	// About 14 runs (edits that fall in one block or in neighbours share a
	// run) of 2 MiB in all: the bound is about 1 s + 2 s, against 0.9 s an
	// answer.
	t.Logf("the source answered %d of %d asks", answered.Load(), asked.Load())
	if a, n := answered.Load(), asked.Load(); n < edits/2 || a >= n-4 {
		t.Errorf("the source answered %d of %d asks before the fetch moved on; want it cut off well before the end", a, n)
	}
}
