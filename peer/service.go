package peer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/libp2p/go-libp2p/core/host"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/swarm"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// The protocols a peer speaks (see package peer/wire for each one's
// messages).
const (
	// ProtoManifest is wire.ProtoManifest.
	ProtoManifest = wire.ProtoManifest
	// ProtoReconcile is wire.ProtoReconcile.
	ProtoReconcile = wire.ProtoReconcile
	// ProtoBlocks is wire.ProtoBlocks.
	ProtoBlocks = wire.ProtoBlocks
	// ProtoPeers is wire.ProtoPeers.
	ProtoPeers = wire.ProtoPeers
	// ProtoPush is wire.ProtoPush.
	ProtoPush = wire.ProtoPush
	// ProtoAdopt is wire.ProtoAdopt.
	ProtoAdopt = wire.ProtoAdopt
	// ProtoJoin is wire.ProtoJoin.
	ProtoJoin = wire.ProtoJoin
	// ProtoOffer is wire.ProtoOffer.
	ProtoOffer = wire.ProtoOffer
	// ProtoDelta is wire.ProtoDelta.
	ProtoDelta = wire.ProtoDelta
	// ProtoManifestDelta is wire.ProtoManifestDelta.
	ProtoManifestDelta = wire.ProtoManifestDelta
)

// protocols lists the protocols NewService registers on its host (the Proto
// constants).
var protocols = []protocol.ID{ProtoManifest, ProtoReconcile, ProtoBlocks, ProtoPeers, ProtoPush, ProtoAdopt, ProtoOffer, ProtoJoin, ProtoDelta, ProtoManifestDelta}

// A Service is the reconcile protocols on a libp2p host: it seeds, serves and
// fetches content. It serves every content it seeds or fetches to any peer
// that asks, until Close. It never closes the host or a connection of the
// host: a misbehaving peer is put on the service's own deny-list, its
// streams of this service's protocols are reset, and its other protocols
// (those of the application that owns the host) are left alone.
type Service struct {
	h   host.Host
	cfg config
	log *slog.Logger
	// clk is the service's clock (cfg.clock).
	clk clock.Clock

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// srv answers remote peers' requests, cl makes this service's own.
	srv *serve.Server
	// nd runs the fetches and the stripe trees (package peer/swarm).
	nd *swarm.Node
	cl *client

	// guard admits, scores and bans remote peers (package peer/serve).
	guard *serve.Guard

	// lib holds the contents served and fetched (package peer/serve).
	lib *serve.Library

	mu     sync.Mutex
	closed bool
}

// NewService mounts the reconcile protocols on h, as go-libp2p's ping
// service mounts on any host: it registers the stream handlers of the Proto
// constants' protocols and returns the service. The host stays the caller's: Close removes the
// handlers and stops the service but closes neither the host nor any of its
// connections.
//
// The options that shape a host (WithListenAddrs, WithIdentity, WithKeyFile)
// apply to New only and are refused here. A host built elsewhere should bound
// the streams of the protocols with ResourceLimits; without them only the
// service's own limits (reconcile slots, serve budget, frame sizes) apply.
func NewService(h host.Host, opts ...Option) (*Service, error) {
	if h == nil {
		return nil, errors.New("peer: NewService: nil host")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.hostOpts {
		return nil, errors.New("peer: NewService: listen addresses and identity shape a new host; pass them to New")
	}
	return newService(h, cfg), nil
}

func newService(h host.Host, cfg config) *Service {
	p := &Service{
		h: h, cfg: cfg, log: cfg.Log, clk: cfg.Clock,
		lib:   serve.NewLibrary(),
		guard: serve.NewGuard(h, cfg.Config.Config),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.srv = serve.NewServer(p.ctx, h, cfg.Config.Config, p.lib, p.guard, p.goroutine)
	p.nd = swarm.NewNode(p.ctx, h, cfg.Config, p.lib, p.guard, p.srv, p.kit(), p.goroutine)
	p.cl = &client{Service: p}
	p.goroutine(p.srv.Sweeper)
	p.h.SetStreamHandler(ProtoManifest, p.srv.Handler(p.srv.ServeManifest))
	p.h.SetStreamHandler(ProtoReconcile, p.srv.Handler(p.srv.ServeReconcile))
	p.h.SetStreamHandler(ProtoBlocks, p.srv.Handler(p.srv.ServeBlocks))
	p.h.SetStreamHandler(ProtoOffer, p.srv.OfferHandler())
	p.h.SetStreamHandler(ProtoPeers, p.srv.Handler(p.srv.ServePeers))
	p.h.SetStreamHandler(ProtoPush, p.srv.Handler(p.nd.ServePush))
	p.h.SetStreamHandler(ProtoAdopt, p.srv.Handler(p.nd.ServeAdopt))
	p.h.SetStreamHandler(ProtoJoin, p.srv.Handler(p.nd.ServeJoin))
	p.h.SetStreamHandler(ProtoDelta, p.srv.Handler(p.srv.ServeDelta))
	p.h.SetStreamHandler(ProtoManifestDelta, p.srv.Handler(p.srv.ServeManifestDelta))
	return p
}

// ID is the host's identity.
func (p *Service) ID() lpeer.ID { return p.h.ID() }

// Host is the libp2p host the service runs on.
func (p *Service) Host() host.Host { return p.h }

// AddrInfo is the host's identity and listen addresses, as put in tickets.
// Unspecified listen addresses (0.0.0.0, ::) are expanded to the interface
// addresses by libp2p.
func (p *Service) AddrInfo() lpeer.AddrInfo {
	return lpeer.AddrInfo{ID: p.h.ID(), Addrs: p.h.Addrs()}
}

// Addrs returns the host's full multiaddrs, each ending in /p2p/ID.
func (p *Service) Addrs() []ma.Multiaddr {
	out, err := lpeer.AddrInfoToP2pAddrs(&lpeer.AddrInfo{ID: p.h.ID(), Addrs: p.h.Addrs()})
	if err != nil {
		return nil
	}
	return out
}

// Connect dials a peer given as a full multiaddr (ending in /p2p/ID).
func (p *Service) Connect(ctx context.Context, addr ma.Multiaddr) (lpeer.ID, error) {
	ai, err := lpeer.AddrInfoFromP2pAddr(addr)
	if err != nil {
		return "", fmt.Errorf("peer: %s: %w", addr, err)
	}
	if err := p.h.Connect(ctx, *ai); err != nil {
		return "", fmt.Errorf("peer: connect %s: %w", ai.ID, err)
	}
	return ai.ID, nil
}

// Close stops serving, ends running fetches, resets the service's open
// streams and closes every store. It closes neither the host nor its
// connections.
func (p *Service) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.lib.Stop()
	open := p.guard.Close()
	for _, proto := range protocols {
		p.h.RemoveStreamHandler(proto)
	}
	p.cancel()
	for _, s := range open {
		s.Reset()
	}
	p.wg.Wait()
	var errs []error
	for _, c := range p.lib.Drain() {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// goroutine runs fn on the service's wait group unless the service is closed.
func (p *Service) goroutine(fn func()) bool {
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

// client is the service's side as a fetcher: it connects to peers, asks
// them for manifests, reconciliations and peers, and starts fetches.
type client struct {
	*Service
}
