package testnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/reconcile-p2p/reconcile/chunker"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// TestRunTrees pushes a file down stripe trees over the testnet's network
// (transit-stub latencies, access links): every fetcher ends byte-identical
// after no fetcher before T*, the seed uploads one copy and the fetchers
// one copy each, in every case of trees against peers.
func TestRunTrees(t *testing.T) {
	const nodes, size = 12, 1 << 20
	for _, k := range []int{1, 3, 20} {
		cfg := Config{Nodes: nodes, Size: size, BlockSize: 64 << 10, Up: 4e6, Down: 20e6, Trees: k,
			Topology: ts.Small(), Dir: t.TempDir(), Seed: 5, Timeout: time.Minute}
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%d trees: %v", k, err)
		}
		t.Logf("%s: T* %.2f s, median %.2fx p95 %.2fx max %.2fx, seed out at %.2f s", res.Method, res.TStarS,
			res.MedianTStar, res.P95TStar, res.MaxTStar, res.SeedOutS)
		if res.Method != fmt.Sprintf("trees-%d", k) {
			t.Errorf("%d trees: method %q", k, res.Method)
		}
		if res.Completed != nodes-1 || res.Identical != nodes || len(res.Errors) != 0 {
			t.Fatalf("%d trees: %d completed, %d identical, errors %v", k, res.Completed, res.Identical, res.Errors)
		}
		if res.Completions[0] < res.TStarS || res.SeedOutS < res.TStarS-1e-6 {
			t.Errorf("%d trees: first completion %.3f s, seed out %.3f s, T* %.3f s", k, res.Completions[0], res.SeedOutS, res.TStarS)
		}
		if res.SeedSentBytes < size || res.SeedSentBytes > size+size/10 {
			t.Errorf("%d trees: the seed sent %d bytes of a %d-byte file", k, res.SeedSentBytes, size)
		}
		if got := res.BlockBytes; got < (nodes-1)*size || got > (nodes-1)*size*11/10 {
			t.Errorf("%d trees: %d block bytes moved, want about %d", k, got, (nodes-1)*size)
		}
	}
}

// TestTreePushHostile: a child takes pushes only from its parents, and a
// push of a block that is not the file's ends the stream with an error and
// stores nothing.
func TestTreePushHostile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data := make([]byte, 4<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	m, err := chunker.ChunkReader(ctx, "f", 0o644, bytes.NewReader(data), chunker.MinBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	mn := mocknet.New()
	defer mn.Close()
	hosts := make([]*countingHost, 3)
	for i := range hosts {
		h, err := mn.GenPeer()
		if err != nil {
			t.Fatal(err)
		}
		hosts[i] = &countingHost{Host: h, c: &counters{}}
	}
	if err := mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	st, err := chunker.CreateStore(ctx, t.TempDir(), m)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Node 0 seeds, node 1 fetches from it; node 2 is no parent of 1's.
	trees := ts.NewStripeTrees(3, 1, []int{1}, nil, 0, nil, 0)
	tp := newTreePush(ctx, trees, m, 0, hosts, []*chunker.Store{nil, st, nil}, func(int) {})
	frame := func(b, n int, payload []byte) []byte {
		f := binary.BigEndian.AppendUint32(nil, uint32(b))
		return append(binary.BigEndian.AppendUint32(f, uint32(n)), payload...)
	}
	send := func(from int, f []byte) {
		t.Helper()
		s, err := hosts[from].Host.NewStream(ctx, hosts[1].ID(), ProtoPush)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = s.Write(f)
		_ = s.CloseWrite()
		_, _ = s.Read(make([]byte, 1)) // until the child is done with it
		_ = s.Close()
	}
	block0 := data[:m.BlockLen(0)]
	send(2, frame(0, len(block0), block0)) // not a parent
	if st.HeldCount() != 0 || tp.err(1) != nil {
		t.Fatalf("a push from a non-parent: held %d, err %v", st.HeldCount(), tp.err(1))
	}
	bad := bytes.Clone(block0)
	bad[0] ^= 1
	for _, f := range [][]byte{
		frame(0, len(bad), bad),                       // corrupt
		frame(m.BlockCount(), len(block0), block0),    // no such block
		frame(0, 1<<30, nil),                          // a length the block does not have
		frame(0, len(block0), block0[:len(block0)/2]), // cut short
	} {
		tp.errs[1] = nil
		send(0, f)
		if st.HeldCount() != 0 || tp.err(1) == nil {
			t.Fatalf("push %x...: held %d, err %v", f[:8], st.HeldCount(), tp.err(1))
		}
	}
	// The real thing, from the parent: stored.
	tp.errs[1] = nil
	var all []byte
	for b := range m.BlockCount() {
		lo := b * m.BlockSize()
		all = append(all, frame(b, m.BlockLen(b), data[lo:lo+m.BlockLen(b)])...)
	}
	send(0, all)
	if !st.Complete() || tp.err(1) != nil {
		t.Fatalf("pushes from the parent: held %d of %d, err %v", st.HeldCount(), m.BlockCount(), tp.err(1))
	}
}

// FuzzReadPush: a push frame decodes to a block of the file with its
// length, or to an error; never a panic, and never an allocation the
// header merely claims (a length is checked against the manifest first).
func FuzzReadPush(f *testing.F) {
	data := bytes.Repeat([]byte("reconcile"), 1000) // 9000 bytes: blocks of 4096, 4096, 808
	m, err := chunker.ChunkReader(context.Background(), "f", 0o644, bytes.NewReader(data), chunker.MinBlockSize)
	if err != nil {
		f.Fatal(err)
	}
	frame := func(b, n uint32, payload []byte) []byte {
		return append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, b), n), payload...)
	}
	f.Add(frame(2, 808, data[8192:]))
	f.Add(frame(0, 4096, data[:10]))
	f.Add(frame(3, 4096, nil))
	f.Add(frame(1, 1<<31, nil))
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		for {
			b, got, err := readPush(r, m)
			if err != nil {
				if errors.Is(err, io.EOF) && r.Len() != 0 {
					t.Fatalf("EOF with %d bytes left", r.Len())
				}
				return
			}
			if b < 0 || b >= m.BlockCount() || len(got) != m.BlockLen(b) {
				t.Fatalf("block %d of %d bytes", b, len(got))
			}
		}
	})
}
