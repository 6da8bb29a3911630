// Package wire is the framing of package peer's protocols: length-prefixed
// frames whose first byte names the message, and the small binary messages
// that move blocks (hello, want, block, missing, error, manifest, peers). The
// reconciliation messages themselves are package reconcile's (msgpack,
// versioned); they travel here inside payload frames.
//
// Every decoder takes the bytes of one frame, bounds what it allocates by
// those bytes and by explicit limits, and returns an error wrapping
// ErrMalformed on bad input, never a panic. Reader reads frames of at most a
// given size and grows its buffer only as bytes arrive, so a peer that
// announces a huge frame and sends a few bytes costs a few bytes.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
)

// Errors of the framing, for errors.Is. Package peer uses the same values.
var (
	// ErrFrameTooLarge means a frame is longer than the limit its reader was given.
	ErrFrameTooLarge = errors.New("peer: frame too large")
	// ErrMalformed means bytes do not decode as the message expected.
	ErrMalformed = errors.New("peer: malformed message")
	// ErrRemote means the remote answered with an error frame.
	ErrRemote = errors.New("peer: remote error")
	// ErrUnknownRoot means the remote answered that it does not serve the content.
	ErrUnknownRoot = errors.New("peer: remote does not serve this content")
	// ErrBusy means the remote answered that it has no room for the request
	// now; it may be retried later.
	ErrBusy = errors.New("peer: remote busy")
	// ErrBadBlock means a unit's bytes failed verification against the
	// manifest.
	ErrBadBlock = errors.New("peer: block failed verification")
	// ErrManifestMismatch means a manifest does not hash to the root asked
	// for, or an existing output was made for another manifest.
	ErrManifestMismatch = errors.New("peer: manifest does not match the ticket")
	// ErrNoPeers means no peer could be reached or none had what was needed.
	ErrNoPeers = errors.New("peer: no reachable peer has the content")
	// ErrClosed means the service was closed.
	ErrClosed = errors.New("peer: closed")
)

// A Type is the first byte of a frame: which message it carries.
type Type = byte

// The frames.
//
// Every stream carries frames: a uvarint length followed by that many bytes.
// The first byte of a frame is its message type; the rest is the message:
//
//	Hello    0x01  root-len u8, root, flags u8            (first frame of a request; flags: 1 coded, 2 watch)
//	want     0x02  count uvarint, count × index uvarint   (blocks the fetcher asks for)
//	block    0x03  index uvarint, block bytes             (one verified block)
//	missing  0x04  index uvarint                          (the server lacks that block)
//	error    0x05  message text                           (the request failed)
//	manifest 0x06  manifest bytes (package chunker)       (answer to a manifest request)
//	peers    0x07  count uvarint, count × peer            (other peers holding the content)
//	payload  0x08  bytes of a package reconcile message   (reconciliation request/answer)
//	have     0x09  count uvarint, count × index uvarint   (blocks a side gained, on a watch)
//	place    0x0a  stripes uvarint, count uvarint, count × (stripe uvarint, kind, peer)
//	               (places in a seed's stripe trees, on a join; see AppendPlace)
//	delta    0x0b  first uvarint, count uvarint, signature bytes   (a run asked as a delta)
//	               or delta bytes                          (its answer; see AppendDeltaAsk)
//
// A peer in a peers message is: id-len uvarint, id bytes, naddrs uvarint,
// naddrs × (addr-len uvarint, multiaddr bytes).
//
// Every reader is given the largest frame it accepts; a longer frame resets
// the stream with ErrFrameTooLarge, and buffers grow only as bytes arrive.
const (
	// TypeHello opens a request: the content it is about.
	TypeHello Type = 0x01
	// TypeWant asks for blocks.
	TypeWant Type = 0x02
	// TypeBlock carries one block.
	TypeBlock Type = 0x03
	// TypeMissing says the server lacks a block it was asked for.
	TypeMissing Type = 0x04
	// TypeError ends a request with a reason.
	TypeError Type = 0x05
	// TypeManifest carries a manifest (or a coded header).
	TypeManifest Type = 0x06
	// TypePeers lists other peers of the content.
	TypePeers Type = 0x07
	// TypePayload carries one message of package reconcile.
	TypePayload Type = 0x08
	// TypeHave lists blocks a side of a watch holds (see Hello.Watch).
	TypeHave Type = 0x09
	// TypePlace tells a fetcher its places in a seed's stripe trees
	// (ProtoJoin, see AppendPlace).
	TypePlace Type = 0x0a
	// TypeDelta asks for a run of blocks as a delta against the asker's
	// bytes, or answers with the delta (wire.ProtoDelta).
	TypeDelta Type = 0x0b
)

