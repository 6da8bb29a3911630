package peer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
)

// A Peer is a Service on a libp2p host of its own, built by New with this
// package's defaults. Close closes both. As the host is its own, the
// streams a banned peer opens are refused by the host's resource manager,
// before any protocol negotiation (for the ban's time).
type Peer struct {
	*Service
}

// New starts a peer: a libp2p host with TCP and QUIC transports, TLS and Noise
// security, yamux and a resource manager with ResourceLimits, and the
// Service on it (NewService). It dials a peer's TCP addresses before its QUIC
// ones (QUIC after 250 ms, or at once for a peer without TCP addresses):
// blocks move several times faster over TCP.
//
// ctx bounds the start only: if it is done before the host is up, New fails
// with its error and leaves nothing running. The peer then runs until Close.
func New(ctx context.Context, opts ...Option) (*Peer, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("peer: start host: %w", err)
	}
	rm := &banResources{}
	h, err := newHost(cfg, rm)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		h.Close()
		return nil, fmt.Errorf("peer: start host: %w", err)
	}
	p := &Peer{Service: newService(h, cfg)}
	rm.svc.Store(p.Service)
	if err := p.startExt(); err != nil { // peer/dht.go: paths, DHT, mDNS
		p.Close()
		return nil, err
	}
	return p, nil
}

// Close stops the service (see Service.Close), then closes the host.
func (p *Peer) Close() error {
	err := p.Service.Close()
	err = errors.Join(err, p.stopExt()) // peer/dht.go
	return errors.Join(err, p.h.Close())
}

// ResourceLimits returns libp2p's default resource limits (with its
// services' defaults), scaled to this machine's memory and file
// descriptors, and, for each of the Proto protocols, the stream limits l sets:
// l.StreamsPerPeer streams in each direction per remote peer and 4·l.Streams
// over all peers (zero fields of l take DefaultLimits'; the service itself
// shares l.Streams per protocol fairly among peers). New builds its host
// with them; an application that mounts the service on its own host
// (NewService) passes them to its resource manager:
//
//	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(peer.ResourceLimits(peer.DefaultLimits)))
//	h, err := libp2p.New(libp2p.ResourceManager(rm), ...)
func ResourceLimits(l Limits) rcmgr.ConcreteLimitConfig {
	l = l.withDefaults()
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	for _, proto := range protocols {
		limits.AddProtocolLimit(proto,
			// The service shares its own l.Streams per protocol fairly among
			// peers (a newcomer may reset a stream of the peer that holds the
			// most); the resource manager, which refuses whoever comes last,
			// only backs that up.
			rcmgr.BaseLimit{StreamsInbound: 4 * l.Streams, StreamsOutbound: 4 * l.Streams, Streams: 8 * l.Streams, Memory: 1 << 30},
			rcmgr.BaseLimitIncrease{})
		limits.AddProtocolPeerLimit(proto,
			rcmgr.BaseLimit{StreamsInbound: l.StreamsPerPeer, StreamsOutbound: l.StreamsPerPeer, Streams: 2 * l.StreamsPerPeer, Memory: 256 << 20},
			rcmgr.BaseLimitIncrease{})
	}
	// Connections in their handshake count against the transient scope,
	// which libp2p's defaults make a third of the system's: a crowd of peers
	// dialling at once (a swarm starting, or a flood) has most of its
	// handshakes refused and dials again and again, and a legitimate fetcher's
	// dial is refused among them. Let every connection the system takes be
	// in its handshake.
	limits.TransientBaseLimit.ConnsInbound = limits.SystemBaseLimit.ConnsInbound
	limits.TransientLimitIncrease.ConnsInbound = limits.SystemLimitIncrease.ConnsInbound
	limits.TransientBaseLimit.Conns = limits.SystemBaseLimit.Conns
	limits.TransientLimitIncrease.Conns = limits.SystemLimitIncrease.Conns
	return limits.AutoScale()
}

func newHost(cfg config, brm *banResources) (host.Host, error) {
	key := cfg.key
	if key == nil && cfg.keyFile != "" {
		k, err := LoadOrCreateKey(cfg.keyFile)
		if err != nil {
			return nil, err
		}
		key = k
	}
	// Without metrics: the host exports none (DisableMetrics below), and the
	// resource manager's own stats reporter formats a trace event for every
	// stream and memory reservation (16 % of a seed's CPU under a flood of
	// short streams, measured with reconcile flood).
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(ResourceLimits(cfg.limits)), rcmgr.WithMetricsDisabled())
	if err != nil {
		return nil, fmt.Errorf("peer: resource manager: %w", err)
	}
	brm.ResourceManager = rm
	opts := []libp2p.Option{
		libp2p.ListenAddrStrings(cfg.listen...),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.Security(libp2ptls.ID, libp2ptls.New),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ResourceManager(brm),
		libp2p.DisableMetrics(),
		libp2p.SwarmOpts(swarm.WithDialRanker(cfg.dialRanker)),
	}
	opts = append(opts, reachOptions(cfg.ext().reach)...) // peer/reach.go: DisableRelay unless WithReach
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

// banResources is the resource manager of a host New builds: libp2p's, but
// an inbound stream of a peer the service has banned is refused before any
// of it is read (the swarm resets it as over a limit). A banned peer that
// opens streams as fast as they are reset then costs the host a muxer frame
// each, not a protocol negotiation, a handler and a reset. Its connection
// stays up: closed, it would be dialled again at once, and every handshake
// costs the host far more than a refused stream.
type banResources struct {
	network.ResourceManager
	svc atomic.Pointer[Service]
}

// errBannedStream refuses a banned peer's stream.
var errBannedStream = errors.New("peer: banned peer")

// OpenStream refuses the inbound streams of banned peers.
func (r *banResources) OpenStream(id lpeer.ID, dir network.Direction) (network.StreamManagementScope, error) {
	if s := r.svc.Load(); s != nil && dir == network.DirInbound && s.isBanned(id) {
		return nil, errBannedStream
	}
	return r.ResourceManager.OpenStream(id, dir)
}
