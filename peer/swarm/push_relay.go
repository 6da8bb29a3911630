package swarm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/internal/sizepool"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// RelayPiece is how much of a pushed block a peer inside a stripe tree
// passes on at a time. Each piece goes to the children of the block's
// stripe as soon as it arrives from the parent (cut-through), so that a
// block crosses each level of a tree in a piece's time, not a whole
// block's: 16 KiB, the block size with which the testnet's trees come
// nearest the fluid bound. Push streams are written a piece at a time too.
const RelayPiece = 16 << 10

// relay is a pushed block on its way through this peer: its frame's bytes
// as they arrive from the parent, passed on to the children of its stripe
// a piece at a time. The last piece goes out only from the block in the
// store, once the store holds it (verified) and the bytes sent before it
// are found equal to it: a child never completes a block that this peer
// has not verified, so a parent's corrupt push costs this peer's children
// a repair, not a ban of this peer.
type relay struct {
	// frame is the block frame (header and data) being read, filled to got.
	frame []byte
	// to holds the children the block was queued for when its first piece
	// came: Trees.Gained does not queue it for them again.
	to []lpeer.ID

	mu    sync.Mutex
	got   int
	ended bool          // read whole, or its stream failed
	more  chan struct{} // closed, and replaced, when got or ended changes
	// stored is closed when the store gains the block (Trees.Gained).
	stored chan struct{}
}

// newRelay returns the relay of frame, of which the first got bytes are
// read.
func newRelay(frame []byte, got int, to []lpeer.ID) *relay {
	return &relay{frame: frame, got: got, to: to, more: make(chan struct{}), stored: make(chan struct{})}
}

// advance notes that the frame is read up to got, or ended (read whole, or
// its stream failed).
func (r *relay) advance(got int, ended bool) {
	r.mu.Lock()
	r.got, r.ended = got, ended
	close(r.more)
	r.more = make(chan struct{})
	r.mu.Unlock()
}

// progress returns how much of the frame is read, whether the reading
// ended, and a channel closed when that changes.
func (r *relay) progress() (got int, ended bool, more <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got, r.ended, r.more
}

// readPush reads the next frame of a parent's push stream into a buffer of
// its size class (package sizepool; the fetch gives it back once stored),
// and reports whether it is relayed: a block that this peer
// passes on (it has children in the block's stripe and lacks the block) is
// read a piece at a time, each piece made available to the children's
// writers (relay) as it arrives.
func (t *Trees) readPush(ss *serve.Stream, from lpeer.ID, limit int) (frame []byte, relayed bool, err error) {
	n, err := ss.R.Begin(limit)
	if err != nil {
		return nil, false, err
	}
	start := t.p.clk.Now()
	buf := sizepool.Get(n)[:n]
	first := min(n, RelayPiece)
	if err := ss.R.ReadFull(buf[:first]); err != nil {
		return nil, false, err
	}
	i := -1 // the block whose pieces come (a frame of more than one)
	if n > first && buf[0] == wire.TypeBlock {
		if v, k := binary.Uvarint(buf[1:first]); k > 0 && v < uint64(t.c.Man.BlockCount()) {
			i = int(v)
		}
	}
	var r *relay
	if i >= 0 {
		r = t.relayFrom(from, i, buf, first)
	}
	for got := first; got < n; {
		step := min(n-got, RelayPiece)
		if err := ss.R.ReadFull(buf[got : got+step]); err != nil {
			if r != nil {
				r.advance(got, true)
			}
			return nil, false, err
		}
		got += step
		if r != nil {
			r.advance(got, got == n)
		}
		if i >= 0 && t.p.clk.Since(start) < pieceHold*t.repair {
			// Each piece counts as a push: the stripe stays held while
			// its parent's bytes flow (readPushes judges the block).
			_ = t.pushedBy(from, i)
		}
	}
	return buf, r != nil, nil
}

// pieceHold is how many repair times from a block frame's start its
// pieces keep the block's stripe held (each counts as a push, see
// readPush): a slow parent's block takes longer than a repair time to
// arrive whole (in the 200-peer testnet with 16 trees of 256 KiB blocks, a
// child's share of its parent's uplink took 1.7 s a block, and counting
// pieces took the median from 2.44x to 1.84x T*, 5,407 blocks twice to
// 398), while a parent that trickles a block holds it for no longer than
// this before the child pulls.
const pieceHold = 2