// helloCoded marks a request about the erasure-coded blocks of a root (Byers).
const helloCoded byte = 1 << 0

// helloWatch asks a reconciliation server to keep the stream as a watch
// (Hello.Watch).
const helloWatch byte = 1 << 1

// helloPlaced marks a placed fetcher's catch-up request (Hello.Placed).
const helloPlaced byte = 1 << 2

// helloHolds marks a join of a fetcher that holds blocks (Hello.Holds).
const helloHolds byte = 1 << 3

// helloPrivate marks a join of a fetcher that others cannot dial
// (Hello.Private).
const helloPrivate byte = 1 << 4

// MaxRootLen bounds the root id carried in a Hello.
const MaxRootLen = 64

// Hello is the first frame of every request: which content it is about.
type Hello struct {
	// Root is the content's root id.
	Root []byte
	// Coded asks about the content's erasure-coded blocks (Byers).
	Coded bool
	// Watch asks a reconciliation server to keep the stream open once it
	// has answered (one-round methods only) and to send a have frame of
	// every block it gains from then on, and the requester sends its own
	// gains the same way, until it closes the stream: after one
	// reconciliation each side learns of a new block of the other a one-way
	// delay after it is stored, as BitTorrent's HAVE messages tell it.
	Watch bool
	// Placed marks a catch-up request (ProtoAdopt) of a fetcher that a
	// seed placed under the peer asked (ProtoJoin): the peer waits a
	// little for the seed's word of its new child, rather than take it
	// for an orphan.
	Placed bool
	// Holds marks a join (ProtoJoin) of a fetcher that holds blocks of
	// the content already (an update of an older version, a resumed
	// fetch): the seed does not push a stripe's every block to it as a
	// new root, but what its catch-up request (ProtoAdopt) says it lacks.
	Holds bool
	// Private marks a join (ProtoJoin) of a fetcher that other peers
	// cannot dial (behind a NAT: its host found itself unreachable): the
	// seed places it under no other such fetcher, so that one of each
	// parent and child can dial the other.
	Private bool
}

// Append appends the hello frame.
func (h Hello) Append(b []byte) []byte {
	b = append(b, TypeHello, byte(len(h.Root)))
	b = append(b, h.Root...)
	var flags byte
	if h.Coded {
		flags |= helloCoded
	}
	if h.Watch {
		flags |= helloWatch
	}
	if h.Placed {
		flags |= helloPlaced
	}
	if h.Holds {
		flags |= helloHolds
	}
	if h.Private {
		flags |= helloPrivate
	}
	return append(b, flags)
}

// DecodeHello decodes a hello frame, refusing unknown flags and roots longer
// than MaxRootLen. The root is copied.
func DecodeHello(f []byte) (Hello, error) {
	if len(f) < 3 || f[0] != TypeHello {
		return Hello{}, fmt.Errorf("%w: not a hello", ErrMalformed)
	}
	n := int(f[1])
	if n == 0 || n > MaxRootLen || len(f) != 2+n+1 {
		return Hello{}, fmt.Errorf("%w: hello of %d bytes with a %d-byte root", ErrMalformed, len(f), n)
	}
	flags := f[2+n]
	if flags&^(helloCoded|helloWatch|helloPlaced|helloHolds|helloPrivate) != 0 {
		return Hello{}, fmt.Errorf("%w: unknown hello flags %#x", ErrMalformed, flags)
	}
	return Hello{Root: append([]byte(nil), f[2:2+n]...), Coded: flags&helloCoded != 0, Watch: flags&helloWatch != 0,
		Placed: flags&helloPlaced != 0, Holds: flags&helloHolds != 0, Private: flags&helloPrivate != 0}, nil
}

// AppendWant encodes a request for the blocks idx.
func AppendWant(b []byte, idx []int) []byte { return appendIndices(b, TypeWant, idx) }

