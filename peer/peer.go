package peer

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// The protocols a peer speaks. Each is one request per stream, except blocks,
// where one stream carries many want and block messages.
const (
	// ProtoManifest answers a root id with the content's manifest.
	ProtoManifest protocol.ID = "/reconcile/1/manifest"
	// ProtoReconcile carries one reconciliation exchange of package reconcile:
	// the fetcher's filter in, the indices of the blocks to offer it out.
	ProtoReconcile protocol.ID = "/reconcile/1/reconcile"
	// ProtoBlocks moves blocks: want messages in, block messages out.
	ProtoBlocks protocol.ID = "/reconcile/1/blocks"
	// ProtoPeers lists other peers that hold or fetch the same content.
	ProtoPeers protocol.ID = "/reconcile/1/peers"
)

var allProtocols = []protocol.ID{ProtoManifest, ProtoReconcile, ProtoBlocks, ProtoPeers}

// helloMax bounds the first frame of a request.
const helloMax = 2 + maxRootLen + 1

// A Peer is one libp2p host that seeds and fetches content. It serves every
// content it seeds or fetches to any peer that asks, until Close.
type Peer struct {
	h       host.Host
	ownHost bool
	cfg     config
	log     *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// reconciles holds a token per reconciliation being answered.
	reconciles chan struct{}
	// upload caps the rate of served blocks; nil means no cap.
	upload *rate.Limiter
	// serveMem bounds the bytes of blocks read for serving held at once over
	// all streams (Limits.ServeBytes); serveBufs recycles those buffers.
	serveMem  *semaphore.Weighted
	serveBufs sync.Pool

	mu       sync.Mutex
	contents map[chunker.ID]*content
	banned   map[lpeer.ID]time.Time // misbehaving peers, until when
	closed   bool
}

// banFor is how long a peer that sent a bad block or a malformed message is
// refused: no stream to it is opened and its streams are reset.
const banFor = 10 * time.Minute

// ban refuses id for banFor and closes its connections.
func (p *Peer) ban(id lpeer.ID) {
	p.mu.Lock()
	if len(p.banned) >= maxSwarm {
		for k, until := range p.banned {
			if time.Now().After(until) {
				delete(p.banned, k)
			}
		}
	}
	p.banned[id] = time.Now().Add(banFor)
	p.mu.Unlock()
	p.h.Network().ClosePeer(id)
}

// isBanned reports whether id is refused.
func (p *Peer) isBanned(id lpeer.ID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	until, ok := p.banned[id]
	return ok && time.Now().Before(until)
}

// New starts a peer: a libp2p host with TCP and QUIC transports, TLS and Noise
// security, yamux, a resource manager that bounds the streams of each of this
// package's protocols, and the handlers of those protocols. It dials a peer's
// TCP addresses before its QUIC ones (QUIC after 250 ms, or at once for a
// peer without TCP addresses): blocks move several times faster over TCP.
func New(ctx context.Context, opts ...Option) (*Peer, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	p := &Peer{cfg: cfg, log: cfg.log, contents: make(map[chunker.ID]*content), banned: make(map[lpeer.ID]time.Time), reconciles: make(chan struct{}, cfg.limits.Reconciles), serveMem: semaphore.NewWeighted(int64(cfg.limits.ServeBytes))}
	p.ctx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if cfg.serveRate > 0 {
		p.upload = rate.NewLimiter(rate.Limit(cfg.serveRate), chunker.MaxBlockSize)
		p.upload.ReserveN(time.Now(), chunker.MaxBlockSize) // start empty: no initial burst
	}
	if cfg.host != nil {
		p.h = cfg.host
	} else {
		h, err := newHost(cfg)
		if err != nil {
			p.cancel()
			return nil, err
		}
		p.h, p.ownHost = h, true
	}
	p.h.SetStreamHandler(ProtoManifest, p.handler(p.serveManifest))
	p.h.SetStreamHandler(ProtoReconcile, p.handler(p.serveReconcile))
	p.h.SetStreamHandler(ProtoBlocks, p.handler(p.serveBlocks))
	p.h.SetStreamHandler(ProtoPeers, p.handler(p.servePeers))
	return p, nil
}

