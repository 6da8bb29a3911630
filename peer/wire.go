package peer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// The wire format of the peer protocols.
//
// Every stream carries frames: a uvarint length followed by that many bytes.
// The first byte of a frame is its message type; the rest is the message:
//
//	hello    0x01  root-len u8, root, flags u8            (first frame of a request)
//	want     0x02  count uvarint, count × index uvarint   (blocks the fetcher asks for)
//	block    0x03  index uvarint, block bytes             (one verified block)
//	missing  0x04  index uvarint                          (the server lacks that block)
//	error    0x05  message text                           (the request failed)
//	manifest 0x06  manifest bytes (package chunker)       (answer to a manifest request)
//	peers    0x07  count uvarint, count × peer            (other peers holding the content)
//	payload  0x08  bytes of a package reconcile message   (reconciliation request/answer)
//
// A peer in a peers message is: id-len uvarint, id bytes, naddrs uvarint,
// naddrs × (addr-len uvarint, multiaddr bytes).
//
// Every reader is given the largest frame it accepts; a longer frame resets
// the stream with ErrFrameTooLarge, and buffers grow only as bytes arrive.
const (
	msgHello    byte = 0x01
	msgWant     byte = 0x02
	msgBlock    byte = 0x03
	msgMissing  byte = 0x04
	msgError    byte = 0x05
	msgManifest byte = 0x06
	msgPeers    byte = 0x07
	msgPayload  byte = 0x08
)

// helloCoded marks a request about the erasure-coded blocks of a root (Byers).
const helloCoded byte = 1 << 0

// maxRootLen bounds the root id carried in a hello.
const maxRootLen = 64

// readChunk is the largest step by which a frame buffer grows before the bytes
// that fill it have arrived.
const readChunk = 64 << 10

// frameReader reads length-prefixed frames of at most max bytes.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// streamBuf is the size of a stream's read and write buffers. They only
// gather small frames (hello, want, missing, headers): a frame larger than
// the buffer is read or written straight from or to its own memory, so a
// larger buffer would cost memory on every open stream (thousands in a
// testnet) and save nothing.
const streamBuf = 4 << 10

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, streamBuf), max: max}
}

// next returns the next frame. The slice is valid until the following call.
// A clean end of stream before a frame starts is io.EOF.
func (fr *frameReader) next() ([]byte, error) {
	n, err := readLength(fr.r)
	if err != nil {
		return nil, err
	}
	if n > uint64(fr.max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, fr.max)
	}
	need := int(n)
	buf := fr.buf[:0]
	for len(buf) < need {
		step := need - len(buf)
		if c := max(readChunk, len(buf)); step > c && cap(buf) < need {
			step = c
		}
		if cap(buf)-len(buf) < step {
			nb := make([]byte, len(buf), len(buf)+step)
			copy(nb, buf)
			buf = nb
		}
		if _, err := io.ReadFull(fr.r, buf[len(buf):len(buf)+step]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		buf = buf[:len(buf)+step]
	}
	fr.buf = buf
	return buf, nil
}

