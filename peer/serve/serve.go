package serve

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/admit"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/sched"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// Handler wraps a protocol Handler: it reads and checks the hello, finds the
// content and resets the stream on a protocol violation.
func (p *Server) Handler(serve func(*Stream) error) network.StreamHandler {
	return p.handler(serve, false)
}

// handler is Handler; with anyRoot, serve also gets the streams of contents
// this peer does not serve (the Stream's C is then nil).
func (p *Server) handler(serve func(*Stream) error, anyRoot bool) network.StreamHandler {
	return func(s network.Stream) {
		untrack, ok := p.guard.Track(s)
		if !ok {
			s.Reset()
			return
		}
		if !p.guard.AllowStream(s.Conn()) {
			untrack()
			s.Reset()
			p.guard.Strike(s.Conn(), strikeStreams, "opens streams faster than it may")
			return
		}
		admitted, err := p.guard.Admit(s)
		if err != nil {
			untrack()
			p.log.Debug("stream refused", "peer", s.Conn().RemotePeer(), "protocol", s.Protocol(), "err", err)
			s.Reset()
			return
		}
		untrack = func(untrack func()) func() { return func() { admitted.Release(); untrack() } }(untrack)
		ok = p.goroutine(func() {
			defer untrack()
			ss := NewStream(s, nil, p.cfg.StreamIdle, p.clk)
			ss.key = shareKey(s.Conn())
			err := p.serve(ss, serve, anyRoot)
			remote := s.Conn().RemotePeer()
			switch {
			case err == nil, errors.Is(err, wire.ErrBusy):
				// Answered (a "busy" answer too: the fetcher must read it,
				// and a reset could overtake it and read as a failure).
				s.Close()
			case errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrFrameTooLarge):
				p.log.Warn("reset stream of misbehaving peer", "peer", remote, "protocol", s.Protocol(), "err", err)
				s.Reset()
				p.guard.Strike(s.Conn(), strikeMalformed, err.Error())
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, network.ErrReset) || errors.Is(err, context.Canceled):
				s.Reset()
			default:
				p.log.Debug("stream ended", "peer", remote, "protocol", s.Protocol(), "err", err)
				s.Reset()
				if errors.Is(err, os.ErrDeadlineExceeded) {
					// A stream that stalls (a filter never finished, blocks
					// never read) holds what it was given until its deadline.
					p.guard.Strike(s.Conn(), strikeSlow, "stalled: "+err.Error())
				}
			}
		})
		if !ok {
			untrack()
			s.Reset()
		}
	}
}

func (p *Server) serve(ss *Stream, serve func(*Stream) error, anyRoot bool) error {
	stop := context.AfterFunc(p.ctx, func() { ss.S.Reset() })
	defer stop()
	// The hello is a few dozen bytes: it arrives within helloTimeout or the
	// stream (and the share of streams it holds) is given up.
	ss.until = clock.Deadline(p.clk, min(helloTimeout, ss.idle))
	f, err := ss.Next(HelloMax)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.guard.Strike(ss.S.Conn(), strikeSlow, "no hello in time")
		}
		return err
	}
	ss.until = time.Time{}
	h, err := wire.DecodeHello(f)
	if err != nil {
		return err
	}
	ss.Hello = h
	ss.C = p.lib.Lookup(h.Root)
	if ss.C != nil {
		ss.u = blockUnits{ss.C}
		if h.Coded {
			ss.u = ss.C.AltSet()
		}
	}
	if ss.u == nil && anyRoot {
		ss.C = nil
		return serve(ss)
	}
	if ss.u == nil {
		if err := ss.Send(wire.AppendError(nil, wire.UnknownRootText)); err != nil {
			return err
		}
		return ss.Flush()
	}
	ss.C.noteSwarm(ss.S.Conn().RemotePeer())
	return serve(ss)
}

// ServeManifest answers with the header of the stream's units: the
// content's manifest, or what a fetch of the other units needs beside it.
func (p *Server) ServeManifest(ss *Stream) error {
	body, err := ss.u.Header()
	if err != nil {
		return err
	}
	if err := ss.Send([]byte{wire.TypeManifest}, body); err != nil {
		return err
	}
	return ss.Flush()
}

