package peer

import (
	"fmt"
	"strings"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/multiformats/go-multibase"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// ticketVersion is the first byte of an encoded ticket.
const ticketVersion = 1

// maxTicketLen bounds the text ParseTicket accepts.
const maxTicketLen = 16 << 10

// A Ticket is everything a fetcher needs to start: the root id of the content
// (the id of its manifest) and at least one peer that serves it, with its
// addresses. Its text form is one copyable token.
type Ticket struct {
	// Root is the id of the manifest of the content.
	Root chunker.ID
	// Peers serve the content; the first is usually the seed that made the ticket.
	Peers []lpeer.AddrInfo
}

// String encodes the ticket as one token: the multibase base32 (lower case,
// prefix "b") encoding of a version byte, the 32-byte root and a peers list
// in the wire format of the peers message.
func (t Ticket) String() string {
	b := []byte{ticketVersion}
	b = append(b, t.Root[:]...)
	b = wire.AppendPeers(b, t.Peers)
	s, err := multibase.Encode(multibase.Base32, b)
	if err != nil { // Base32 is always supported.
		panic(err)
	}
	return s
}

// MarshalText implements encoding.TextMarshaler with String's form.
func (t Ticket) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseTicket.
func (t *Ticket) UnmarshalText(b []byte) error {
	v, err := ParseTicket(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ParseTicket decodes a ticket made by String. Any multibase encoding is
// accepted; surrounding white space is ignored. Errors wrap ErrBadTicket.
func ParseTicket(s string) (Ticket, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxTicketLen {
		return Ticket{}, fmt.Errorf("%w: %d characters (limit %d)", ErrBadTicket, len(s), maxTicketLen)
	}
	if len(s) < 2 {
		return Ticket{}, fmt.Errorf("%w: empty", ErrBadTicket)
	}
	_, b, err := multibase.Decode(s)
	if err != nil {
		return Ticket{}, fmt.Errorf("%w: not a ticket token (%v)", ErrBadTicket, err)
	}
	if len(b) < 1+chunker.HashSize+2 || b[0] != ticketVersion {
		return Ticket{}, fmt.Errorf("%w: not a version-%d ticket", ErrBadTicket, ticketVersion)
	}
	var t Ticket
	copy(t.Root[:], b[1:1+chunker.HashSize])
	peers, err := wire.DecodePeers(b[1+chunker.HashSize:])
	if err != nil {
		why := strings.TrimPrefix(err.Error(), ErrMalformed.Error()+": ")
		return Ticket{}, fmt.Errorf("%w: cut short or damaged (%s)", ErrBadTicket, why)
	}
	if len(peers) == 0 {
		return Ticket{}, fmt.Errorf("%w: no peer", ErrBadTicket)
	}
	t.Peers = peers
	return t, nil
}

// TicketAddrs returns the addresses of addrs worth putting in a ticket, the
// ones useful from another host, in their order: loopback (127.0.0.0/8, ::1)
// and link-local (169.254.0.0/16, fe80::/10) addresses are left out, unless
// every direct address is one of those (a seed listening on loopback only,
// for a test or a demo, keeps them). Private addresses (RFC 1918,
// 100.64.0.0/10, fc00::/7) stay, as LANs need them, and so do relay
// (/p2p-circuit) addresses, whatever the relay's address.
func TicketAddrs(addrs []ma.Multiaddr) []ma.Multiaddr {
	local := func(a ma.Multiaddr) bool {
		if manet.IsIPLoopback(a) || manet.IsIP6LinkLocal(a) {
			return true
		}
		ip, err := manet.ToIP(a)
		return err == nil && (ip.IsLinkLocalUnicast() || ip.IsLoopback())
	}
	var out []ma.Multiaddr
	global := false // a direct address useful from elsewhere
	for _, a := range addrs {
		switch {
		case isRelayed(a):
			out = append(out, a)
		case !local(a):
			out = append(out, a)
			global = true
		}
	}
	if !global {
		// Every direct address (if any) is loopback or link-local: keep them all.
		return append([]ma.Multiaddr(nil), addrs...)
	}
	return out
}

// Ticket returns a ticket for the content with the given root naming this
// peer alone, with the addresses of TicketAddrs.
func (p *Service) Ticket(root chunker.ID) Ticket {
	ai := p.AddrInfo()
	ai.Addrs = TicketAddrs(ai.Addrs)
	return Ticket{Root: root, Peers: []lpeer.AddrInfo{ai}}
}

// AddrInfo is a peer id and its addresses (libp2p's peer.AddrInfo), as tickets carry them.
type AddrInfo = lpeer.AddrInfo
