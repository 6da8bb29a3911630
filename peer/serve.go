package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/admit"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/sched"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// serverStream is one inbound request: the stream, its reader and writer and
// the content its hello names.
type serverStream struct {
	s     network.Stream
	fr    *wire.Reader
	bw    *bufio.Writer
	hello wire.Hello
	c     *content
	// u are the units the stream serves: the content's blocks, or with the
	// hello's Coded flag the units it serves beside them.
	u    units
	idle time.Duration
	// clk is the service's clock.
	clk clock.Clock
	// until, when set, ends the request: no read waits past it (a
	// wall-clock deadline, clock.Deadline).
	until time.Time
	// admit, when set, is called with the length of the next frame before
	// its bytes are read (wire.Reader.NextAdmit).
	admit func(n int) error
	// key is the stream's share key (shareKey), worked out when the stream
	// is accepted: formatting the peer id is too dear for every block.
	key string
}

// shareKey returns the share key of the stream's peer: ss.key when set,
// otherwise the function shareKey's.
func (ss *serverStream) shareKey() string {
	if ss.key != "" {
		return ss.key
	}
	return shareKey(ss.s.Conn())
}

// next reads a frame of at most max bytes within the idle deadline (and
// before until, if set).
func (ss *serverStream) next(max int) ([]byte, error) {
	d := clock.Deadline(ss.clk, ss.idle)
	if !ss.until.IsZero() {
		if clock.Passed(ss.until) {
			return nil, fmt.Errorf("peer: request over its time limit: %w", os.ErrDeadlineExceeded)
		}
		if ss.until.Before(d) {
			d = ss.until
		}
	}
	if err := ss.s.SetReadDeadline(d); err != nil {
		return nil, err
	}
	return ss.fr.NextAdmit(max, ss.admit)
}

// send writes one frame within the idle deadline (it is flushed by flush).
func (ss *serverStream) send(parts ...[]byte) error {
	if err := ss.s.SetWriteDeadline(clock.Deadline(ss.clk, ss.idle)); err != nil {
		return err
	}
	return wire.WriteFrame(ss.bw, parts...)
}

// sendRaw writes bytes that are already a whole frame (within the idle
// deadline): in one write to the stream when nothing is buffered before them
// and they are larger than the buffer.
func (ss *serverStream) sendRaw(frame []byte) error {
	if err := ss.s.SetWriteDeadline(clock.Deadline(ss.clk, ss.idle)); err != nil {
		return err
	}
	_, err := ss.bw.Write(frame)
	return err
}

func (ss *serverStream) flush() error {
	if err := ss.s.SetWriteDeadline(clock.Deadline(ss.clk, ss.idle)); err != nil {
		return err
	}
	return ss.bw.Flush()
}

// handler wraps a protocol handler: it reads and checks the hello, finds the
// content and resets the stream on a protocol violation.
func (p *server) handler(serve func(*serverStream) error) network.StreamHandler {
	return func(s network.Stream) {
		untrack, ok := p.guard.track(s)
		if !ok {
			s.Reset()
			return
		}
		if !p.guard.allowStream(s.Conn()) {
			untrack()
			s.Reset()
			p.guard.strike(s.Conn(), strikeStreams, "opens streams faster than it may")
			return
		}
		admitted, err := p.guard.admit(s)
		if err != nil {
			untrack()
			p.log.Debug("stream refused", "peer", s.Conn().RemotePeer(), "protocol", s.Protocol(), "err", err)
			s.Reset()
			return
		}
		untrack = func(untrack func()) func() { return func() { admitted.Release(); untrack() } }(untrack)
		ok = p.goroutine(func() {
			defer untrack()
			ss := &serverStream{s: s, fr: wire.NewReader(s), bw: bufio.NewWriterSize(s, wire.BufSize), idle: p.cfg.streamIdle, clk: p.clk, key: shareKey(s.Conn())}
			err := p.serve(ss, serve)
			remote := s.Conn().RemotePeer()
			switch {
			case err == nil, errors.Is(err, ErrBusy):
				// Answered (a "busy" answer too: the fetcher must read it,
				// and a reset could overtake it and read as a failure).
				s.Close()
			case errors.Is(err, ErrMalformed) || errors.Is(err, ErrFrameTooLarge):
				p.log.Warn("reset stream of misbehaving peer", "peer", remote, "protocol", s.Protocol(), "err", err)
				s.Reset()
				p.guard.strike(s.Conn(), strikeMalformed, err.Error())
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, network.ErrReset) || errors.Is(err, context.Canceled):
				s.Reset()
			default:
				p.log.Debug("stream ended", "peer", remote, "protocol", s.Protocol(), "err", err)
				s.Reset()
				if errors.Is(err, os.ErrDeadlineExceeded) {
					// A stream that stalls (a filter never finished, blocks
					// never read) holds what it was given until its deadline.
					p.guard.strike(s.Conn(), strikeSlow, "stalled: "+err.Error())
				}
			}
		})
		if !ok {
			untrack()
			s.Reset()
		}
	}
}

