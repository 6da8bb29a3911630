// Package hostkit builds the libp2p host that package peer's New runs its
// service on: a host with batteries, apart from the service that mounts on
// any host (as go-libp2p keeps ping.NewPingService apart from libp2p.New).
//
// [New] builds a [Host] from a [Config]: TCP and QUIC v1 transports (TCP
// dialled first, [TCPFirst]), TLS 1.3 and Noise, yamux, a resource manager
// with the given limits ([ResourceLimits] computes them) that refuses the
// streams of the peers a caller's check names ([Host.SetBanned]), and an
// identity that is either given, fresh, or kept in a key file readable by
// its owner only ([LoadOrCreateKey]).
//
// # Reachability
//
// [Reach] puts go-libp2p's own reachability parts into the host, each with
// its switch ([DefaultReach] turns all on; the zero Reach none, for a host
// that only dials and is dialled directly): AutoNAT v2 (and the v1 service
// for others), NAT port mapping, the circuit relay v2 client with AutoRelay
// (static relays, or relays found in the DHT's routing table), and DCUtR
// hole punching. [Host.Path] says how the host is connected to a peer
// ([PathDirect], [PathHolePunched], [PathRelayed]), and [Host.AwaitDirect]
// gives hole punching a few seconds before a caller moves data over a relay.
//
// # Discovery
//
// [Host.StartDiscovery] runs the Kademlia DHT ([Discovery].DHT, a private
// one under [DHTPrefix] by default, or the public Amino DHT) and mDNS on the
// LAN ([MDNSService]) that the Config asks for. The DHT announces the roots
// a callback names as provider records under [RootCID], and
// [Host.Providers] looks them up; the peers mDNS finds are dialled and
// listed by [Host.LANPeers].
//
// The package knows nothing of package peer's service: what it needs of it
// comes in as callbacks (the ban check, the roots to announce).
package hostkit
