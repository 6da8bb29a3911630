package peer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
	mh "github.com/multiformats/go-multihash"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// DHTPrefix is the protocol prefix of this tool's own (private) Kademlia DHT:
// its peers speak /reconcile/kad/1.0.0 and never meet the public IPFS DHT.
const DHTPrefix protocol.ID = "/reconcile"

// AminoPrefix is the protocol prefix of the public IPFS Amino DHT.
const AminoPrefix protocol.ID = "/ipfs"

// MDNSService is the mDNS service name peers of this tool announce on a LAN.
const MDNSService = "_reconcile-p2p._udp"

// DHTMode says whether a peer answers DHT queries.
type DHTMode int

const (
	// DHTOff runs no DHT.
	DHTOff DHTMode = iota
	// DHTClient queries and announces but answers no query (peers behind NAT).
	DHTClient
	// DHTServer also stores records and answers queries (public peers, relays).
	DHTServer
	// DHTAuto is a client until AutoNAT finds the host reachable, then a server.
	DHTAuto
)

// Discovery chooses how New's peer finds others by content (see the package
// doc, "Discovery"). The zero Discovery finds peers only from tickets and
// peer exchange.
type Discovery struct {
	// DHT runs a Kademlia DHT (go-libp2p-kad-dht) in this mode. Every
	// served root is announced as a provider record (CID v1, raw codec,
	// blake3 multihash of the root) and announced again every Reannounce; a
	// fetch looks up providers of its root.
	DHT DHTMode
	// Amino joins the public IPFS Amino DHT (prefix /ipfs, its bootstrap
	// peers unless Bootstrap is set) instead of the private /reconcile one.
	Amino bool
	// Bootstrap are the DHT peers dialled first.
	Bootstrap []AddrInfo
	// Reannounce is the period of provider announcements. Default 1 hour
	// (records live 48 hours on servers).
	Reannounce time.Duration
	// MDNS announces this peer on the LAN and connects to the peers of this
	// tool found there; a fetch takes them as sources.
	MDNS bool
}

// WithDiscovery sets how New's peer discovers others (New only). Default:
// the zero Discovery (none).
func WithDiscovery(d Discovery) Option {
	return func(c *config) error {
		if d.Reannounce < 0 {
			return errors.New("peer: negative re-announce period")
		}
		if d.Reannounce == 0 {
			d.Reannounce = time.Hour
		}
		c.ext().disc = d
		c.hostOpts = true
		return nil
	}
}

// extConfig is the configuration of reachability and discovery, and the
// running discovery of a peer New built.
type extConfig struct {
	reach Reach
	disc  Discovery
	run   *discovery
	paths *pathTracker
}

func (c *config) ext() *extConfig {
	if c.x == nil {
		c.x = &extConfig{}
	}
	return c.x
}

// RootCID is the CID under which root is announced in the DHT: CID v1, raw
// codec, with the blake3 multihash of the root id (the root id is the blake3
// hash of the manifest).
func RootCID(root chunker.ID) cid.Cid {
	m, err := mh.Encode(root[:], mh.BLAKE3)
	if err != nil { // BLAKE3 is a known code.
		panic(err)
	}
	return cid.NewCidV1(cid.Raw, m)
}

// discovery is the running DHT and mDNS of a peer.
type discovery struct {
	s    *Service
	dht  *dht.IpfsDHT
	mdns interface{ Close() error }
	d    Discovery

	mu        sync.Mutex
	announced map[chunker.ID]time.Time
	withRelay map[chunker.ID]bool // announced while the host had a relay address
	local     map[chunker.ID]bool
	lan       map[lpeer.ID]struct{}
	dialing   map[lpeer.ID]struct{} // LAN peers being dialled
	wg        sync.WaitGroup
}