func (p *server) serve(ss *serverStream, serve func(*serverStream) error) error {
	stop := context.AfterFunc(p.ctx, func() { ss.s.Reset() })
	defer stop()
	// The hello is a few dozen bytes: it arrives within helloTimeout or the
	// stream (and the share of streams it holds) is given up.
	ss.until = clock.Deadline(p.clk, min(helloTimeout, ss.idle))
	f, err := ss.next(helloMax)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.guard.strike(ss.s.Conn(), strikeSlow, "no hello in time")
		}
		return err
	}
	ss.until = time.Time{}
	h, err := wire.DecodeHello(f)
	if err != nil {
		return err
	}
	ss.hello = h
	ss.c = p.lib.lookup(h.Root)
	if ss.c != nil {
		ss.u = blockUnits{ss.c}
		if h.Coded {
			ss.u = ss.c.altSet()
		}
	}
	if ss.u == nil {
		if err := ss.send(wire.AppendError(nil, wire.UnknownRootText)); err != nil {
			return err
		}
		return ss.flush()
	}
	ss.c.noteSwarm(ss.s.Conn().RemotePeer())
	return serve(ss)
}

// serveManifest answers with the header of the stream's units: the
// content's manifest, or what a fetch of the other units needs beside it.
func (p *server) serveManifest(ss *serverStream) error {
	body, err := ss.u.header()
	if err != nil {
		return err
	}
	if err := ss.send([]byte{wire.TypeManifest}, body); err != nil {
		return err
	}
	return ss.flush()
}

