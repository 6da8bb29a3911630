package peer

import (
	"time"

	"github.com/ipfs/go-cid"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
)

// Reach chooses the reachability parts of go-libp2p that New puts into its
// host (see the package doc, "Reachability"). The zero Reach enables none
// of them (a host that only dials and is dialled directly); DefaultReach
// enables all, as the command line tool does. It is hostkit.Reach.
type Reach = hostkit.Reach

// DefaultReach is every reachability part on, with no static relay and
// relays found through the DHT.
func DefaultReach() Reach { return hostkit.DefaultReach() }

// WithReach sets the reachability parts of the host New builds (New only).
// Default: the zero Reach (none).
func WithReach(r Reach) Option {
	return func(c *config) error {
		if err := r.Check(); err != nil {
			return err
		}
		c.ext().reach = r
		c.hostOpts = true
		return nil
	}
}

// Discovery chooses how New's peer finds others by content (see the package
// doc, "Discovery"). The zero Discovery finds peers only from tickets and
// peer exchange. It is hostkit.Discovery.
type Discovery = hostkit.Discovery

// DHTMode says whether a peer answers DHT queries.
type DHTMode = hostkit.DHTMode

// The DHT modes (Discovery.DHT).
const (
	// DHTOff runs no DHT.
	DHTOff = hostkit.DHTOff
	// DHTClient queries and announces but answers no query (peers behind NAT).
	DHTClient = hostkit.DHTClient
	// DHTServer also stores records and answers queries (public peers, relays).
	DHTServer = hostkit.DHTServer
	// DHTAuto is a client until AutoNAT finds the host reachable, then a server.
	DHTAuto = hostkit.DHTAuto
)

// DHTPrefix is the protocol prefix of this tool's own (private) Kademlia DHT:
// its peers speak /reconcile/kad/1.0.0 and never meet the public IPFS DHT.
const DHTPrefix = hostkit.DHTPrefix

// AminoPrefix is the protocol prefix of the public IPFS Amino DHT.
const AminoPrefix = hostkit.AminoPrefix

// MDNSService is the mDNS service name peers of this tool announce on a LAN.
const MDNSService = hostkit.MDNSService

// WithDiscovery sets how New's peer discovers others (New only). Default:
// the zero Discovery (none).
func WithDiscovery(d Discovery) Option {
	return func(c *config) error {
		if err := d.Check(); err != nil {
			return err
		}
		if d.Reannounce == 0 {
			d.Reannounce = time.Hour
		}
		c.ext().disc = d
		c.hostOpts = true
		return nil
	}
}

// RootCID is the CID under which root is announced in the DHT: CID v1, raw
// codec, with the blake3 multihash of the root id (the root id is the blake3
// hash of the manifest). It is hostkit.RootCID.
func RootCID(root chunker.ID) cid.Cid { return hostkit.RootCID(root) }

// The paths a fetch's blocks took from a peer (PeerShare.Path).
const (
	// PathDirect is a direct connection that was never relayed.
	PathDirect = hostkit.PathDirect
	// PathHolePunched is a direct connection to a peer first reached through
	// a relay (DCUtR hole punching upgraded it).
	PathHolePunched = hostkit.PathHolePunched
	// PathRelayed is a circuit relay v2 connection only.
	PathRelayed = hostkit.PathRelayed
)
