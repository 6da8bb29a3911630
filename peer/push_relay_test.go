package peer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/swarm"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// TestPushRelay: a peer inside a stripe tree passes a pushed block's
// pieces on to its child as they arrive, before the block's end has come,
// and the last piece only once it holds the block verified: a corrupt
// push never reaches the child whole (the child's stream is reset), so the
// child has no cause to refuse this peer.
func TestPushRelay(t *testing.T) {
	const block = 4 * swarm.RelayPiece
	for _, corrupt := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// a, in the middle, between parent h and child k.
		a, st, root, data := relayPeer(ctx, t, 2*block, block)
		h, k := connectedPeer(ctx, t, a), connectedPeer(ctx, t, a)
		if err := a.Push(root, Stripes{Parents: []lpeer.ID{h.ID()}, Children: [][]lpeer.ID{{k.ID()}}, RepairAfter: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		// k takes a's push stream and reads block 0's frame a piece at a
		// time: the first piece, then the rest.
		firstPiece, whole := make(chan []byte, 1), make(chan []byte, 1)
		k.Host().SetStreamHandler(ProtoPush, func(s network.Stream) {
			defer s.Reset()
			fr := wire.NewReader(s)
			bw := bufio.NewWriter(s)
			if _, err := fr.Next(1 << 10); err != nil { // the hello
				return
			}
			if wire.WriteFrame(bw, wire.AppendHave(nil, nil)) != nil || bw.Flush() != nil {
				return
			}
			n, err := fr.Begin(block + 16)
			if err != nil {
				return
			}
			got := make([]byte, n)
			if fr.ReadFull(got[:swarm.RelayPiece]) != nil {
				return
			}
			firstPiece <- got[:swarm.RelayPiece]
			if fr.ReadFull(got[swarm.RelayPiece:]) != nil {
				close(whole)
				return
			}
			whole <- got
		})
		// h pushes block 0, the first piece, then (once k has it) the rest.
		s, bw := openPush(ctx, t, h, a, root)
		defer s.Reset()
		frame := append(wire.AppendBlockHeader(nil, 0), data[:block]...)
		if corrupt {
			frame[len(frame)-1] ^= 1
		}
		var hdr [10]byte
		bw.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(frame)))])
		bw.Write(frame[:swarm.RelayPiece])
		bw.Flush()
		select {
		case p := <-firstPiece:
			if !bytes.Equal(p, frame[:swarm.RelayPiece]) {
				t.Fatal("the first piece passed on is not the one pushed")
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("corrupt=%v: the child got no piece before the block's end came", corrupt)
		}
		bw.Write(frame[swarm.RelayPiece:])
		bw.Flush()
		select {
		case got, ok := <-whole:
			switch {
			case corrupt && ok:
				t.Fatal("the child got a corrupt block whole")
			case !corrupt && !bytes.Equal(got, frame):
				t.Fatal("the child did not get the block whole")
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("corrupt=%v: the child's stream neither ended nor finished the block", corrupt)
		}
		if st.Has(0) == corrupt {
			t.Errorf("corrupt=%v: a holds block 0: %v", corrupt, st.Has(0))
		}
	}
}

// TestPrivateFollowsReachability: the node takes its host's verdict on its
// reachability (AutoNAT's event, here emitted by hand), which a fetch's
// join carries (wire.Hello.Private).
func TestPrivateFollowsReachability(t *testing.T) {
	p := newTestPeer(t)
	if p.nd.Private() {
		t.Fatal("private before any verdict")
	}
	em, err := p.Host().EventBus().Emitter(new(event.EvtLocalReachabilityChanged), eventbus.Stateful)
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	for _, r := range []network.Reachability{network.ReachabilityPrivate, network.ReachabilityPublic, network.ReachabilityPrivate} {
		if err := em.Emit(event.EvtLocalReachabilityChanged{Reachability: r}); err != nil {
			t.Fatal(err)
		}
		want := r == network.ReachabilityPrivate
		deadline := time.Now().Add(5 * time.Second)
		for p.nd.Private() != want {
			if time.Now().After(deadline) {
				t.Fatalf("after %v: Private() = %v", r, !want)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestPushPiecesHold: the pieces of a block that arrives slowly count as
// pushes, so its stripe stays held while they flow, but for no longer than
// two repair times from the block's start (a parent that trickles a block
// is pulled around).
func TestPushPiecesHold(t *testing.T) {
	const block, repair = 32 * swarm.RelayPiece, 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, _, root, data := relayPeer(ctx, t, block, block)
	h := connectedPeer(ctx, t, a)
	if err := a.Push(root, Stripes{Parents: []lpeer.ID{h.ID()}, RepairAfter: repair}); err != nil {
		t.Fatal(err)
	}
	held := func() bool {
		return swarm.TreesOf(a.lib.Lookup(root[:])).HeldStripes(time.Now(), nil)[0]
	}
	s, bw := openPush(ctx, t, h, a, root)
	defer s.Reset()
	frame := append(wire.AppendBlockHeader(nil, 0), data...)
	var hdr [10]byte
	bw.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(frame)))])
	// A piece every quarter repair time: the stripe stays held past the
	// repair time, then is let go within three of the block's start.
	start := time.Now()
	var heldLate, letGo bool
	for off := 0; off < len(frame)-swarm.RelayPiece; off += swarm.RelayPiece {
		bw.Write(frame[off : off+swarm.RelayPiece])
		bw.Flush()
		time.Sleep(repair / 4)
		since := time.Since(start)
		switch {
		case since > repair*5/4 && since < repair*7/4 && held():
			heldLate = true
		case since > 3*repair && !held():
			letGo = true
		}
	}
	if !heldLate {
		t.Error("the stripe was let go while the block's pieces came, within two repair times of its start")
	}
	if !letGo {
		t.Error("the stripe was still held three repair times after a trickled block's start")
	}
}

// relayPeer returns a new peer serving an empty store of a random file of
// size bytes in blocks of block bytes, the store, the file's root and its
// bytes.
func relayPeer(ctx context.Context, t *testing.T, size, block int) (*Peer, *chunker.Store, chunker.ID, []byte) {
	t.Helper()
	dir := t.TempDir()
	src := writeRandomFile(t, dir, "data.bin", size, uint64(size))
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	m, err := chunker.ChunkPath(ctx, src, block)
	if err != nil {
		t.Fatal(err)
	}
	a := newTestPeer(t)
	st, err := chunker.CreateStore(ctx, filepath.Join(dir, "a"), m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Serve(st); err != nil {
		t.Fatal(err)
	}
	return a, st, m.ID(), data
}

// openPush opens a push stream from h to a for root, sends the hello and
// waits for a's answer; it returns the stream and its writer.
func openPush(ctx context.Context, t *testing.T, h, a *Peer, root chunker.ID) (network.Stream, *bufio.Writer) {
	t.Helper()
	s, bw := openRaw(ctx, t, h, a, ProtoPush, wire.Hello{Root: root[:]}.Append(nil))
	if _, err := wire.NewReader(s).Next(1 << 10); err != nil {
		t.Fatalf("no answer to the hello: %v", err)
	}
	return s, bw
}

// openRaw opens a stream of protocol proto from h to a and writes frames
// to it, flushed; it returns the stream and its writer.
func openRaw(ctx context.Context, t *testing.T, h, a *Peer, proto protocol.ID, frames ...[]byte) (network.Stream, *bufio.Writer) {
	t.Helper()
	s, err := h.Host().NewStream(ctx, a.ID(), proto)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(s)
	for _, f := range frames {
		if err := wire.WriteFrame(bw, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return s, bw
}