// DecodeWant decodes a want frame into dst, refusing more than max indices or
// any index >= limit. It allocates nothing beyond dst's growth to the count
// the frame's bytes can hold.
func DecodeWant(dst []int, f []byte, max, limit int) ([]int, error) {
	return decodeIndices(dst, f, TypeWant, "want", max, limit)
}

// AppendHave encodes the blocks idx as held (on a watch, Hello.Watch).
func AppendHave(b []byte, idx []int) []byte { return appendIndices(b, TypeHave, idx) }

// DecodeHave decodes a have frame into dst, refusing more than max indices
// or any index >= limit, as DecodeWant does; an error frame is the remote's
// error (the watch ended).
func DecodeHave(dst []int, f []byte, max, limit int) ([]int, error) {
	if len(f) > 0 && f[0] == TypeError {
		return dst, DecodeError(f)
	}
	return decodeIndices(dst, f, TypeHave, "have", max, limit)
}

// appendIndices encodes a frame of type t listing idx: a count, then each
// index, uvarints.
func appendIndices(b []byte, t Type, idx []int) []byte {
	b = append(b, t)
	b = binary.AppendUvarint(b, uint64(len(idx)))
	for _, i := range idx {
		b = binary.AppendUvarint(b, uint64(i))
	}
	return b
}

// decodeIndices decodes a frame of type t (named what in errors) listing
// at most max indices, each below limit, into dst.
func decodeIndices(dst []int, f []byte, t Type, what string, max, limit int) ([]int, error) {
	if len(f) < 2 || f[0] != t {
		return dst, fmt.Errorf("%w: not a %s", ErrMalformed, what)
	}
	f = f[1:]
	n, k := binary.Uvarint(f)
	if k <= 0 {
		return dst, fmt.Errorf("%w: %s count", ErrMalformed, what)
	}
	f = f[k:]
	if n > uint64(max) || n > uint64(len(f)) {
		return dst, fmt.Errorf("%w: %s of %d blocks (limit %d, %d bytes)", ErrMalformed, what, n, max, len(f))
	}
	dst = dst[:0]
	for range n {
		v, k := binary.Uvarint(f)
		if k <= 0 {
			return dst, fmt.Errorf("%w: %s index", ErrMalformed, what)
		}
		if v >= uint64(limit) {
			return dst, fmt.Errorf("%w: %s index %d of %d blocks", ErrMalformed, what, v, limit)
		}
		dst = append(dst, int(v))
		f = f[k:]
	}
	if len(f) != 0 {
		return dst, fmt.Errorf("%w: %d bytes after %s", ErrMalformed, len(f), what)
	}
	return dst, nil
}

// AppendBlockHeader encodes the head of a block frame; the block bytes follow.
func AppendBlockHeader(b []byte, idx int) []byte {
	return binary.AppendUvarint(append(b, TypeBlock), uint64(idx))
}

// AppendMissing encodes "I do not hold block idx".
func AppendMissing(b []byte, idx int) []byte {
	return binary.AppendUvarint(append(b, TypeMissing), uint64(idx))
}

// DecodeBlock decodes a block or missing frame. data aliases f; it is nil for
// a missing frame (ok false).
func DecodeBlock(f []byte, limit int) (idx int, data []byte, ok bool, err error) {
	if len(f) < 2 || (f[0] != TypeBlock && f[0] != TypeMissing) {
		if len(f) > 0 && f[0] == TypeError {
			return 0, nil, false, DecodeError(f)
		}
		return 0, nil, false, fmt.Errorf("%w: not a block", ErrMalformed)
	}
	v, k := binary.Uvarint(f[1:])
	if k <= 0 {
		return 0, nil, false, fmt.Errorf("%w: block index", ErrMalformed)
	}
	if v >= uint64(limit) {
		return 0, nil, false, fmt.Errorf("%w: block index %d of %d", ErrMalformed, v, limit)
	}
	if f[0] == TypeMissing {
		if 1+k != len(f) {
			return 0, nil, false, fmt.Errorf("%w: bytes after missing", ErrMalformed)
		}
		return int(v), nil, false, nil
	}
	return int(v), f[1+k:], true, nil
}

// MaxErrorText bounds the text of an error frame we send or show.
const MaxErrorText = 256

