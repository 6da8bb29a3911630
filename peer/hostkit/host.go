package hostkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
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
	"github.com/libp2p/go-libp2p/x/rate"
	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// Config is what New builds a host from. The zero Config is a host on
// libp2p's default listen addresses with a fresh identity, libp2p's
// resource limits scaled to this machine, TCPFirst dialling, no
// reachability parts and no discovery.
type Config struct {
	// Listen are the multiaddrs to listen on. Default: libp2p's.
	Listen []string
	// Key is the host's identity. Default: KeyFile's key, or a fresh
	// Ed25519 key if KeyFile is empty.
	Key crypto.PrivKey
	// KeyFile, if Key is nil, is where the identity key is kept (see
	// LoadOrCreateKey).
	KeyFile string
	// Limits are the resource manager's limits. Default: ResourceLimits
	// with no protocol.
	Limits *rcmgr.ConcreteLimitConfig
	// DialRanker orders the dials of a peer's addresses. Default: TCPFirst.
	DialRanker network.DialRanker
	// Reach chooses the reachability parts of the host.
	Reach Reach
	// Discovery chooses the DHT and mDNS that StartDiscovery runs.
	Discovery Discovery
	// Log is where the host's reachability and discovery report. Default:
	// discard.
	Log *slog.Logger
	// Clock is the time of the host's own pauses and timeouts (re-announce,
	// hole-punch waits, relay look-ups); libp2p's keep real time. Default:
	// the wall clock.
	Clock clock.Clock
}

// A Host is a libp2p host with its batteries: the transports, security and
// muxer this project uses, a resource manager that can refuse banned peers'
// streams (SetBanned), the reachability parts of its Reach, a memory of the
// paths its connections took (Path, AwaitDirect) and, once StartDiscovery
// runs, a DHT and mDNS. Close closes all of them.
type Host struct {
	host.Host

	cfg   Config
	log   *slog.Logger
	gate  *banGate
	conns *connGate
	src   *relaySource
	paths *pathTracker
	// punches are DCUtR's last hole punches, per peer (Punch).
	punches *punchLog
	// relays are the relay connections per transport (relayconns.go).
	relays relayConns

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu   sync.Mutex
	disc *discovery // StartDiscovery; nil before or without DHT and mDNS
}

// New builds a host as cfg says: TCP and QUIC v1 transports, TLS 1.3 and
// Noise security, yamux, a resource manager with cfg.Limits and no metrics,
// and the reachability parts of cfg.Reach (with none, relays are disabled).
//
// ctx bounds the start only: if it is done before the host is up, New fails
// with its error and leaves nothing running. The host then runs until Close.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if err := cfg.Reach.Check(); err != nil {
		return nil, err
	}
	if err := cfg.Discovery.Check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("hostkit: start host: %w", err)
	}
	key := cfg.Key
	if key == nil && cfg.KeyFile != "" {
		k, err := LoadOrCreateKey(cfg.KeyFile)
		if err != nil {
			return nil, err
		}
		key = k
	}
	limits := cfg.Limits
	if limits == nil {
		l := ResourceLimits(nil, 0, 0)
		limits = &l
	}
	ranker := cfg.DialRanker
	if ranker == nil {
		ranker = TCPFirst
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Without metrics: the host exports none (DisableMetrics below), and the
	// resource manager's own stats reporter formats a trace event for every
	// stream and memory reservation (16 % of a seed's CPU under a flood of
	// short streams, measured with reconcile flood).
	rmOpts := []rcmgr.Option{rcmgr.WithMetricsDisabled()}
	if cfg.Reach.AutoNATService {
		rmOpts = append(rmOpts, rcmgr.WithConnRateLimiters(helperConnRate()))
	}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(*limits), rmOpts...)
	if err != nil {
		return nil, fmt.Errorf("hostkit: resource manager: %w", err)
	}
	gate := &banGate{ResourceManager: rm}
	conns := &connGate{clk: cfg.Clock, banned: &gate.banned}
	src := &relaySource{static: cfg.Reach.Relays, dht: cfg.Reach.DHTRelays, clk: cfg.Clock}
	opts := []libp2p.Option{
		libp2p.ListenAddrStrings(cfg.Listen...),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.Security(libp2ptls.ID, libp2ptls.New),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ResourceManager(gate),
		libp2p.ConnectionGater(conns),
		libp2p.DisableMetrics(),
		libp2p.SwarmOpts(swarm.WithDialRanker(ranker)),
	}
	punches := &punchLog{}
	opts = append(opts, reachOptions(cfg.Reach, src, punches)...) // reach.go: DisableRelay unless a relay client
	if key != nil {
		opts = append(opts, libp2p.Identity(key))
	}
	lh, err := libp2p.New(opts...)
	if err != nil {
		rm.Close()
		return nil, fmt.Errorf("hostkit: start host: %w", err)
	}
	if err := ctx.Err(); err != nil {
		lh.Close()
		return nil, fmt.Errorf("hostkit: start host: %w", err)
	}
	conns.shared = conns.sharedAddr(lh)
	h := &Host{Host: lh, cfg: cfg, log: log, gate: gate, conns: conns, src: src, paths: newPathTracker(lh.Network()), punches: punches}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if cfg.Reach.RelayClient {
		h.logRelayAddrs()
		if cfg.Reach.HolePunch {
			if err := h.watchRelays(); err != nil {
				h.Close()
				return nil, err
			}
		}
	}
	return h, nil
}