func newHost(cfg config) (host.Host, error) {
	key := cfg.key
	if key == nil && cfg.keyFile != "" {
		k, err := LoadOrCreateKey(cfg.keyFile)
		if err != nil {
			return nil, err
		}
		key = k
	}
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	l := cfg.limits
	for _, proto := range allProtocols {
		limits.AddProtocolLimit(proto,
			rcmgr.BaseLimit{StreamsInbound: l.Streams, StreamsOutbound: l.Streams, Streams: 2 * l.Streams, Memory: 1 << 30},
			rcmgr.BaseLimitIncrease{})
		limits.AddProtocolPeerLimit(proto,
			rcmgr.BaseLimit{StreamsInbound: l.StreamsPerPeer, StreamsOutbound: l.StreamsPerPeer, Streams: 2 * l.StreamsPerPeer, Memory: 256 << 20},
			rcmgr.BaseLimitIncrease{})
	}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits.AutoScale()))
	if err != nil {
		return nil, fmt.Errorf("peer: resource manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.ListenAddrStrings(cfg.listen...),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.Security(libp2ptls.ID, libp2ptls.New),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ResourceManager(rm),
		libp2p.DisableMetrics(),
		libp2p.DisableRelay(),
		libp2p.SwarmOpts(swarm.WithDialRanker(cfg.dialRanker)),
	}
	if key != nil {
		opts = append(opts, libp2p.Identity(key))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		rm.Close()
		return nil, fmt.Errorf("peer: start host: %w", err)
	}
	return h, nil
}

// ID is the peer's libp2p identity.
func (p *Peer) ID() lpeer.ID { return p.h.ID() }

// Host is the underlying libp2p host.
func (p *Peer) Host() host.Host { return p.h }

// AddrInfo is the peer's identity and listen addresses, as put in tickets.
// Unspecified listen addresses (0.0.0.0, ::) are expanded to the interface
// addresses by libp2p.
func (p *Peer) AddrInfo() lpeer.AddrInfo {
	return lpeer.AddrInfo{ID: p.h.ID(), Addrs: p.h.Addrs()}
}

// Addrs returns the peer's full multiaddrs, each ending in /p2p/ID.
func (p *Peer) Addrs() []ma.Multiaddr {
	out, err := lpeer.AddrInfoToP2pAddrs(&lpeer.AddrInfo{ID: p.h.ID(), Addrs: p.h.Addrs()})
	if err != nil {
		return nil
	}
	return out
}

// Connect dials a peer given as a full multiaddr (ending in /p2p/ID).
func (p *Peer) Connect(ctx context.Context, addr ma.Multiaddr) (lpeer.ID, error) {
	ai, err := lpeer.AddrInfoFromP2pAddr(addr)
	if err != nil {
		return "", fmt.Errorf("peer: %s: %w", addr, err)
	}
	if err := p.h.Connect(ctx, *ai); err != nil {
		return "", fmt.Errorf("peer: connect %s: %w", ai.ID, err)
	}
	return ai.ID, nil
}

// Close stops serving, ends running fetches, closes every store and, unless the
// host was given with WithHost, the host.
func (p *Peer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	for _, proto := range allProtocols {
		p.h.RemoveStreamHandler(proto)
	}
	var errs []error
	if p.ownHost {
		errs = append(errs, p.h.Close())
	}
	p.wg.Wait()
	p.mu.Lock()
	for id, c := range p.contents {
		errs = append(errs, c.close())
		delete(p.contents, id)
	}
	p.mu.Unlock()
	return errors.Join(errs...)
}

// goroutine runs fn on the peer's wait group unless the peer is closed.
func (p *Peer) goroutine(fn func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		fn()
	}()
	return true
}

// lookup returns the content with the given root, or nil.
func (p *Peer) lookup(root []byte) *content {
	var id chunker.ID
	if len(root) != len(id) {
		return nil
	}
	copy(id[:], root)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.contents[id]
}

// serverStream is one inbound request: the stream, its reader and writer and
// the content its hello names.
type serverStream struct {
	s     network.Stream
	fr    *frameReader
	bw    *bufio.Writer
	hello hello
	c     *content
	idle  time.Duration
	// until, when set, ends the request: no read waits past it.
	until time.Time
}