// AppendError appends an error frame of msg, cut to MaxErrorText bytes.
func AppendError(b []byte, msg string) []byte {
	if len(msg) > MaxErrorText {
		msg = msg[:MaxErrorText]
	}
	return append(append(b, TypeError), msg...)
}

// DecodeError turns an error frame into an error wrapping ErrRemote (or
// ErrUnknownRoot when the remote says so).
func DecodeError(f []byte) error {
	if len(f) < 1 || f[0] != TypeError {
		return fmt.Errorf("%w: not an error", ErrMalformed)
	}
	text := f[1:]
	if len(text) > MaxErrorText {
		text = text[:MaxErrorText]
	}
	msg := sanitize(string(text))
	switch msg {
	case UnknownRootText:
		return ErrUnknownRoot
	case BusyText:
		return ErrBusy
	}
	return fmt.Errorf("%w: %s", ErrRemote, msg)
}

// UnknownRootText is the error text a server sends for content it does not serve.
const UnknownRootText = "unknown root"

// BusyText is the error text a server sends when it has no room for a
// request now (a full share of its slots); the request may be retried.
const BusyText = "busy"

// sanitize keeps printable ASCII so a remote cannot write control sequences to
// our terminal.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

// DecodeTyped checks that f is of type t and returns its body, turning an
// error frame into the remote's error.
func DecodeTyped(f []byte, t byte) ([]byte, error) {
	if len(f) == 0 {
		return nil, fmt.Errorf("%w: empty frame", ErrMalformed)
	}
	if f[0] == TypeError && t != TypeError {
		return nil, DecodeError(f)
	}
	if f[0] != t {
		return nil, fmt.Errorf("%w: message type %#x, want %#x", ErrMalformed, f[0], t)
	}
	return f[1:], nil
}

// Bounds of a peers message.
const (
	// MaxPeersListed is the most peers in one peers message.
	MaxPeersListed = 64
	// MaxAddrsListed is the most addresses of one listed peer.
	MaxAddrsListed = 16
	// MaxIDLen bounds a listed peer id's bytes.
	MaxIDLen = 128
	// MaxAddrLen bounds a listed multiaddr's bytes.
	MaxAddrLen = 256
)

// AppendPeers encodes a peers message of at most MaxPeersListed peers with at
// most MaxAddrsListed addresses each.
func AppendPeers(b []byte, infos []lpeer.AddrInfo) []byte {
	if len(infos) > MaxPeersListed {
		infos = infos[:MaxPeersListed]
	}
	b = append(b, TypePeers)
	b = binary.AppendUvarint(b, uint64(len(infos)))
	for _, ai := range infos {
		b = appendPeer(b, ai)
	}
	return b
}

// DecodePeers decodes a peers message, refusing anything beyond the bounds
// AppendPeers keeps.
func DecodePeers(f []byte) ([]lpeer.AddrInfo, error) {
	body, err := DecodeTyped(f, TypePeers)
	if err != nil {
		return nil, err
	}
	d := decoder{b: body}
	n := d.count(MaxPeersListed)
	var out []lpeer.AddrInfo
	for i := 0; i < n && d.err == nil; i++ {
		ai, err := d.peer(false)
		if err != nil {
			return nil, err
		}
		if d.err == nil {
			out = append(out, ai)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after peers", ErrMalformed, len(d.b))
	}
	return out, nil
}

// decoder reads uvarints and length-prefixed byte strings, keeping the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.err = fmt.Errorf("%w: truncated varint", ErrMalformed)
		return 0
	}
	d.b = d.b[k:]
	return v
}

// count reads a count of items that each take at least one byte.
func (d *decoder) count(max int) int {
	v := d.uvarint()
	if d.err == nil && (v > uint64(max) || v > uint64(len(d.b))) {
		d.err = fmt.Errorf("%w: count %d (limit %d, %d bytes left)", ErrMalformed, v, max, len(d.b))
		return 0
	}
	return int(v)
}

func (d *decoder) bytes(max int) []byte {
	v := d.uvarint()
	if d.err != nil {
		return nil
	}
	if v > uint64(max) || v > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: %d-byte field (limit %d, %d bytes left)", ErrMalformed, v, max, len(d.b))
		return nil
	}
	out := d.b[:v]
	d.b = d.b[v:]
	return out
}
