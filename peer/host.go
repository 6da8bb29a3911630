package peer

import (
	"context"
	"errors"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/crypto"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/peer/hostkit"
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
// blocks move several times faster over TCP. The host is package
// peer/hostkit's, with the reachability and discovery of WithReach and
// WithDiscovery.
//
// ctx bounds the start only: if it is done before the host is up, New fails
// with its error and leaves nothing running. The peer then runs until Close.
func New(ctx context.Context, opts ...Option) (*Peer, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	x := cfg.ext()
	limits := ResourceLimits(cfg.Limits)
	k, err := hostkit.New(ctx, hostkit.Config{
		Listen:     cfg.listen,
		Key:        cfg.key,
		KeyFile:    cfg.keyFile,
		Limits:     &limits,
		DialRanker: cfg.dialRanker,
		Reach:      x.reach,
		Discovery:  x.disc,
		Log:        cfg.Log,
		Clock:      cfg.Clock,
	})
	if err != nil {
		return nil, err
	}
	x.kit = k
	p := &Peer{Service: newService(k.Host, cfg)}
	k.SetBanned(p.guard.IsBanned)
	p.guard.SetOnBan(k.Ban)
	if err := k.StartDiscovery(p.ctx, p.lib.Announceable); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Close stops the service (see Service.Close), then the host's discovery
// and the host.
func (p *Peer) Close() error {
	err := p.Service.Close()
	return errors.Join(err, p.kit().Close())
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
	l = l.OrDefaults()
	return hostkit.ResourceLimits(protocols, l.Streams, l.StreamsPerPeer)
}

// LoadOrCreateKey returns the identity key stored at path, creating a new Ed25519
// key there (mode 0600, written atomically) when the file does not exist.
//
// An existing file that others may read or write is refused with
// ErrKeyPermissions, as ssh refuses a private key with loose permissions: the
// key is this peer's identity. It is hostkit.LoadOrCreateKey.
func LoadOrCreateKey(path string) (crypto.PrivKey, error) {
	return hostkit.LoadOrCreateKey(path)
}

// extConfig is the reachability and discovery of a peer New builds
// (WithReach, WithDiscovery), and its host.
type extConfig struct {
	reach Reach
	disc  Discovery
	kit   *hostkit.Host // New's host; nil on an application's host
}

func (c *config) ext() *extConfig {
	if c.x == nil {
		c.x = &extConfig{}
	}
	return c.x
}

// kit is the host New built for s, nil if s runs on an application's host.
func (s *Service) kit() *hostkit.Host {
	if s.cfg.x == nil {
		return nil
	}
	return s.cfg.x.kit
}

// discoveryOf is the host of s if it runs a DHT or mDNS, nil otherwise.
func (s *Service) discoveryOf() *hostkit.Host {
	if k := s.kit(); k != nil && k.Discovers() {
		return k
	}
	return nil
}

// DHT returns the peer's Kademlia DHT, nil if it runs none (WithDiscovery).
func (s *Service) DHT() *dht.IpfsDHT {
	if k := s.kit(); k != nil {
		return k.DHT()
	}
	return nil
}

func isRelayed(a ma.Multiaddr) bool { return hostkit.IsRelayed(a) }
