package hostkit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	_ "unsafe" // go:linkname of swarm's addConn, see swarmAddConn

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/transport"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	circuitproto "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/proto"
	"github.com/libp2p/go-libp2p/p2p/protocol/identify"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Relay connections over every transport.
//
// Two peers behind NATs that met through a relay punch a hole only over a
// transport on which both were observed, and a host learns its observed
// address on a transport only from a connection over it. A relay reached
// over TCP alone (the dial ranker tries TCP first; AutoRelay's dial and
// the circuit transport's end with the first connection) leaves DCUtR
// only TCP, whose simultaneous open a NAT that answers unsolicited SYNs
// with a reset refuses; QUIC gets through such NATs (docs/nat-testbed.md).
// So a host that punches holes holds a connection to each relay it uses
// over each transport both of them speak: after identify with a relay
// (a peer offering the circuit v2 hop protocol), it dials the transports
// the relay offers that it has no connection over yet.
//
// go-libp2p's swarm opens no second connection to a connected peer
// (DialPeer returns the first), and has no exported call that adds one,
// so the second connection is dialed through the transport and handed to
// the swarm's own addConn (swarmAddConn), as its dial worker does for
// connections that land while a dial is pending.

//go:linkname swarmAddConn github.com/libp2p/go-libp2p/p2p/net/swarm.(*Swarm).addConn
func swarmAddConn(s *swarm.Swarm, tc transport.CapableConn, dir network.Direction) (*swarm.Conn, error)

// relayConnWait bounds how long ReachRelays waits for a relay's
// connections and their identify.
const relayConnWait = 3 * time.Second

// errNoSwarm is returned when the host's network is not go-libp2p's swarm.
var errNoSwarm = errors.New("hostkit: the host's network is not go-libp2p's swarm")

// relayConns keeps the relay connections of a Host per transport.
type relayConns struct {
	mu      sync.Mutex
	pending map[lpeer.ID]chan struct{} // closed when that relay's round ends
}

// ConnectOver opens a connection to peer id at addr, a direct address,
// beside any the host holds to it, and waits for identify on it (bounded
// by ctx). Where the host already holds a direct connection over addr's
// transport it returns that one.
func (h *Host) ConnectOver(ctx context.Context, id lpeer.ID, addr ma.Multiaddr) (network.Conn, error) {
	if IsRelayed(addr) {
		return nil, fmt.Errorf("hostkit: connect over %s: a relay address", addr)
	}
	tr := TransportOf(addr)
	for _, c := range h.Network().ConnsToPeer(id) {
		if a := c.RemoteMultiaddr(); !IsRelayed(a) && TransportOf(a) == tr {
			return c, nil
		}
	}
	sw, ok := h.Network().(*swarm.Swarm)
	if !ok {
		return nil, errNoSwarm
	}
	if h.conns.isBanned(id) || h.conns.addrRefused(addr) {
		return nil, fmt.Errorf("hostkit: connect over %s: peer or address banned", addr)
	}
	t := sw.TransportForDialing(addr)
	if t == nil {
		return nil, fmt.Errorf("hostkit: connect over %s: no transport dials it", addr)
	}
	tc, err := t.Dial(ctx, addr, id)
	if err != nil {
		return nil, fmt.Errorf("hostkit: connect over %s: %w", addr, err)
	}
	if tc.RemotePeer() != id {
		tc.Close()
		return nil, fmt.Errorf("hostkit: connect over %s: reached %s, not %s", addr, tc.RemotePeer(), id)
	}
	c, err := swarmAddConn(sw, tc, network.DirOutbound)
	if err != nil {
		tc.Close()
		return nil, fmt.Errorf("hostkit: connect over %s: %w", addr, err)
	}
	if ids, ok := h.Host.(interface{ IDService() identify.IDService }); ok {
		select {
		case <-ids.IDService().IdentifyWait(c):
		case <-ctx.Done():
			return c, ctx.Err()
		}
	}
	return c, nil
}