// ServeReconcile answers one reconciliation session.
func (p *Server) ServeReconcile(ss *Stream) error {
	c := ss.C
	r := ss.u.Responder()
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
		if !p.guard.AllowFilter(key, n) {
			return p.Busy(ss, "the peer sends more filter bytes per second than its share")
		}
		ctx, cancel := clock.WithTimeoutCause(p.ctx, p.clk, ss.idle, errors.New("no room for the filter"))
		defer cancel()
		h, err := p.recvMem.Acquire(ctx, key, 3*int64(n), func() { ss.S.Reset() })
		if err != nil {
			return p.Busy(ss, err.Error())
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
		if ss.u.Plain() {
			cursor = c.gainCursor()
		}
		held = ss.u.Held()
		return held, release, nil
	}
	remote := ss.S.Conn().RemotePeer()
	var trim func([]uint32) []uint32
	var sw *sched.SuperWatch[lpeer.ID]
	if super := c.Super; super != nil && ss.u.Plain() {
		trim = super.Trim
		if ss.Hello.Watch {
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
	method, offered, found, theirs, err := p.answerSession(ss, r, slot, trim, ss.Hello.Watch && ss.u.Plain())
	watching := err == nil && ss.Hello.Watch && ss.u.Plain() && method != reconcile.IBLT
	if sw != nil && !watching {
		c.Super.Unwatch(sw)
	}
	if errors.Is(err, wire.ErrBusy) {
		// Told so; the fetcher retries later.
		return nil
	}
	if err == nil && p.cfg.Observer != nil {
		p.Observe(Event{Kind: EventAnswered, Peer: remote, Root: c.Man.ID(), Coded: ss.Hello.Coded,
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
	c.OfferSource(remote)
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
		defer c.Super.Unwatch(sw)
	}
	if theirs != nil {
		c.Tally.Set(remote, theirs)
		defer c.Tally.Drop(remote, theirs)
	}
	return p.serveWatch(ss, cursor, sw)
}

// ServeBlocks answers want messages with blocks until the fetcher closes.
func (p *Server) ServeBlocks(ss *Stream) error {
	c := ss.C
	limit := ss.u.Count()
	wantMax := 1 + MaxVarint + p.cfg.Limits.MaxWant*MaxVarint
	var idx []int
	var hdr [1 + MaxVarint]byte
	key := ss.shareKey()
	remote := ss.S.Conn().RemotePeer()
	sends := ss.u.Repeats()
	for {
		f, err := ss.Next(wantMax)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		idx, err = wire.DecodeWant(idx, f, p.cfg.Limits.MaxWant, limit)
		if err != nil {
			return err
		}
		// A super-seed counts the blocks asked for as being sent, so that it
		// offers them to nobody else meanwhile; it keeps its own queue (its
		// offers), so it answers no request busy.
		super := c.Super
		if !ss.u.Plain() {
			super = nil
		}
		if t := c.Pushes(); t != nil && ss.u.Plain() && t.FirstCopies(idx) {
			// A seed's uplink goes to the first copies down the trees.
			return p.Busy(ss, "the seed pushes its first copies")
		}
		if super == nil && !c.queue(key, len(idx), p.clk.Now()) {
			return p.Busy(ss, "the upload queue is full")
		}
		if super != nil {
			super.Ask(remote, idx)
		}
		for k, i := range idx {
			if !sends.Allow(key, i, p.clk.Now()) {
				p.guard.Strike(ss.S.Conn(), strikeRepeat, "asks for a block again and again")
				err = ss.Send(wire.AppendMissing(hdr[:0], i))
			} else if data, ok := ss.u.Get(i); !ok {
				err = ss.Send(wire.AppendMissing(hdr[:0], i))
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
		if err := ss.Flush(); err != nil {
			return err
		}
	}
}

// BlockRoom is the room kept in front of a served block's bytes for its
// frame's length and header, so that the frame goes out in one write.
const BlockRoom = MaxVarint + 1 + MaxVarint

// doneCtx is a context that is already done: a fairPool acquire with it
// takes what is free now (or evicts what it may) and never waits.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// holdServeBytes takes n bytes of Limits.ServeBytes for the stream's peer,
// within its fair share, waiting at most the idle time (wire.ErrBusy then).
func (p *Server) holdServeBytes(ss *Stream, n int) (*admit.Holding, error) {
	key, evict := ss.shareKey(), func() { ss.S.Reset() }
	// Room is there most of the time: take it without a timer first.
	held, err := p.serveMem.Acquire(doneCtx, key, int64(n), evict)
	if err == nil {
		return held, nil
	}
	ctx, cancel := clock.WithTimeout(p.ctx, p.clk, ss.idle)
	defer cancel()
	held, err = p.serveMem.Acquire(ctx, key, int64(n), evict)
	if errors.Is(err, context.DeadlineExceeded) && p.ctx.Err() == nil {
		err = fmt.Errorf("%w: no room to serve within %v", wire.ErrBusy, ss.idle)
	}
	return held, err
}

// sendStored reads block i of the stream's store and sends it, as one write
// of the whole frame (on go-libp2p's mock network every write costs a
// latency). The bytes it reads count against Limits.ServeBytes until they
// are sent (written to the stream, or copied into its write buffer).
func (p *Server) sendStored(ss *Stream, hdr []byte, i int) error {
	c := ss.C
	n := c.Man.BlockLen(i)
	held, err := p.holdServeBytes(ss, n)
	if err != nil {
		return err
	}
	defer held.Release()
	bp, _ := p.serveBufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer p.serveBufs.Put(bp)
	if cap(*bp) < BlockRoom+n {
		*bp = make([]byte, 0, BlockRoom+n)
	}
	buf := (*bp)[:BlockRoom]
	data, err := c.Store.ReadBlock(i, buf[BlockRoom:])
	if errors.Is(err, chunker.ErrNotHeld) {
		// The seeded file changed under us (chunker's source checks): the
		// block is no longer ours to give.
		return ss.Send(wire.AppendMissing(hdr, i))
	}
	if err != nil {
		return fmt.Errorf("read block %d: %w", i, err)
	}
	frame := FrameAround(buf, wire.AppendBlockHeader(hdr, i), len(data))
	if err := p.WaitUpload(len(frame)); err != nil {
		return err
	}
	// data lies right after the room (the buffer had the capacity).
	if err := ss.sendRaw(frame); err != nil {
		return err
	}
	p.NoteSent(ss, i, len(data))
	return nil
}

// sendBlock sends block i (within the upload rate, if capped).
func (p *Server) sendBlock(ss *Stream, hdr []byte, i int, data []byte) error {
	hdr = wire.AppendBlockHeader(hdr, i)
	if err := p.WaitUpload(len(hdr) + len(data)); err != nil {
		return err
	}
	if err := ss.Send(hdr, data); err != nil {
		return err
	}
	p.NoteSent(ss, i, len(data))
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

// WaitUpload waits until n more bytes may be sent within the upload rate
// (WithServeRate), taking them from the limiter in pieces of at most its
// bucket. It returns at once when the rate is not capped, and an error when
// the service closes.
func (p *Server) WaitUpload(n int) error {
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
// error wrapping wire.ErrBusy.
func (p *Server) reconcileSlot(ss *Stream) (func(), error) {
	key := ss.shareKey()
	if isPeerKey(key) && p.slots.UsedBy(key) >= int64(p.cfg.Limits.ReconcilesPerPeer) {
		return nil, p.Busy(ss, "the peer holds its share of the reconcile slots")
	}
	ctx, cancel := clock.WithTimeoutCause(p.ctx, p.clk, p.cfg.StreamIdle, errors.New("every reconcile slot is taken"))
	defer cancel()
	h, err := p.slots.Acquire(ctx, key, 1, func() { ss.S.Reset() })
	if err != nil {
		if p.ctx.Err() != nil {
			return nil, p.ctx.Err()
		}
		return nil, p.Busy(ss, err.Error())
	}
	return h.Release, nil
}

// Refuse answers ss with an error frame saying why.
func (p *Server) Refuse(ss *Stream, why error) error {
	if err := ss.Send(wire.AppendError(nil, why.Error())); err != nil {
		return err
	}
	return ss.Flush()
}

// Busy tells the stream's peer "Busy" and returns an error wrapping wire.ErrBusy
// that says why.
func (p *Server) Busy(ss *Stream, why string) error {
	if p.cfg.Observer != nil {
		ev := Event{Kind: EventBusy, Peer: ss.S.Conn().RemotePeer(), Coded: ss.Hello.Coded}
		if ss.C != nil {
			ev.Root = ss.C.Man.ID()
		}
		p.Observe(ev)
	}
	if err := ss.Send(wire.AppendError(nil, wire.BusyText)); err == nil {
		ss.Flush()
	}
	return fmt.Errorf("%w: %s", wire.ErrBusy, why)
}

// NoteSent counts unit i of n bytes as sent on ss.
func (p *Server) NoteSent(ss *Stream, i, n int) {
	remote := ss.S.Conn().RemotePeer()
	ss.C.NoteSent(remote, n)
	if super := ss.C.Super; super != nil && ss.u.Plain() {
		super.NoteSent(remote, i)
	}
	if p.cfg.Observer != nil {
		p.Observe(Event{Kind: EventBlockSent, Peer: remote, Root: ss.C.Man.ID(), Coded: ss.Hello.Coded, Index: i, Bytes: n})
	}
}

// ServePeers lists the other peers known to hold or fetch the content.
func (p *Server) ServePeers(ss *Stream) error {
	remote := ss.S.Conn().RemotePeer()
	var infos []lpeer.AddrInfo
	for _, id := range ss.C.swarmPeers() {
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
	if err := ss.Send(wire.AppendPeers(nil, infos)); err != nil {
		return err
	}
	return ss.Flush()
}

// MaxVarint is the longest uvarint of an index we accept (uint64).
const MaxVarint = 10

// FrameAround writes the length prefix and header hdr of a frame into the
// blockRoom bytes of b in front of the n bytes of data that follow them,
// and returns the whole frame, in one slice for one write.
func FrameAround(b, hdr []byte, n int) []byte {
	var lp [MaxVarint]byte
	l := binary.PutUvarint(lp[:], uint64(len(hdr)+n))
	start := BlockRoom - len(hdr) - l
	copy(b[start:], lp[:l])
	copy(b[start+l:], hdr)
	return b[start : BlockRoom+n]
}

// Server answers the requests of remote peers: the stream handlers of the
// service's protocols (manifest, reconcile, blocks, peers, push, adopt),
// the watches, and the serve budget they share (reconcile slots, upload
// rate, read buffers). Its admission of strangers is the guard's.
type Server struct {
	h         host.Host
	cfg       Config
	log       *slog.Logger
	clk       clock.Clock
	ctx       context.Context
	goroutine func(func()) bool
	lib       *Library
	guard     *Guard

	// slots are the reconciliations answered at once (Limits.Reconciles),
	// shared among peers.
	slots *admit.FairPool
	// upload caps the rate of served block frames (WithServeRate), over
	// every stream and push; nil means no cap. Its bucket holds
	// uploadBurst: waitUpload takes a larger frame in pieces.
	upload *rate.Limiter
	// serveMem shares the bytes of blocks read for serving held at once
	// (Limits.ServeBytes) among peers; serveBufs recycles those buffers.
	serveMem  *admit.FairPool
	serveBufs sync.Pool
	// recvMem shares the memory of the reconciliation sessions answered at
	// once (Limits.ReconcileBytes) among peers.
	recvMem *admit.FairPool
	// offers rate-limits the offers of manifests and lists the views made
	// (offer.go).
	offers offers
	// deltas rate-limits the requests for deltas per peer, and deltaSlot
	// lets one delta be made at a time (delta.go).
	deltas    peerRates
	deltaSlot chan struct{}
}

// NewServer returns the server of a service on h: it answers for the
// contents of lib, admits peers through guard and runs its goroutines with
// goroutine (false once the service is closed) until ctx ends. The caller
// registers its handlers (Handler) and runs Sweeper.
func NewServer(ctx context.Context, h host.Host, cfg Config, lib *Library, guard *Guard, goroutine func(func()) bool) *Server {
	p := &Server{h: h, cfg: cfg, log: cfg.Log, clk: cfg.Clock, ctx: ctx, goroutine: goroutine, lib: lib, guard: guard,
		slots:     admit.NewFairPool(int64(cfg.Limits.Reconciles)),
		serveMem:  admit.NewFairPool(int64(cfg.Limits.ServeBytes)),
		recvMem:   admit.NewFairPool(int64(cfg.Limits.ReconcileBytes)),
		deltaSlot: make(chan struct{}, 1),
	}
	if cfg.ServeRate > 0 {
		b := uploadBurst(cfg.ServeRate)
		p.upload = rate.NewLimiter(rate.Limit(cfg.ServeRate), b)
		// start empty: no initial burst (the limiter keeps real time)
		p.upload.ReserveN(clock.Real().Now(), b)
	}
	return p
}

// ServeBytesHeld returns the bytes of blocks read for serving that are
// held now (Limits.ServeBytes bounds them): none once every stream has
// ended.
func (p *Server) ServeBytesHeld() int64 { return p.serveMem.Used() }
