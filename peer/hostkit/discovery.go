package hostkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/reconcile-p2p/reconcile/peer/clock"
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

// Discovery chooses how a Host finds others by content (StartDiscovery). The
// zero Discovery runs neither a DHT nor mDNS.
type Discovery struct {
	// DHT runs a Kademlia DHT (go-libp2p-kad-dht) in this mode. Every
	// root StartDiscovery's callback names is announced as a provider
	// record (RootCID) and announced again every Reannounce; Providers
	// looks them up.
	DHT DHTMode
	// Amino joins the public IPFS Amino DHT (prefix /ipfs, its bootstrap
	// peers unless Bootstrap is set) instead of the private /reconcile one.
	Amino bool
	// Bootstrap are the DHT peers dialled first.
	Bootstrap []lpeer.AddrInfo
	// Reannounce is the period of provider announcements. Default 1 hour
	// (records live 48 hours on servers).
	Reannounce time.Duration
	// MDNS announces this peer on the LAN and connects to the peers of this
	// tool found there (LANPeers).
	MDNS bool
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

// discovery is the running DHT and mDNS of a host.
type discovery struct {
	clk      clock.Clock
	h        host.Host
	ctx      context.Context // ends the loops and dials
	cancel   context.CancelFunc
	log      *slog.Logger
	announce func() []chunker.ID
	dht      *dht.IpfsDHT
	mdns     interface{ Close() error }
	d        Discovery

	mu        sync.Mutex
	announced map[chunker.ID]time.Time
	withRelay map[chunker.ID]bool // announced while the host had a relay address
	local     map[chunker.ID]bool
	lan       map[lpeer.ID]struct{}
	dialing   map[lpeer.ID]struct{} // LAN peers being dialled
	wg        sync.WaitGroup
}

// StartDiscovery starts the DHT and mDNS that the host's Config.Discovery
// asks for, if any, and gives AutoRelay the DHT to find relays in
// (Reach.DHTRelays). Their loops and dials run until ctx is done or the
// host closes; Close closes them.
//
// announce, called every second, returns the roots the DHT is to announce
// as provider records (RootCID): those the caller serves and holds a block
// of (a fetch that holds none yet has nothing to offer). It must be safe
// for concurrent use; nil announces nothing. Each root is announced once,
// again every Discovery.Reannounce, and again once the host has a relay
// address if it had none when it announced (the record then carries an
// address peers behind other NATs can dial).
//
// StartDiscovery may be called once.
func (h *Host) StartDiscovery(ctx context.Context, announce func() []chunker.ID) error {
	d := h.cfg.Discovery
	if d.DHT == DHTOff && !d.MDNS {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.disc != nil {
		return errors.New("hostkit: discovery started twice")
	}
	if h.ctx.Err() != nil {
		return errors.New("hostkit: start discovery: host closed")
	}
	if d.Reannounce == 0 {
		d.Reannounce = time.Hour
	}
	if announce == nil {
		announce = func() []chunker.ID { return nil }
	}
	ctx, cancel := context.WithCancel(ctx)
	context.AfterFunc(h.ctx, cancel) // Close ends the loops too
	ds, err := startDiscovery(ctx, cancel, h.Host, d, announce, h.log, h.cfg.Clock)
	if err != nil {
		return err
	}
	h.disc = ds
	if ds.dht != nil {
		h.src.setDHT(ds.dht, h.log) // AutoRelay takes relays from the DHT
	}
	return nil
}

// discovering is the running discovery, nil if none.
func (h *Host) discovering() *discovery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.disc
}

// Discovers says whether the host runs a DHT or mDNS (StartDiscovery).
func (h *Host) Discovers() bool { return h.discovering() != nil }

// DHT returns the host's Kademlia DHT, nil if it runs none.
func (h *Host) DHT() *dht.IpfsDHT {
	if ds := h.discovering(); ds != nil {
		return ds.dht
	}
	return nil
}

// Providers looks up providers of root in the DHT and sends each one but
// this host to found, until ctx is done or the lookup ends. Without a DHT
// it returns at once.
func (h *Host) Providers(ctx context.Context, root chunker.ID, found func(lpeer.AddrInfo)) {
	h.discovering().providers(ctx, root, found)
}

// LANPeers are the peers found on the LAN (Discovery.MDNS) and connected to
// so far.
func (h *Host) LANPeers() []lpeer.ID {
	return h.discovering().lanPeers()
}

// startDiscovery starts the DHT and mDNS of h as d says, until ctx is
// done; cancel cancels ctx (it is called on failure, and by close).
func startDiscovery(ctx context.Context, cancel context.CancelFunc, h host.Host, d Discovery, announce func() []chunker.ID, log *slog.Logger, clk clock.Clock) (*discovery, error) {
	ds := &discovery{clk: clk, h: h, ctx: ctx, cancel: cancel, log: log, announce: announce, d: d, announced: make(map[chunker.ID]time.Time), withRelay: make(map[chunker.ID]bool), local: make(map[chunker.ID]bool), lan: make(map[lpeer.ID]struct{}), dialing: make(map[lpeer.ID]struct{})}
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
			cancel()
			return nil, fmt.Errorf("hostkit: start DHT: %w", err)
		}
		ds.dht = kd
		for _, ai := range boot {
			ai := ai
			go func() {
				ctx, cancel := clock.WithTimeout(ctx, ds.clk, 10*time.Second)
				defer cancel()
				if err := h.Connect(ctx, ai); err != nil {
					log.Info("bootstrap peer unreachable", "peer", ai.ID, "err", err)
				}
			}()
		}
		if err := kd.Bootstrap(ctx); err != nil {
			cancel()
			kd.Close()
			return nil, fmt.Errorf("hostkit: bootstrap DHT: %w", err)
		}
		ds.wg.Add(1)
		go ds.announceLoop()
	}
	if d.MDNS {
		m := mdns.NewMdnsService(h, MDNSService, (*lanNotifee)(ds))
		if err := m.Start(); err != nil {
			ds.close()
			return nil, fmt.Errorf("hostkit: start mDNS: %w", err)
		}
		ds.mdns = m
	}
	return ds, nil
}