// connectAllTransports gives the host a direct connection to peer id over
// every transport of the host's own listen addresses that id has an
// address for, dialing those it lacks one after another (the addresses of
// a transport in the peerstore's order, public ones first). It needs a
// direct connection to id already (the one identify learned id's addresses
// over). A transport it cannot reach is logged (debug) and left to the
// first connection.
func (h *Host) connectAllTransports(ctx context.Context, id lpeer.ID) {
	have := map[string]bool{}
	ip4 := true
	direct := false
	for _, c := range h.Network().ConnsToPeer(id) {
		if a := c.RemoteMultiaddr(); !IsRelayed(a) {
			have[TransportOf(a)] = true
			direct = true
			if _, err := a.ValueForProtocol(ma.P_IP4); err != nil {
				ip4 = false
			}
		}
	}
	if !direct {
		return
	}
	mine := map[string]bool{}
	for _, a := range h.Network().ListenAddresses() {
		mine[TransportOf(a)] = true
	}
	addrs := slices.Clone(h.Peerstore().Addrs(id))
	slices.SortStableFunc(addrs, func(a, b ma.Multiaddr) int {
		return boolOrder(!manet.IsPublicAddr(a), !manet.IsPublicAddr(b))
	})
	for _, tr := range []string{"tcp", "quic"} {
		if have[tr] || !mine[tr] {
			continue
		}
		for _, a := range addrs {
			if IsRelayed(a) || TransportOf(a) != tr || isIP4(a) != ip4 {
				continue
			}
			if _, err := h.ConnectOver(ctx, id, a); err != nil {
				h.log.Debug("relay connection over a second transport", "relay", id, "addr", a, "err", err)
				continue
			}
			h.log.Debug("relay connection over a second transport", "relay", id, "addr", a)
			break
		}
	}
}

func isIP4(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_IP4)
	return err == nil
}

func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// relayRound runs connectAllTransports for relay id once at a time: a
// second caller waits for the round in flight (bounded by ctx) instead of
// dialing the same addresses again.
func (h *Host) relayRound(ctx context.Context, id lpeer.ID) {
	h.relays.mu.Lock()
	if h.relays.pending == nil {
		h.relays.pending = map[lpeer.ID]chan struct{}{}
	}
	if ch, ok := h.relays.pending[id]; ok {
		h.relays.mu.Unlock()
		select {
		case <-ch:
			return
		case <-ctx.Done():
			return
		}
	}
	ch := make(chan struct{})
	h.relays.pending[id] = ch
	h.relays.mu.Unlock()
	defer func() {
		h.relays.mu.Lock()
		delete(h.relays.pending, id)
		h.relays.mu.Unlock()
		close(ch)
	}()
	h.connectAllTransports(ctx, id)
}

// watchRelays connects to every relay over each transport after identify
// with it (see the comment at the top of this file), for the life of the
// host.
func (h *Host) watchRelays() error {
	err := h.onEvent(new(event.EvtPeerIdentificationCompleted), func(e any) {
		ev := e.(event.EvtPeerIdentificationCompleted)
		if !slices.Contains(ev.Protocols, circuitproto.ProtoIDv2Hop) {
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(h.ctx, relayConnWait)
			defer cancel()
			h.relayRound(ctx, ev.Peer)
		}()
	})
	if err != nil {
		return fmt.Errorf("hostkit: watch relays: %w", err)
	}
	return nil
}

// ReachRelays prepares a connection to ai when some of its addresses are
// circuit relay addresses, on a host that punches holes (Reach.HolePunch):
// it connects to each relay they name and then over each transport both
// speak (waiting for identify on every connection), so that the DCUtR
// exchange that follows the relayed connection carries the host's observed
// address on every transport; not when ai has a public direct address (a
// relay is then its fallback, not its way in). It waits at most
// relayConnWait and returns
// no error: a relay it cannot reach is left to the dial of ai, which fails
// or goes around it as it would have.
func (h *Host) ReachRelays(ctx context.Context, ai lpeer.AddrInfo) {
	if !h.cfg.Reach.HolePunch || !h.cfg.Reach.RelayClient {
		return
	}
	relays := map[lpeer.ID][]ma.Multiaddr{}
	for _, a := range ai.Addrs {
		if !IsRelayed(a) && manet.IsPublicAddr(a) {
			return // reachable directly, most likely: no relay to wait for
		}
	}
	for _, a := range ai.Addrs {
		if !IsRelayed(a) {
			continue
		}
		before, _ := ma.SplitFunc(a, func(c ma.Component) bool { return c.Protocol().Code == ma.P_CIRCUIT })
		ri, err := lpeer.AddrInfoFromP2pAddr(before)
		if err != nil || ri.ID == h.ID() || ri.ID == ai.ID {
			continue
		}
		relays[ri.ID] = append(relays[ri.ID], ri.Addrs...)
	}
	if len(relays) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, relayConnWait)
	defer cancel()
	var wg sync.WaitGroup
	for id, addrs := range relays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.Connect(ctx, lpeer.AddrInfo{ID: id, Addrs: addrs}); err != nil {
				h.log.Debug("relay unreachable before a relayed dial", "relay", id, "err", err)
				return
			}
			h.relayRound(ctx, id)
		}()
	}
	wg.Wait()
}
