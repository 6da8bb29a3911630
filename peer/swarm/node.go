package swarm

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
	"github.com/reconcile-p2p/reconcile/peer/serve"
)

// Config is what a Node is told by the service that runs it: the server's
// configuration and the fetches' tuning (package peer's options set it).
type Config struct {
	serve.Config
	// StallTimeout is how long a fetch waits for a requested block before
	// it gives the source's outstanding blocks to other sources.
	StallTimeout time.Duration
	// Window bounds the blocks a fetch keeps requested from one source.
	Window int
	// FixedWindow keeps the whole Window requested, rather than a window
	// adapted to the source's rate and round trip.
	FixedWindow bool
	// MaxSources bounds the sources one fetch downloads from at once.
	MaxSources int
}

// Node is a service's fetching side on a libp2p host: it opens requests
// to peers, runs fetches and keeps contents' places in their stripe trees.
// It shares the service's library, guard and server.
type Node struct {
	h         host.Host
	cfg       Config
	log       *slog.Logger
	clk       clock.Clock
	ctx       context.Context
	goroutine func(func()) bool
	lib       *serve.Library
	guard     *serve.Guard
	srv       *serve.Server
	// kit is the host New built, with its path tracker and discovery; nil
	// on an application's host.
	kit *hostkit.Host
	// private is set while the host finds itself unreachable
	// (event.EvtLocalReachabilityChanged, from AutoNAT or forced): such a
	// fetcher joins a seed's trees saying so (wire.Hello.Private).
	private atomic.Bool
}

// NewNode returns the fetching side of a service on h. It runs its
// goroutines with goroutine (false once the service is closed) until ctx
// ends; kit, when not nil, is the host New built (paths, hole punching,
// DHT and LAN discovery).
func NewNode(ctx context.Context, h host.Host, cfg Config, lib *serve.Library, guard *serve.Guard, srv *serve.Server, kit *hostkit.Host, goroutine func(func()) bool) *Node {
	p := &Node{h: h, cfg: cfg, log: cfg.Log, clk: cfg.Clock, ctx: ctx, goroutine: goroutine, lib: lib, guard: guard, srv: srv, kit: kit}
	p.followReachability()
	return p
}

// followReachability keeps p.private up to date with the host's verdict
// on its reachability. The event is stateful: the verdict found before
// the node subscribed comes first.
func (p *Node) followReachability() {
	sub, err := p.h.EventBus().Subscribe(new(event.EvtLocalReachabilityChanged))
	if err != nil {
		return // a host without the event: taken for reachable
	}
	p.noteReachability(sub.Out())
	if !p.goroutine(func() {
		defer sub.Close()
		for {
			select {
			case e, ok := <-sub.Out():
				if !ok {
					return
				}
				p.setReachability(e)
			case <-p.ctx.Done():
				return
			}
		}
	}) {
		sub.Close()
	}
}

// noteReachability takes the verdict already waiting on out, if any, so
// that a fetch started right after NewNode knows it.
func (p *Node) noteReachability(out <-chan interface{}) {
	select {
	case e := <-out:
		p.setReachability(e)
	default:
	}
}

// setReachability takes the verdict of e, an
// event.EvtLocalReachabilityChanged.
func (p *Node) setReachability(e interface{}) {
	p.private.Store(e.(event.EvtLocalReachabilityChanged).Reachability == network.ReachabilityPrivate)
}

// Private reports whether the host finds itself unreachable by peers it
// has not dialled (behind a NAT), by the last
// event.EvtLocalReachabilityChanged it emitted.
func (p *Node) Private() bool { return p.private.Load() }

// discoveryOf is the node's host if it runs a DHT or mDNS, nil otherwise.
func (p *Node) discoveryOf() *hostkit.Host {
	if p.kit != nil && p.kit.Discovers() {
		return p.kit
	}
	return nil
}