// startDiscovery starts the DHT and mDNS of s as d says.
func startDiscovery(s *Service, h host.Host, d Discovery) (*discovery, error) {
	ds := &discovery{s: s, d: d, announced: make(map[chunker.ID]time.Time), withRelay: make(map[chunker.ID]bool), local: make(map[chunker.ID]bool), lan: make(map[lpeer.ID]struct{}), dialing: make(map[lpeer.ID]struct{})}
	if d.DHT != DHTOff {
		opts := []dht.Option{dht.ProtocolPrefix(DHTPrefix)}
		boot := d.Bootstrap
		if d.Amino {
			opts = []dht.Option{dht.ProtocolPrefix(AminoPrefix),
				dht.QueryFilter(dht.PublicQueryFilter), dht.RoutingTableFilter(dht.PublicRoutingTableFilter)}
			if len(boot) == 0 {
				boot = dht.GetDefaultBootstrapPeerAddrInfos()
			}
		}
		switch d.DHT {
		case DHTClient:
			opts = append(opts, dht.Mode(dht.ModeClient))
		case DHTServer:
			opts = append(opts, dht.Mode(dht.ModeServer))
		default:
			opts = append(opts, dht.Mode(dht.ModeAuto))
		}
		if len(boot) > 0 {
			opts = append(opts, dht.BootstrapPeers(boot...))
		}
		kd, err := dht.New(h, opts...)
		if err != nil {
			return nil, fmt.Errorf("peer: start DHT: %w", err)
		}
		ds.dht = kd
		for _, ai := range boot {
			ai := ai
			go func() {
				ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
				defer cancel()
				if err := h.Connect(ctx, ai); err != nil {
					s.log.Info("bootstrap peer unreachable", "peer", ai.ID, "err", err)
				}
			}()
		}
		if err := kd.Bootstrap(s.ctx); err != nil {
			kd.Close()
			return nil, fmt.Errorf("peer: bootstrap DHT: %w", err)
		}
		ds.wg.Add(1)
		go ds.announceLoop()
	}
	if d.MDNS {
		m := mdns.NewMdnsService(h, MDNSService, (*lanNotifee)(ds))
		if err := m.Start(); err != nil {
			ds.close()
			return nil, fmt.Errorf("peer: start mDNS: %w", err)
		}
		ds.mdns = m
	}
	return ds, nil
}

func (ds *discovery) close() error {
	var err error
	if ds.mdns != nil {
		err = ds.mdns.Close()
	}
	if ds.dht != nil {
		err = errors.Join(err, ds.dht.Close())
	}
	ds.wg.Wait()
	return err
}