// readLength reads a frame's uvarint length. Only a length that overflows 64
// bits is malformed: an error of the stream itself (a reset, a deadline) is
// returned as it is, so that a slow or vanished peer is not taken for a
// misbehaving one. A clean end of stream before the first byte is io.EOF, in
// the middle io.ErrUnexpectedEOF.
func readLength(r io.ByteReader) (uint64, error) {
	var x uint64
	var s uint
	for i := range binary.MaxVarintLen64 {
		b, err := r.ReadByte()
		if err != nil {
			if i > 0 && errors.Is(err, io.EOF) {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				break
			}
			return x | uint64(b)<<s, nil
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, fmt.Errorf("%w: frame length overflows 64 bits", ErrMalformed)
}

// writeFrame writes one frame made of the concatenation of parts.
func writeFrame(w *bufio.Writer, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	var hdr [binary.MaxVarintLen64]byte
	if _, err := w.Write(hdr[:binary.PutUvarint(hdr[:], uint64(n))]); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// hello is the first frame of every request: which content it is about.
type hello struct {
	Root  []byte
	Coded bool
}

func (h hello) append(b []byte) []byte {
	b = append(b, msgHello, byte(len(h.Root)))
	b = append(b, h.Root...)
	var flags byte
	if h.Coded {
		flags |= helloCoded
	}
	return append(b, flags)
}

func decodeHello(f []byte) (hello, error) {
	if len(f) < 3 || f[0] != msgHello {
		return hello{}, fmt.Errorf("%w: not a hello", ErrMalformed)
	}
	n := int(f[1])
	if n == 0 || n > maxRootLen || len(f) != 2+n+1 {
		return hello{}, fmt.Errorf("%w: hello of %d bytes with a %d-byte root", ErrMalformed, len(f), n)
	}
	flags := f[2+n]
	if flags&^helloCoded != 0 {
		return hello{}, fmt.Errorf("%w: unknown hello flags %#x", ErrMalformed, flags)
	}
	return hello{Root: append([]byte(nil), f[2:2+n]...), Coded: flags&helloCoded != 0}, nil
}

// appendWant encodes a request for the blocks idx.
func appendWant(b []byte, idx []int) []byte {
	b = append(b, msgWant)
	b = binary.AppendUvarint(b, uint64(len(idx)))
	for _, i := range idx {
		b = binary.AppendUvarint(b, uint64(i))
	}
	return b
}

// decodeWant decodes a want frame into dst, refusing more than max indices or
// any index >= limit. It allocates nothing beyond dst's growth to the count
// the frame's bytes can hold.
func decodeWant(dst []int, f []byte, max, limit int) ([]int, error) {
	if len(f) < 2 || f[0] != msgWant {
		return dst, fmt.Errorf("%w: not a want", ErrMalformed)
	}
	f = f[1:]
	n, k := binary.Uvarint(f)
	if k <= 0 {
		return dst, fmt.Errorf("%w: want count", ErrMalformed)
	}
	f = f[k:]
	if n > uint64(max) || n > uint64(len(f)) {
		return dst, fmt.Errorf("%w: want of %d blocks (limit %d, %d bytes)", ErrMalformed, n, max, len(f))
	}
	dst = dst[:0]
	for range n {
		v, k := binary.Uvarint(f)
		if k <= 0 {
			return dst, fmt.Errorf("%w: want index", ErrMalformed)
		}
		if v >= uint64(limit) {
			return dst, fmt.Errorf("%w: want index %d of %d blocks", ErrMalformed, v, limit)
		}
		dst = append(dst, int(v))
		f = f[k:]
	}
	if len(f) != 0 {
		return dst, fmt.Errorf("%w: %d bytes after want", ErrMalformed, len(f))
	}
	return dst, nil
}

// appendBlockHeader encodes the head of a block frame; the block bytes follow.
func appendBlockHeader(b []byte, idx int) []byte {
	return binary.AppendUvarint(append(b, msgBlock), uint64(idx))
}

// appendMissing encodes "I do not hold block idx".
func appendMissing(b []byte, idx int) []byte {
	return binary.AppendUvarint(append(b, msgMissing), uint64(idx))
}

// decodeBlock decodes a block or missing frame. data aliases f; it is nil for
// a missing frame (ok false).
func decodeBlock(f []byte, limit int) (idx int, data []byte, ok bool, err error) {
	if len(f) < 2 || (f[0] != msgBlock && f[0] != msgMissing) {
		if len(f) > 0 && f[0] == msgError {
			return 0, nil, false, decodeError(f)
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
	if f[0] == msgMissing {
		if 1+k != len(f) {
			return 0, nil, false, fmt.Errorf("%w: bytes after missing", ErrMalformed)
		}
		return int(v), nil, false, nil
	}
	return int(v), f[1+k:], true, nil
}

// maxErrorText bounds the text of an error frame we send or show.
const maxErrorText = 256

func appendError(b []byte, msg string) []byte {
	if len(msg) > maxErrorText {
		msg = msg[:maxErrorText]
	}
	return append(append(b, msgError), msg...)
}

// decodeError turns an error frame into an error wrapping ErrRemote (or
// ErrUnknownRoot when the remote says so).
func decodeError(f []byte) error {
	if len(f) < 1 || f[0] != msgError {
		return fmt.Errorf("%w: not an error", ErrMalformed)
	}
	text := f[1:]
	if len(text) > maxErrorText {
		text = text[:maxErrorText]
	}
	msg := sanitize(string(text))
	if msg == unknownRootText {
		return ErrUnknownRoot
	}
	return fmt.Errorf("%w: %s", ErrRemote, msg)
}

// unknownRootText is the error text a server sends for content it does not serve.
const unknownRootText = "unknown root"

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

// appendTyped encodes a frame of type t around body (manifest, payload).
func appendTyped(b []byte, t byte, body []byte) []byte {
	return append(append(b, t), body...)
}

// decodeTyped checks that f is of type t and returns its body, turning an
// error frame into the remote's error.
func decodeTyped(f []byte, t byte) ([]byte, error) {
	if len(f) == 0 {
		return nil, fmt.Errorf("%w: empty frame", ErrMalformed)
	}
	if f[0] == msgError && t != msgError {
		return nil, decodeError(f)
	}
	if f[0] != t {
		return nil, fmt.Errorf("%w: message type %#x, want %#x", ErrMalformed, f[0], t)
	}
	return f[1:], nil
}

// Bounds of a peers message.
const (
	maxPeersListed = 64
	maxAddrsListed = 16
	maxIDLen       = 128
	maxAddrLen     = 256
)

// appendPeers encodes a peers message of at most maxPeersListed peers with at
// most maxAddrsListed addresses each.
func appendPeers(b []byte, infos []lpeer.AddrInfo) []byte {
	if len(infos) > maxPeersListed {
		infos = infos[:maxPeersListed]
	}
	b = append(b, msgPeers)
	b = binary.AppendUvarint(b, uint64(len(infos)))
	for _, ai := range infos {
		id := []byte(ai.ID)
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
		addrs := ai.Addrs
		if len(addrs) > maxAddrsListed {
			addrs = addrs[:maxAddrsListed]
		}
		b = binary.AppendUvarint(b, uint64(len(addrs)))
		for _, a := range addrs {
			ab := a.Bytes()
			b = binary.AppendUvarint(b, uint64(len(ab)))
			b = append(b, ab...)
		}
	}
	return b
}

// decodePeers decodes a peers message, refusing anything beyond the bounds
// appendPeers keeps.
func decodePeers(f []byte) ([]lpeer.AddrInfo, error) {
	body, err := decodeTyped(f, msgPeers)
	if err != nil {
		return nil, err
	}
	d := decoder{b: body}
	n := d.count(maxPeersListed)
	var out []lpeer.AddrInfo
	for i := 0; i < n && d.err == nil; i++ {
		idb := d.bytes(maxIDLen)
		if d.err != nil {
			break
		}
		id, err := lpeer.IDFromBytes(idb)
		if err != nil {
			return nil, fmt.Errorf("%w: peer id: %v", ErrMalformed, err)
		}
		ai := lpeer.AddrInfo{ID: id}
		na := d.count(maxAddrsListed)
		for j := 0; j < na && d.err == nil; j++ {
			ab := d.bytes(maxAddrLen)
			if d.err != nil {
				break
			}
			a, err := ma.NewMultiaddrBytes(ab)
			if err != nil {
				return nil, fmt.Errorf("%w: multiaddr: %v", ErrMalformed, err)
			}
			ai.Addrs = append(ai.Addrs, a)
		}
		out = append(out, ai)
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
