package wire

import (
	"encoding/binary"
	"fmt"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// PlaceKind is what a Placement changes.
type PlaceKind byte

const (
	// PlaceParent: Peer is the fetcher's parent in the stripe from now on
	// (an empty id: none, the fetcher pulls the stripe).
	PlaceParent PlaceKind = iota
	// PlaceChild: Peer is a new child of the fetcher in the stripe.
	PlaceChild
	// PlaceDrop: Peer is no longer the fetcher's child in the stripe.
	PlaceDrop
)

// Placement is one change of a fetcher's places in a seed's stripe trees,
// sent on its join (ProtoJoin).
type Placement struct {
	Stripe int
	Kind   PlaceKind
	// Peer is the parent or child, with the addresses the seed knows of
	// it.
	Peer lpeer.AddrInfo
}

// MaxPlacements bounds the placements of one place frame; a sender splits
// longer lists.
const MaxPlacements = 256

// AppendPlace encodes a place frame: the trees' stripe count and at most
// MaxPlacements placements (the rest are left out: split them).
func AppendPlace(b []byte, stripes int, ps []Placement) []byte {
	ps = ps[:min(len(ps), MaxPlacements)]
	b = append(b, TypePlace)
	b = binary.AppendUvarint(b, uint64(stripes))
	b = binary.AppendUvarint(b, uint64(len(ps)))
	for _, p := range ps {
		b = binary.AppendUvarint(b, uint64(p.Stripe))
		b = append(b, byte(p.Kind))
		b = appendPeer(b, p.Peer)
	}
	return b
}

// DecodePlace decodes a place frame of at most maxStripes stripes, each
// placement's stripe below the count, and its kind one of the three.
func DecodePlace(f []byte, maxStripes int) (stripes int, ps []Placement, err error) {
	body, err := DecodeTyped(f, TypePlace)
	if err != nil {
		return 0, nil, err
	}
	d := decoder{b: body}
	k := d.uvarint()
	if d.err == nil && (k == 0 || k > uint64(maxStripes)) {
		return 0, nil, fmt.Errorf("%w: %d stripes (1 to %d)", ErrMalformed, k, maxStripes)
	}
	n := d.count(MaxPlacements)
	for i := 0; i < n && d.err == nil; i++ {
		s := d.uvarint()
		if d.err != nil {
			break
		}
		if s >= k || len(d.b) == 0 {
			return 0, nil, fmt.Errorf("%w: a placement in stripe %d of %d", ErrMalformed, s, k)
		}
		kind := PlaceKind(d.b[0])
		d.b = d.b[1:]
		if kind > PlaceDrop {
			return 0, nil, fmt.Errorf("%w: placement kind %d", ErrMalformed, kind)
		}
		ai, err := d.peer(kind == PlaceParent)
		if err != nil {
			return 0, nil, err
		}
		ps = append(ps, Placement{Stripe: int(s), Kind: kind, Peer: ai})
	}
	if d.err != nil {
		return 0, nil, d.err
	}
	if len(d.b) != 0 {
		return 0, nil, fmt.Errorf("%w: %d bytes after placements", ErrMalformed, len(d.b))
	}
	return int(k), ps, nil
}

// appendPeer encodes a peer of a peers or place frame: id-len uvarint, id
// bytes, naddrs uvarint, naddrs × (addr-len uvarint, multiaddr bytes), at
// most MaxAddrsListed addresses.
func appendPeer(b []byte, ai lpeer.AddrInfo) []byte {
	id := []byte(ai.ID)
	b = binary.AppendUvarint(b, uint64(len(id)))
	b = append(b, id...)
	addrs := ai.Addrs
	if len(addrs) > MaxAddrsListed {
		addrs = addrs[:MaxAddrsListed]
	}
	b = binary.AppendUvarint(b, uint64(len(addrs)))
	for _, a := range addrs {
		ab := a.Bytes()
		b = binary.AppendUvarint(b, uint64(len(ab)))
		b = append(b, ab...)
	}
	return b
}

// peer decodes a peer appendPeer encoded; an empty id (none) only where
// empty allows it. A truncated field is left in d.err.
func (d *decoder) peer(empty bool) (lpeer.AddrInfo, error) {
	idb := d.bytes(MaxIDLen)
	if d.err != nil {
		return lpeer.AddrInfo{}, nil
	}
	var ai lpeer.AddrInfo
	if len(idb) > 0 || !empty {
		id, err := lpeer.IDFromBytes(idb)
		if err != nil {
			return ai, fmt.Errorf("%w: peer id: %v", ErrMalformed, err)
		}
		ai.ID = id
	}
	na := d.count(MaxAddrsListed)
	for j := 0; j < na && d.err == nil; j++ {
		ab := d.bytes(MaxAddrLen)
		if d.err != nil {
			break
		}
		a, err := ma.NewMultiaddrBytes(ab)
		if err != nil {
			return ai, fmt.Errorf("%w: multiaddr: %v", ErrMalformed, err)
		}
		ai.Addrs = append(ai.Addrs, a)
	}
	return ai, nil
}