// announceLoop announces every served root once this peer holds a block of
// it (polling each second), again every Reannounce, and again once the peer
// has a relay address if it had none when it announced (the record then
// carries an address peers behind other NATs can dial), until the service
// closes.
func (ds *discovery) announceLoop() {
	defer ds.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		ds.s.mu.Lock()
		roots := make([]chunker.ID, 0, len(ds.s.contents))
		for id := range ds.s.contents {
			roots = append(roots, id)
		}
		ds.s.mu.Unlock()
		for _, r := range roots {
			relayed := hasRelayAddr(ds.s.h.Addrs())
			ds.mu.Lock()
			last, ok := ds.announced[r]
			gained := relayed && !ds.withRelay[r]
			ds.mu.Unlock()
			if ok && time.Since(last) < ds.d.Reannounce && !gained {
				// Announced, and not since gaining a relay address (the
				// record's addresses may be all the others can dial).
				continue
			}
			if held, _, _ := ds.s.Held(r); held == 0 {
				continue // a fetch that holds no block yet has nothing to offer
			}
			if len(ds.dht.RoutingTable().ListPeers()) == 0 {
				// Nobody to tell yet: keep the record in this peer's own
				// store (DHT clients that ask it find it there) and tell
				// the others once there are some.
				ds.provideLocally(r)
				continue
			}
			ctx, cancel := context.WithTimeout(ds.s.ctx, 30*time.Second)
			err := ds.dht.Provide(ctx, RootCID(r), true)
			cancel()
			if err != nil {
				ds.s.log.Info("announce root", "root", r, "err", err)
				continue
			}
			ds.s.log.Info("announced root in the DHT", "root", r)
			ds.mu.Lock()
			ds.announced[r] = time.Now()
			ds.withRelay[r] = relayed
			ds.mu.Unlock()
		}
		select {
		case <-ds.s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hasRelayAddr says whether addrs hold a circuit relay address.
func hasRelayAddr(addrs []ma.Multiaddr) bool {
	for _, a := range addrs {
		if isRelayed(a) {
			return true
		}
	}
	return false
}

// provideLocally puts this peer's provider record of root into its own
// provider store, once.
func (ds *discovery) provideLocally(root chunker.ID) {
	ds.mu.Lock()
	done := ds.local[root]
	ds.local[root] = true
	ds.mu.Unlock()
	if done {
		return
	}
	self := lpeer.AddrInfo{ID: ds.s.h.ID(), Addrs: ds.s.h.Addrs()}
	if err := ds.dht.ProviderStore().AddProvider(ds.s.ctx, RootCID(root).Hash(), self); err != nil {
		ds.s.log.Info("store own provider record", "root", root, "err", err)
	}
}

// providers looks up providers of root in the DHT and sends each one with
// addresses to found, until ctx is done or the lookup ends.
func (ds *discovery) providers(ctx context.Context, root chunker.ID, found func(AddrInfo)) {
	if ds == nil || ds.dht == nil {
		return
	}
	for ai := range ds.dht.FindProvidersAsync(ctx, RootCID(root), 0) {
		if ai.ID == ds.s.h.ID() {
			continue
		}
		found(ai)
	}
}

// lanPeers are the peers found on the LAN so far.
func (ds *discovery) lanPeers() []lpeer.ID {
	if ds == nil {
		return nil
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	out := make([]lpeer.ID, 0, len(ds.lan))
	for id := range ds.lan {
		out = append(out, id)
	}
	return out
}

// lanNotifee connects to the peers mDNS finds.
type lanNotifee discovery

// lanDialDelay is how long the peer with the larger id waits before it dials
// a peer found on the LAN, so that the other dials first; lanDialTries is
// how often it dials, with a random pause of up to lanRetryPause between.
const (
	lanDialDelay  = 800 * time.Millisecond
	lanDialTries  = 4
	lanRetryPause = 600 * time.Millisecond
)

// HandlePeerFound connects to a peer found on the LAN. Two peers that find
// each other at once would dial each other at once, and TCP's simultaneous
// open between their listening ports then joins both dials into one
// connection that fails the security handshake: the peer with the larger
// id lets the other dial first (its own dial then finds the connection
// made), and a failed dial is tried again after a random pause.
func (n *lanNotifee) HandlePeerFound(ai lpeer.AddrInfo) {
	ds := (*discovery)(n)
	self := ds.s.h.ID()
	if ai.ID == self {
		return
	}
	ds.mu.Lock()
	if _, busy := ds.dialing[ai.ID]; busy || len(ds.dialing) >= maxSwarm {
		ds.mu.Unlock()
		return
	}
	ds.dialing[ai.ID] = struct{}{}
	ds.mu.Unlock()
	go func() {
		defer func() {
			ds.mu.Lock()
			delete(ds.dialing, ai.ID)
			ds.mu.Unlock()
		}()
		pause := func(d time.Duration) bool {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ds.s.ctx.Done():
				return false
			case <-t.C:
				return true
			}
		}
		if self > ai.ID && !pause(lanDialDelay) {
			return
		}
		var err error
		for try := 0; try < lanDialTries; try++ {
			if try > 0 && !pause(time.Duration(rand.Int64N(int64(lanRetryPause)))) {
				return
			}
			ctx, cancel := context.WithTimeout(ds.s.ctx, 10*time.Second)
			err = ds.s.h.Connect(ctx, ai)
			cancel()
			if err == nil {
				ds.s.log.Info("found LAN peer", "peer", ai.ID)
				ds.mu.Lock()
				ds.lan[ai.ID] = struct{}{}
				ds.mu.Unlock()
				return
			}
			if sw, ok := ds.s.h.Network().(interface{ Backoff() *swarm.DialBackoff }); ok {
				sw.Backoff().Clear(ai.ID) // the next try dials at once
			}
		}
		ds.s.log.Info("LAN peer unreachable", "peer", ai.ID, "err", err)
	}()
}

// discoveryOf is the running discovery of s, nil if none.
func (s *Service) discoveryOf() *discovery {
	if s.cfg.x == nil {
		return nil
	}
	return s.cfg.x.run
}

// DHT returns the peer's Kademlia DHT, nil if it runs none (WithDiscovery).
func (s *Service) DHT() *dht.IpfsDHT {
	if ds := s.discoveryOf(); ds != nil {
		return ds.dht
	}
	return nil
}

// startExt starts what WithReach and WithDiscovery ask for beside the
// service: the path tracker, the DHT and mDNS.
func (p *Peer) startExt() error {
	x := p.cfg.x
	if x == nil {
		return nil
	}
	x.paths = newPathTracker(p.h.Network())
	if x.reach.RelayClient {
		p.logRelayAddrs()
	}
	if x.disc.DHT == DHTOff && !x.disc.MDNS {
		return nil
	}
	ds, err := startDiscovery(p.Service, p.h, x.disc)
	if err != nil {
		return err
	}
	x.run = ds
	if x.reach.src != nil && ds.dht != nil {
		x.reach.src.setDHT(ds.dht, p.log) // AutoRelay takes relays from the DHT
	}
	return nil
}

// stopExt stops the DHT and mDNS.
func (p *Peer) stopExt() error {
	if p.cfg.x == nil || p.cfg.x.run == nil {
		return nil
	}
	return p.cfg.x.run.close()
}