// serveReconcile answers one reconciliation session.
func (p *server) serveReconcile(ss *serverStream) error {
	c := ss.c
	r := ss.u.responder()
	// The memory of the session is claimed (a share of ReconcileBytes) when
	// the length of its first message has arrived, before its bytes are
	// buffered, and kept until the session ends.
	var recv *admit.Holding
	defer func() {
		if recv != nil {
			recv.Release()
		}
	}()
	ss.admit = func(n int) error {
		ss.admit = nil
		key := ss.shareKey()
		if !p.guard.allowFilter(key, n) {
			return p.busy(ss, "the peer sends more filter bytes per second than its share")
		}
		ctx, cancel := clock.WithTimeoutCause(p.ctx, p.clk, ss.idle, errors.New("no room for the filter"))
		defer cancel()
		h, err := p.recvMem.Acquire(ctx, key, 3*int64(n), func() { ss.s.Reset() })
		if err != nil {
			return p.busy(ss, err.Error())
		}
		recv = h
		return nil
	}
	// The slot is taken once the first message has arrived and decoded (a
	// silent or slow stream holds none); the held blocks are read then. A
	// watch starts from the gains logged before they are read.
	var held []int
	cursor := 0
	slot := func() ([]int, func(), error) {
		release, err := p.reconcileSlot(ss)
		if err != nil {
			return nil, nil, err
		}
		// A session holds one of the few reconcile slots: however many round
		// trips its method takes (IBLT asks for cells until it decodes), it
		// gets the time a fetcher gives it (4 idle periods), not one per
		// message.
		ss.until = clock.Deadline(p.clk, 4*ss.idle)
		if ss.u.plain() {
			cursor = c.gainCursor()
		}
		held = ss.u.held()
		return held, release, nil
	}
	remote := ss.s.Conn().RemotePeer()
	var trim func([]uint32) []uint32
	var sw *sched.SuperWatch[lpeer.ID]
	if super := c.super; super != nil && ss.u.plain() {
		trim = super.Trim
		if ss.hello.Watch {
			trim = func(found []uint32) []uint32 {
				var first []uint32
				if sw != nil {
					super.Unwatch(sw)
				}
				sw, first = super.Watch(remote, found)
				return first
			}
		}
	}
	// A watch's filter goes into the content's tally of its watchers'
	// filters (the rarity of BlockRarestFilters).
	method, offered, found, theirs, err := p.answerSession(ss, r, slot, trim, ss.hello.Watch && ss.u.plain())
	watching := err == nil && ss.hello.Watch && ss.u.plain() && method != reconcile.IBLT
	if sw != nil && !watching {
		c.super.Unwatch(sw)
	}
	if errors.Is(err, ErrBusy) {
		// Told so; the fetcher retries later.
		return nil
	}
	if err == nil && p.cfg.observer != nil {
		p.observe(ServeEvent{Kind: EventAnswered, Peer: remote, Root: c.man.ID(), Coded: ss.hello.Coded,
			Method: method, Held: held, Offered: offered, Found: found})
	}
	if errors.Is(err, errNotServed) || errors.Is(err, errRejected) {
		// Refused with a reject that says why; not a source of this content.
		return nil
	}
	if err != nil {
		return err
	}
	// A peer that reconciles with us fetches the same content: if we fetch it
	// too, it may hold blocks we lack.
	c.offerSource(remote)
	if !watching {
		return nil
	}
	// The session's memory and time limit end with it; the watch holds the
	// stream only.
	if recv != nil {
		recv.Release()
		recv = nil
	}
	ss.until = time.Time{}
	if sw != nil {
		defer c.super.Unwatch(sw)
	}
	if theirs != nil {
		c.tally.Set(remote, theirs)
		defer c.tally.Drop(remote, theirs)
	}
	return p.serveWatch(ss, cursor, sw)
}

// serveBlocks answers want messages with blocks until the fetcher closes.
func (p *server) serveBlocks(ss *serverStream) error {
	c := ss.c
	limit := ss.u.count()
	wantMax := 1 + binaryMaxVarint + p.cfg.limits.MaxWant*binaryMaxVarint
	var idx []int
	var hdr [1 + binaryMaxVarint]byte
	key := ss.shareKey()
	remote := ss.s.Conn().RemotePeer()
	sends := ss.u.repeats()
	for {
		f, err := ss.next(wantMax)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		idx, err = wire.DecodeWant(idx, f, p.cfg.limits.MaxWant, limit)
		if err != nil {
			return err
		}
		// A super-seed counts the blocks asked for as being sent, so that it
		// offers them to nobody else meanwhile; it keeps its own queue (its
		// offers), so it answers no request busy.
		super := c.super
		if !ss.u.plain() {
			super = nil
		}
		if t := c.pushes(); t != nil && ss.u.plain() && t.firstCopies(idx) {
			// A seed's uplink goes to the first copies down the trees.
			return p.busy(ss, "the seed pushes its first copies")
		}
		if super == nil && !c.queue(key, len(idx), p.clk.Now()) {
			return p.busy(ss, "the upload queue is full")
		}
		if super != nil {
			super.Ask(remote, idx)
		}
		for k, i := range idx {
			if !sends.Allow(key, i, p.clk.Now()) {
				p.guard.strike(ss.s.Conn(), strikeRepeat, "asks for a block again and again")
				err = ss.send(wire.AppendMissing(hdr[:0], i))
			} else if data, ok := ss.u.get(i); !ok {
				err = ss.send(wire.AppendMissing(hdr[:0], i))
			} else if data != nil {
				err = p.sendBlock(ss, hdr[:0], i, data)
			} else {
				err = p.sendStored(ss, hdr[:0], i)
			}
			if super != nil {
				super.Done(remote, idx[k:k+1]) // sent (counted) or not
			} else {
				c.unqueue(key, 1, p.clk.Now())
			}
			if err != nil {
				if super != nil {
					super.Done(remote, idx[k+1:])
				} else {
					c.unqueue(key, len(idx)-k-1, p.clk.Now())
				}
				return err
			}
		}
		if err := ss.flush(); err != nil {
			return err
		}
	}
}

