package natmodel

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// A peer learns that a connection is relayed from its remote address: a
// go-libp2p connection over a circuit v2 relay has /p2p/RELAY/p2p-circuit
// in it (package peer's hostkit.IsRelayed, hostkit.Path). The in-process
// network's connections are all direct, so the model marks those of the
// relayed pairs with such an address (MarkNetwork, MarkConn), and package
// peer's preference for direct sources (sched.Offers.Relayed) works in the
// model as on real hosts.

// CircuitAddr returns the remote address of a connection through relay
// number k, whose peer id is relay:
// /ip4/198.18.0.(k+1)/tcp/4001/p2p/RELAY/p2p-circuit (an address of the
// benchmarking range, never dialled: the relay lives in the model).
func CircuitAddr(relay lpeer.ID, k int) ma.Multiaddr {
	a, err := ma.NewMultiaddr(fmt.Sprintf("/ip4/198.18.%d.%d/tcp/4001/p2p/%s/p2p-circuit", (k+1)>>8&0xff, (k+1)&0xff, relay))
	if err != nil {
		panic(fmt.Sprintf("natmodel: circuit address: %v", err)) // ids and numbers always make one
	}
	return a
}

// RelayAddrs returns the circuit addresses (CircuitAddr) of relays
// relays, their peer ids drawn from seed.
func RelayAddrs(relays int, seed uint64) ([]ma.Multiaddr, error) {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	keys := rand.NewChaCha8(key)
	addrs := make([]ma.Multiaddr, relays)
	for k := range addrs {
		priv, _, err := crypto.GenerateEd25519Key(keys)
		if err != nil {
			return nil, fmt.Errorf("natmodel: relay key: %w", err)
		}
		id, err := lpeer.IDFromPrivateKey(priv)
		if err != nil {
			return nil, fmt.Errorf("natmodel: relay id: %w", err)
		}
		addrs[k] = CircuitAddr(id, k)
	}
	return addrs, nil
}

// MarkNetwork returns n with the connections to every peer for which
// relayOf returns an address (CircuitAddr) marked as relayed through it
// (MarkConn); relayOf returns nil for the peers reached directly.
func MarkNetwork(n network.Network, relayOf func(remote lpeer.ID) ma.Multiaddr) network.Network {
	return &markedNetwork{Network: n, relayOf: relayOf}
}

type markedNetwork struct {
	network.Network
	relayOf func(lpeer.ID) ma.Multiaddr
}

func (n *markedNetwork) mark(cs []network.Conn) []network.Conn {
	out := make([]network.Conn, len(cs))
	for i, c := range cs {
		out[i] = c
		if a := n.relayOf(c.RemotePeer()); a != nil {
			out[i] = MarkConn(c, a)
		}
	}
	return out
}

// ConnsToPeer returns the connections to p, marked.
func (n *markedNetwork) ConnsToPeer(p lpeer.ID) []network.Conn {
	return n.mark(n.Network.ConnsToPeer(p))
}

// Conns returns every connection, marked.
func (n *markedNetwork) Conns() []network.Conn { return n.mark(n.Network.Conns()) }

// MarkConn returns c with addr, a circuit address (CircuitAddr), as its
// remote address: a connection through that relay.
func MarkConn(c network.Conn, addr ma.Multiaddr) network.Conn {
	return &markedConn{Conn: c, addr: addr}
}

type markedConn struct {
	network.Conn
	addr ma.Multiaddr
}

// RemoteMultiaddr returns the circuit address.
func (c *markedConn) RemoteMultiaddr() ma.Multiaddr { return c.addr }

// Stat says the connection is limited, as go-libp2p says of a relayed one.
func (c *markedConn) Stat() network.ConnStats {
	s := c.Conn.Stat()
	s.Limited = true
	return s
}