// next reads a frame of at most max bytes within the idle deadline (and
// before until, if set).
func (ss *serverStream) next(max int) ([]byte, error) {
	ss.fr.max = max
	d := time.Now().Add(ss.idle)
	if !ss.until.IsZero() {
		if time.Now().After(ss.until) {
			return nil, fmt.Errorf("peer: request over its time limit: %w", os.ErrDeadlineExceeded)
		}
		if ss.until.Before(d) {
			d = ss.until
		}
	}
	if err := ss.s.SetReadDeadline(d); err != nil {
		return nil, err
	}
	return ss.fr.next()
}

// send writes one frame within the idle deadline (it is flushed by flush).
func (ss *serverStream) send(parts ...[]byte) error {
	if err := ss.s.SetWriteDeadline(time.Now().Add(ss.idle)); err != nil {
		return err
	}
	return writeFrame(ss.bw, parts...)
}

// sendRaw writes bytes that are already a whole frame (within the idle
// deadline): in one write to the stream when nothing is buffered before them
// and they are larger than the buffer.
func (ss *serverStream) sendRaw(frame []byte) error {
	if err := ss.s.SetWriteDeadline(time.Now().Add(ss.idle)); err != nil {
		return err
	}
	_, err := ss.bw.Write(frame)
	return err
}

func (ss *serverStream) flush() error {
	if err := ss.s.SetWriteDeadline(time.Now().Add(ss.idle)); err != nil {
		return err
	}
	return ss.bw.Flush()
}

// handler wraps a protocol handler: it reads and checks the hello, finds the
// content and resets the stream on a protocol violation.
func (p *Peer) handler(serve func(*serverStream) error) network.StreamHandler {
	return func(s network.Stream) {
		if p.isBanned(s.Conn().RemotePeer()) {
			s.Reset()
			return
		}
		ok := p.goroutine(func() {
			ss := &serverStream{s: s, fr: newFrameReader(s, helloMax), bw: bufio.NewWriterSize(s, streamBuf), idle: p.cfg.streamIdle}
			err := p.serve(ss, serve)
			remote := s.Conn().RemotePeer()
			switch {
			case err == nil:
				s.Close()
			case errors.Is(err, ErrMalformed) || errors.Is(err, ErrFrameTooLarge):
				p.log.Warn("reset stream of misbehaving peer", "peer", remote, "protocol", s.Protocol(), "err", err)
				s.Reset()
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, network.ErrReset) || errors.Is(err, context.Canceled):
				s.Reset()
			default:
				p.log.Debug("stream ended", "peer", remote, "protocol", s.Protocol(), "err", err)
				s.Reset()
			}
		})
		if !ok {
			s.Reset()
		}
	}
}

func (p *Peer) serve(ss *serverStream, serve func(*serverStream) error) error {
	stop := context.AfterFunc(p.ctx, func() { ss.s.Reset() })
	defer stop()
	f, err := ss.next(helloMax)
	if err != nil {
		return err
	}
	h, err := decodeHello(f)
	if err != nil {
		return err
	}
	ss.hello = h
	ss.c = p.lookup(h.Root)
	if ss.c == nil || (h.Coded && ss.c.coded == nil) {
		if err := ss.send(appendError(nil, unknownRootText)); err != nil {
			return err
		}
		return ss.flush()
	}
	ss.c.noteSwarm(ss.s.Conn().RemotePeer())
	return serve(ss)
}

// serveManifest answers with the content's manifest (or, for a coded hello,
// the list of coded block hashes of the Byers baseline).
func (p *Peer) serveManifest(ss *serverStream) error {
	var body []byte
	if ss.hello.Coded {
		body = ss.c.coded.encodeHashes()
	} else {
		b, err := ss.c.man.MarshalBinary()
		if err != nil {
			return err
		}
		body = b
	}
	if err := ss.send([]byte{msgManifest}, body); err != nil {
		return err
	}
	return ss.flush()
}