// relayFrom starts the relay of block i's frame, of which the first got
// bytes are in frame, pushed by from, when this peer passes it on: the
// block is then queued for the children of its stripe at once. It returns
// nil for a block held already, not from the stripe's parent, or that no
// child waits for.
func (t *Trees) relayFrom(from lpeer.ID, i int, frame []byte, got int) *relay {
	if t.c.Store.Has(i) {
		return nil
	}
	if t.pushedBy(from, i) != nil {
		return nil // readPushes finds out why
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stripe(i)
	if t.relays[i] != nil || t.tree.Orphaned(s) || len(t.tree.Children(s)) == 0 {
		return nil
	}
	r := newRelay(frame, got, slices.Clone(t.tree.Children(s)))
	if t.relays == nil {
		t.relays = make(map[int]*relay)
	}
	t.relays[i] = r
	for _, child := range r.to {
		if !t.pushLocked(child, i) {
			break // closed
		}
	}
	return r
}

// relayedLocked notes that the store gained block i, and returns the
// children whose queues took it as it arrived (t.mu held).
func (t *Trees) relayedLocked(i int) []lpeer.ID {
	r := t.relays[i]
	if r == nil {
		return nil
	}
	delete(t.relays, i)
	close(r.stored)
	return r.to
}

// errRelay is a relayed block whose bytes, sent on before it was verified,
// are not the block's.
var errRelay = errors.New("a block passed on while it arrived proved corrupt")

// passOn writes block i's frame to cs from relay r as it arrives, and its
// last piece from the store once the store holds the block and the bytes
// sent match it; gone is closed when the child ends the stream. An error
// ends the stream (errRelay: the parent's bytes were not the block's).
func (t *Trees) passOn(cs *ClientStream, r *relay, i int, gone <-chan struct{}) error {
	p, c := t.p, t.c
	n := len(r.frame)
	var hdr [binary.MaxVarintLen64]byte
	if err := cs.sendRaw(hdr[:binary.PutUvarint(hdr[:], uint64(n))]); err != nil {
		return err
	}
	// Everything but the last piece goes out as it comes.
	tail := n - min(n-1, RelayPiece)
	sent := 0
arriving:
	for sent < tail {
		got, ended, more := r.progress()
		if got = min(got, tail); got > sent {
			if err := p.srv.WaitUpload(got - sent); err != nil {
				return err
			}
			if err := sendPiece(cs, r.frame[sent:got]); err != nil {
				return err
			}
			sent = got
			continue
		}
		if ended {
			break // its stream failed: the rest comes from the store
		}
		select {
		case <-more:
		case <-r.stored:
			break arriving // the rest comes from the store
		case <-gone:
			return errChildGone
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
	// The rest, once the store holds the block. A parent that failed or
	// stalls is repaired (this peer fetches the block); a child's push
	// waits for that at most as long as a late block (lateAfter).
	wait := p.clk.NewTimer(lateAfter * t.repair)
	defer wait.Stop()
	select {
	case <-r.stored:
	case <-wait.Chan():
		return fmt.Errorf("block %d: not stored within %v of its push", i, lateAfter*t.repair)
	case <-gone:
		return errChildGone
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
	var buf []byte
	defer func() { putPushFrame(buf) }()
	frame, err := storedFrame(c, &buf, i)
	if err != nil {
		return err
	}
	m, k := binary.Uvarint(frame)
	if body := frame[k:]; int(m) != n || !bytes.Equal(body[:sent], r.frame[:sent]) {
		return errRelay
	}
	if err := p.srv.WaitUpload(n - sent); err != nil {
		return err
	}
	return sendPieces(cs, frame[k+sent:])
}

// errChildGone is a push stream that the child ended.
var errChildGone = errors.New("the child ended the push stream")

// sendStored writes block i's frame to cs from the store a RelayPiece at
// a time, each piece read as it goes out (chunker.Store.ReadPiece): a
// writer holds a piece, not a block (its writers' whole blocks were a
// third of the 200-peer testnet's heap with 8 joined trees, 418 MiB). A
// read that fails within the frame ends the stream.
func (t *Trees) sendStored(cs *ClientStream, i int) error {
	p, st := t.p, t.c.Store
	n := t.c.Man.BlockLen(i)
	var length [binary.MaxVarintLen64]byte
	var hdr [1 + binary.MaxVarintLen64]byte
	head := wire.AppendBlockHeader(hdr[:0], i)
	if err := cs.sendRaw(length[:binary.PutUvarint(length[:], uint64(len(head)+n))]); err != nil {
		return err
	}
	if err := cs.sendRaw(head); err != nil {
		return err
	}
	piece := getPiece()
	defer putPiece(piece)
	for off := 0; off < n; {
		b := (*piece)[:min(n-off, RelayPiece)]
		if err := st.ReadPiece(i, off, b); err != nil {
			return err
		}
		if err := p.srv.WaitUpload(len(b)); err != nil {
			return err
		}
		if err := sendPiece(cs, b); err != nil {
			return err
		}
		off += len(b)
	}
	return nil
}

// pieces pools the RelayPiece buffers of sendStored.
var pieces = sync.Pool{New: func() any { b := make([]byte, RelayPiece); return &b }}

func getPiece() *[]byte  { return pieces.Get().(*[]byte) }
func putPiece(b *[]byte) { pieces.Put(b) }

// sendPieces writes b to cs a RelayPiece at a time, each flushed, so that
// a child inside a tree can pass each piece on as it arrives.
func sendPieces(cs *ClientStream, b []byte) error {
	for len(b) > 0 {
		k := min(len(b), RelayPiece)
		if err := sendPiece(cs, b[:k]); err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}

// sendPiece writes b to cs and flushes it.
func sendPiece(cs *ClientStream, b []byte) error {
	if err := cs.sendRaw(b); err != nil {
		return err
	}
	return cs.Flush()
}