// blockRoom is the room kept in front of a served block's bytes for its
// frame's length and header, so that the frame goes out in one write.
const blockRoom = binaryMaxVarint + 1 + binaryMaxVarint

// doneCtx is a context that is already done: a fairPool acquire with it
// takes what is free now (or evicts what it may) and never waits.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// sendStored reads block i of the stream's store and sends it, as one write
// of the whole frame (on go-libp2p's mock network every write costs a
// latency). The bytes it reads count against Limits.ServeBytes until they
// are sent (written to the stream, or copied into its write buffer).
func (p *server) sendStored(ss *serverStream, hdr []byte, i int) error {
	c := ss.c
	n := c.man.BlockLen(i)
	key, evict := ss.shareKey(), func() { ss.s.Reset() }
	// Room is there most of the time: take it without a timer first.
	held, err := p.serveMem.Acquire(doneCtx, key, int64(n), evict)
	if err != nil {
		ctx, cancel := clock.WithTimeout(p.ctx, p.clk, ss.idle)
		held, err = p.serveMem.Acquire(ctx, key, int64(n), evict)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && p.ctx.Err() == nil {
				err = fmt.Errorf("%w: no room to serve a block within %v", ErrBusy, ss.idle)
			}
			return err
		}
	}
	defer held.Release()
	bp, _ := p.serveBufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer p.serveBufs.Put(bp)
	if cap(*bp) < blockRoom+n {
		*bp = make([]byte, 0, blockRoom+n)
	}
	buf := (*bp)[:blockRoom]
	data, err := c.store.ReadBlock(i, buf[blockRoom:])
	if errors.Is(err, chunker.ErrNotHeld) {
		// The seeded file changed under us (chunker's source checks): the
		// block is no longer ours to give.
		return ss.send(wire.AppendMissing(hdr, i))
	}
	if err != nil {
		return fmt.Errorf("read block %d: %w", i, err)
	}
	frame := frameAround(buf, wire.AppendBlockHeader(hdr, i), len(data))
	if err := p.waitUpload(len(frame)); err != nil {
		return err
	}
	// data lies right after the room (the buffer had the capacity).
	if err := ss.sendRaw(frame); err != nil {
		return err
	}
	p.noteSent(ss, i, len(data))
	return nil
}

// sendBlock sends block i (within the upload rate, if capped).
func (p *server) sendBlock(ss *serverStream, hdr []byte, i int, data []byte) error {
	hdr = wire.AppendBlockHeader(hdr, i)
	if err := p.waitUpload(len(hdr) + len(data)); err != nil {
		return err
	}
	if err := ss.send(hdr, data); err != nil {
		return err
	}
	p.noteSent(ss, i, len(data))
	return nil
}

// uploadBurst is the bucket of the upload limiter for a rate of r bytes a
// second: 50 ms of it (at least a byte). A token bucket lets at most
// burst + r·t bytes through in any t seconds, so an idle seed that starts
// serving sends at most 1 % over r in a 5 s window (5 % in 1 s); a bucket
// of a large block (16 MiB, as before) let a 20 MiB/s seed serve 23-25
// MiB/s over a short fetch.
func uploadBurst(r float64) int {
	return max(1, int(min(r/20, float64(math.MaxInt32))))
}