// serveReconcile answers one reconciliation session.
func (p *Peer) serveReconcile(ss *serverStream) error {
	select {
	case p.reconciles <- struct{}{}:
		defer func() { <-p.reconciles }()
	case <-time.After(p.cfg.streamIdle):
		return fmt.Errorf("busy: %w", context.DeadlineExceeded)
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
	// A session holds one of the few reconcile slots: however many round
	// trips its method takes (IBLT asks for cells until it decodes), it gets
	// the time a fetcher gives it (4 idle periods), not one per message.
	ss.until = time.Now().Add(4 * ss.idle)
	c := ss.c
	var err error
	if ss.hello.Coded {
		_, err = p.answerSession(ss, c.coded.recon, c.coded.held())
	} else {
		_, err = p.answerSession(ss, c.recon, c.store.Held())
	}
	if errors.Is(err, errNotServed) {
		// Refused with a reject that says why; not a source of this content.
		return nil
	}
	if err != nil {
		return err
	}
	// A peer that reconciles with us fetches the same content: if we fetch it
	// too, it may hold blocks we lack.
	c.offerSource(ss.s.Conn().RemotePeer())
	return nil
}

// serveBlocks answers want messages with blocks until the fetcher closes.
func (p *Peer) serveBlocks(ss *serverStream) error {
	c := ss.c
	limit := c.man.BlockCount()
	if ss.hello.Coded {
		limit = c.coded.count()
	}
	wantMax := 1 + binaryMaxVarint + p.cfg.limits.MaxWant*binaryMaxVarint
	var idx []int
	var hdr [1 + binaryMaxVarint]byte
	for {
		f, err := ss.next(wantMax)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		idx, err = decodeWant(idx, f, p.cfg.limits.MaxWant, limit)
		if err != nil {
			return err
		}
		for _, i := range idx {
			if ss.hello.Coded {
				if data, ok := c.coded.get(i); ok {
					err = p.sendBlock(ss, hdr[:0], i, data)
				} else {
					err = ss.send(appendMissing(hdr[:0], i))
				}
			} else if c.store.Has(i) {
				err = p.sendStored(ss, hdr[:0], i)
			} else {
				err = ss.send(appendMissing(hdr[:0], i))
			}
			if err != nil {
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

// sendStored reads block i of the stream's store and sends it, as one write
// of the whole frame (on go-libp2p's mock network every write costs a
// latency). The bytes it reads count against Limits.ServeBytes until they
// are sent (written to the stream, or copied into its write buffer).
func (p *Peer) sendStored(ss *serverStream, hdr []byte, i int) error {
	c := ss.c
	n := c.man.BlockLen(i)
	budget := int64(min(n, p.cfg.limits.ServeBytes))
	if err := p.serveMem.Acquire(p.ctx, budget); err != nil {
		return err
	}
	defer p.serveMem.Release(budget)
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
	if err != nil {
		return fmt.Errorf("read block %d: %w", i, err)
	}
	hdr = appendBlockHeader(hdr, i)
	var lp [binaryMaxVarint]byte
	l := binary.PutUvarint(lp[:], uint64(len(hdr)+len(data)))
	start := blockRoom - len(hdr) - l
	copy(buf[start:], lp[:l])
	copy(buf[start+l:], hdr)
	if p.upload != nil {
		if err := p.upload.WaitN(p.ctx, len(data)); err != nil {
			return err
		}
	}
	// data lies right after the room (the buffer had the capacity).
	if err := ss.sendRaw(buf[start : blockRoom+len(data)]); err != nil {
		return err
	}
	c.noteSent(ss.s.Conn().RemotePeer(), len(data))
	return nil
}

// sendBlock sends block i (within the upload rate, if capped).
func (p *Peer) sendBlock(ss *serverStream, hdr []byte, i int, data []byte) error {
	if p.upload != nil {
		if err := p.upload.WaitN(p.ctx, len(data)); err != nil {
			return err
		}
	}
	if err := ss.send(appendBlockHeader(hdr, i), data); err != nil {
		return err
	}
	ss.c.noteSent(ss.s.Conn().RemotePeer(), len(data))
	return nil
}

// servePeers lists the other peers known to hold or fetch the content.
func (p *Peer) servePeers(ss *serverStream) error {
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
		if len(infos) == maxPeersListed {
			break
		}
	}
	if err := ss.send(appendPeers(nil, infos)); err != nil {
		return err
	}
	return ss.flush()
}

// binaryMaxVarint is the longest uvarint of an index we accept (uint64).
const binaryMaxVarint = 10