// close ends the loops and dials, closes mDNS and the DHT and waits for
// the announce loop.
func (ds *discovery) close() error {
	ds.cancel()
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

// announceLoop announces every root ds.announce returns (polling each
// second), again every Reannounce, and again once the host has a relay
// address if it had none when it announced (the record then carries an
// address peers behind other NATs can dial), until ds.ctx is done.
func (ds *discovery) announceLoop() {
	defer ds.wg.Done()
	t := ds.clk.NewTicker(time.Second)
	defer t.Stop()
	for {
		for _, r := range ds.announce() {
			relayed := hasRelayAddr(ds.h.Addrs())
			ds.mu.Lock()
			last, ok := ds.announced[r]
			gained := relayed && !ds.withRelay[r]
			ds.mu.Unlock()
			if ok && ds.clk.Since(last) < ds.d.Reannounce && !gained {
				// Announced, and not since gaining a relay address (the
				// record's addresses may be all the others can dial).
				continue
			}
			if len(ds.dht.RoutingTable().ListPeers()) == 0 {
				// Nobody to tell yet: keep the record in this peer's own
				// store (DHT clients that ask it find it there) and tell
				// the others once there are some.
				ds.provideLocally(r)
				continue
			}
			ctx, cancel := clock.WithTimeout(ds.ctx, ds.clk, 30*time.Second)
			err := ds.dht.Provide(ctx, RootCID(r), true)
			cancel()
			if err != nil {
				ds.log.Info("announce root", "root", r, "err", err)
				continue
			}
			ds.log.Info("announced root in the DHT", "root", r)
			ds.mu.Lock()
			ds.announced[r] = ds.clk.Now()
			ds.withRelay[r] = relayed
			ds.mu.Unlock()
		}
		select {
		case <-ds.ctx.Done():
			return
		case <-t.Chan():
		}
	}
}

// hasRelayAddr says whether addrs hold a circuit relay address.
func hasRelayAddr(addrs []ma.Multiaddr) bool {
	for _, a := range addrs {
		if IsRelayed(a) {
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
	self := lpeer.AddrInfo{ID: ds.h.ID(), Addrs: ds.h.Addrs()}
	if err := ds.dht.ProviderStore().AddProvider(ds.ctx, RootCID(root).Hash(), self); err != nil {
		ds.log.Info("store own provider record", "root", root, "err", err)
	}
}

// providers looks up providers of root in the DHT and sends each one to
// found, until ctx is done or the lookup ends.
func (ds *discovery) providers(ctx context.Context, root chunker.ID, found func(lpeer.AddrInfo)) {
	if ds == nil || ds.dht == nil {
		return
	}
	for ai := range ds.dht.FindProvidersAsync(ctx, RootCID(root), 0) {
		if ai.ID == ds.h.ID() {
			continue
		}
		found(ai)
	}
}

// lanPeers are the peers found on the LAN and connected to so far.
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
	self := ds.h.ID()
	if ai.ID == self {
		return
	}
	ds.mu.Lock()
	if _, busy := ds.dialing[ai.ID]; busy || len(ds.dialing) >= maxPeers {
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
			t := ds.clk.NewTimer(d)
			defer t.Stop()
			select {
			case <-ds.ctx.Done():
				return false
			case <-t.Chan():
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
			ctx, cancel := clock.WithTimeout(ds.ctx, ds.clk, 10*time.Second)
			err = ds.h.Connect(ctx, ai)
			cancel()
			if err == nil {
				ds.log.Info("found LAN peer", "peer", ai.ID)
				ds.mu.Lock()
				ds.lan[ai.ID] = struct{}{}
				ds.mu.Unlock()
				return
			}
			if sw, ok := ds.h.Network().(interface{ Backoff() *swarm.DialBackoff }); ok {
				sw.Backoff().Clear(ai.ID) // the next try dials at once
			}
		}
		ds.log.Info("LAN peer unreachable", "peer", ai.ID, "err", err)
	}()
}

// Check reports whether d is a Discovery a host can run: its re-announce
// period is not negative (zero: the default).
func (d Discovery) Check() error {
	if d.Reannounce < 0 {
		return errors.New("hostkit: negative re-announce period")
	}
	return nil
}

// Lookup is the progress of a search for a content's providers (package
// peer's WithLookupProgress).
type Lookup struct {
	// Asked counts the DHT queries sent to peers so far.
	Asked int
	// Known is the number of peers in the DHT's routing table now (0: the
	// DHT knows no peer, so nothing can be found through it).
	Known int
	// Found counts the providers found so far (DHT and LAN).
	Found int
	// Seconds is the time since the search began.
	Seconds float64
}