// helperConnRate is the rate at which a public helper node (a host with
// Reach.AutoNATService: reconcile relay) admits new connections per
// address: one a second per IPv4 address and IPv6 /56, after a burst of 64.
// go-libp2p's default (one every 5 s after a burst of 16) is for peers at
// large; a relay is the node NATed peers connect to, many of them behind
// one carrier-grade NAT address, and each with a connection per transport
// (relayconns.go). Loopback is not limited, as by default.
func helperConnRate() *rate.Limiter {
	per := rate.Limit{RPS: 1, Burst: 64}
	return &rate.Limiter{
		NetworkPrefixLimits: []rate.PrefixLimit{
			{Prefix: netip.MustParsePrefix("127.0.0.0/8")},
			{Prefix: netip.MustParsePrefix("::1/128")},
		},
		SubnetRateLimiter: rate.SubnetLimiter{
			IPv4SubnetLimits: []rate.SubnetLimit{{PrefixLength: 32, Limit: per}},
			IPv6SubnetLimits: []rate.SubnetLimit{{PrefixLength: 56, Limit: per}},
			GracePeriod:      time.Minute,
		},
	}
}

// SetBanned sets the check by which the host refuses banned peers: its
// resource manager refuses their inbound streams before any of them is
// read (the swarm resets such a stream as over a limit), and its
// connection gater their connections once authenticated (and the host
// does not dial them). Ban closes a peer's connections as it is banned and
// refuses its addresses before the handshake. banned must be safe for
// concurrent use; nil refuses nobody (the default).
func (h *Host) SetBanned(banned func(lpeer.ID) bool) {
	if banned == nil {
		h.gate.banned.Store(nil)
		return
	}
	h.gate.banned.Store(&banned)
}

// Close stops the discovery (DHT and mDNS) and closes the host.
func (h *Host) Close() error {
	h.cancel()
	h.mu.Lock()
	ds := h.disc
	h.mu.Unlock()
	var err error
	if ds != nil {
		err = ds.close()
	}
	return errors.Join(err, h.Host.Close())
}

// ResourceLimits returns libp2p's default resource limits (with its
// services' defaults), scaled to this machine's memory and file
// descriptors, and, for each of protos, perPeer streams in each direction
// per remote peer and 4·streams over all peers.
func ResourceLimits(protos []protocol.ID, streams, perPeer int) rcmgr.ConcreteLimitConfig {
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	for _, proto := range protos {
		limits.AddProtocolLimit(proto,
			// A service (package peer's) shares its own streams per
			// protocol fairly among peers (a newcomer may reset a stream of
			// the peer that holds the most); the resource manager, which
			// refuses whoever comes last, only backs that up.
			rcmgr.BaseLimit{StreamsInbound: 4 * streams, StreamsOutbound: 4 * streams, Streams: 8 * streams, Memory: 1 << 30},
			rcmgr.BaseLimitIncrease{})
		limits.AddProtocolPeerLimit(proto,
			rcmgr.BaseLimit{StreamsInbound: perPeer, StreamsOutbound: perPeer, Streams: 2 * perPeer, Memory: 256 << 20},
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

// banGate is the resource manager of a Host: libp2p's, but an inbound
// stream of a peer the banned check names is refused (SetBanned).
type banGate struct {
	network.ResourceManager
	banned atomic.Pointer[func(lpeer.ID) bool]
}

// errBannedStream refuses a banned peer's stream.
var errBannedStream = errors.New("hostkit: banned peer")

// OpenStream refuses the inbound streams of banned peers.
func (g *banGate) OpenStream(id lpeer.ID, dir network.Direction) (network.StreamManagementScope, error) {
	if f := g.banned.Load(); f != nil && dir == network.DirInbound && (*f)(id) {
		return nil, errBannedStream
	}
	return g.ResourceManager.OpenStream(id, dir)
}