// waitUpload waits until n more bytes may be sent within the upload rate
// (WithServeRate), taking them from the limiter in pieces of at most its
// bucket. It returns at once when the rate is not capped, and an error when
// the service closes.
func (p *server) waitUpload(n int) error {
	if p.upload == nil {
		return nil
	}
	b := p.upload.Burst()
	for n > 0 {
		k := min(n, b)
		if err := p.upload.WaitN(p.ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// reconcileSlot takes one of the reconcile slots (Limits.Reconciles) for the
// stream's peer, within its share (Limits.ReconcilesPerPeer), waiting at most
// the idle time; the slots are shared fairly among peers (fairPool: a peer
// under its share gets one by resetting the oldest session of the peer that
// holds the most). When it cannot, it tells the peer "busy" and returns an
// error wrapping ErrBusy.
func (p *server) reconcileSlot(ss *serverStream) (func(), error) {
	key := ss.shareKey()
	if isPeerKey(key) && p.slots.UsedBy(key) >= int64(p.cfg.limits.ReconcilesPerPeer) {
		return nil, p.busy(ss, "the peer holds its share of the reconcile slots")
	}
	ctx, cancel := clock.WithTimeoutCause(p.ctx, p.clk, p.cfg.streamIdle, errors.New("every reconcile slot is taken"))
	defer cancel()
	h, err := p.slots.Acquire(ctx, key, 1, func() { ss.s.Reset() })
	if err != nil {
		if p.ctx.Err() != nil {
			return nil, p.ctx.Err()
		}
		return nil, p.busy(ss, err.Error())
	}
	return h.Release, nil
}

// refuse answers ss with an error frame saying why.
func (p *server) refuse(ss *serverStream, why error) error {
	if err := ss.send(wire.AppendError(nil, why.Error())); err != nil {
		return err
	}
	return ss.flush()
}

// busy tells the stream's peer "busy" and returns an error wrapping ErrBusy
// that says why.
func (p *server) busy(ss *serverStream, why string) error {
	if p.cfg.observer != nil {
		ev := ServeEvent{Kind: EventBusy, Peer: ss.s.Conn().RemotePeer(), Coded: ss.hello.Coded}
		if ss.c != nil {
			ev.Root = ss.c.man.ID()
		}
		p.observe(ev)
	}
	if err := ss.send(wire.AppendError(nil, wire.BusyText)); err == nil {
		ss.flush()
	}
	return fmt.Errorf("%w: %s", ErrBusy, why)
}

// noteSent counts unit i of n bytes as sent on ss.
func (p *server) noteSent(ss *serverStream, i, n int) {
	remote := ss.s.Conn().RemotePeer()
	ss.c.noteSent(remote, n)
	if super := ss.c.super; super != nil && ss.u.plain() {
		super.NoteSent(remote, i)
	}
	if p.cfg.observer != nil {
		p.observe(ServeEvent{Kind: EventBlockSent, Peer: remote, Root: ss.c.man.ID(), Coded: ss.hello.Coded, Index: i, Bytes: n})
	}
}

// servePeers lists the other peers known to hold or fetch the content.
func (p *server) servePeers(ss *serverStream) error {
	remote := ss.s.Conn().RemotePeer()
	var infos []lpeer.AddrInfo
	for _, id := range ss.c.swarmPeers() {
		if id == remote || id == p.h.ID() {
			continue
		}
		addrs := p.h.Peerstore().Addrs(id)
		if len(addrs) == 0 {
			continue
		}
		infos = append(infos, lpeer.AddrInfo{ID: id, Addrs: addrs})
		if len(infos) == wire.MaxPeersListed {
			break
		}
	}
	if err := ss.send(wire.AppendPeers(nil, infos)); err != nil {
		return err
	}
	return ss.flush()
}

// binaryMaxVarint is the longest uvarint of an index we accept (uint64).
const binaryMaxVarint = 10
