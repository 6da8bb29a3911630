package reconcile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/vmihailenco/msgpack/v5"
)

// Version is the wire schema version carried by every message; a decoder rejects any
// other with [ErrVersion].
const Version = 1

// MsgType tags the body of a [Message].
type MsgType uint8

const (
	// MsgFilter carries a sender's filter of the blocks it holds: a CBF for
	// [Complete], a plain Bloom filter for [Byers]. See [FilterMsg].
	MsgFilter MsgType = 1
	// MsgOffer carries the indices of the blocks the sender will send; the caller
	// (e.g. package peer) moves the bytes itself. Sessions without a [Blocks] store
	// answer with offers.
	MsgOffer MsgType = 2
	// MsgBlocks carries block indices and their payloads. Sessions with a [Blocks]
	// store answer with blocks.
	MsgBlocks MsgType = 3
	// MsgReject ends a session: the sender could not accept the peer's message
	// (for instance a non-homologous filter). Reason says why.
	MsgReject MsgType = 4
	// MsgMore asks the initiator of an [IBLT] session for Cells more coded cells:
	// the responder could not decode the difference from those it has.
	MsgMore MsgType = 5
	// MsgWant lists the blocks the responder of a two-way [IBLT] session lacks and
	// the initiator holds (Indices); the initiator answers with blocks or an offer.
	MsgWant MsgType = 6
)

// msgTypes lists the valid message types.
var msgTypes = []MsgType{MsgFilter, MsgOffer, MsgBlocks, MsgReject, MsgMore, MsgWant}

// String returns the type's name: "filter", "offer", "blocks", "reject", "more" or
// "want".
func (t MsgType) String() string {
	switch t {
	case MsgFilter:
		return "filter"
	case MsgOffer:
		return "offer"
	case MsgBlocks:
		return "blocks"
	case MsgReject:
		return "reject"
	case MsgMore:
		return "more"
	case MsgWant:
		return "want"
	}
	return fmt.Sprintf("msgtype(%d)", uint8(t))
}

// MarshalText implements encoding.TextMarshaler, so maps keyed by MsgType print
// their names in JSON.
func (t MsgType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *MsgType) UnmarshalText(b []byte) error {
	for _, v := range msgTypes {
		if v.String() == string(b) {
			*t = v
			return nil
		}
	}
	return fmt.Errorf("%w: unknown message type %q", ErrMessage, b)
}

// Message is the one envelope of the protocol. Type says which fields are used:
//
//	MsgFilter   Filter
//	MsgOffer    Indices
//	MsgBlocks   Indices, BlockSize, Data (len(Indices)*BlockSize bytes, block Indices[i]
//	            at Data[i*BlockSize:(i+1)*BlockSize])
//	MsgReject   Reason
//	MsgMore     Cells
//	MsgWant     Indices
//
// Indices are strictly increasing. Session identifies the session when several share
// one stream (0 is fine otherwise).
//
// On the wire a message is one msgpack array: [Version, Type, Session, body...]; see
// [Message.MarshalBinary]. Sizes on the wire are [Message.EncodedSize].
type Message struct {
	Type      MsgType
	Session   uint64
	Filter    FilterMsg
	Indices   []uint32
	BlockSize int
	Data      []byte
	Reason    string
	Cells     int
}

// FilterMsg is the body of a [MsgFilter] message.
type FilterMsg struct {
	// Method is the protocol the filter is for.
	Method Method
	// Params are the filter's parameters (R = 1 for the Bloom filter of Byers). The
	// receiver checks them against its own configuration (homology).
	Params cbfalgebra.Params
	// Universe is the number of blocks of the file (indices lie in [0, Universe)).
	Universe int
	// SetSize is the number of blocks the sender holds.
	SetSize int
	// Reply asks the receiver to send its own filter back, so that the exchange runs
	// in both directions.
	Reply bool
	// Data is the filter: for Complete and Byers in the cbfalgebra wire format
	// (MarshalBinary), for CCBF that compressed ([CompressFilter]), for Bitfield
	// the bitfield ([Set.AppendBitfield]), for IBLT a batch of coded cells (start
	// index, count, cells).
	Data []byte
}

// Limits bound what [Decode] accepts and allocates. A zero field means the
// corresponding field of [DefaultLimits].
type Limits struct {
	// MaxMessage is the largest encoded message in bytes.
	MaxMessage int
	// MaxFilterBytes is the largest encoded filter in bytes.
	MaxFilterBytes int
	// MaxIndices is the largest number of block indices in one message.
	MaxIndices int
	// MaxBlockSize is the largest block payload in bytes.
	MaxBlockSize int
	// MaxUniverse is the largest universe (blocks per file) a filter may announce.
	MaxUniverse int
	// MaxReason is the longest reject reason in bytes.
	MaxReason int
}

// DefaultLimits are generous for files of up to 2^24 blocks: 64 MiB messages,
// 16 MiB filters (2^25 4-bit counters), 2^24 indices, 1 MiB blocks, 256-byte reasons.
var DefaultLimits = Limits{
	MaxMessage:     64 << 20,
	MaxFilterBytes: 16 << 20,
	MaxIndices:     1 << 24,
	MaxBlockSize:   1 << 20,
	MaxUniverse:    1 << 24,
	MaxReason:      256,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxMessage > 0 {
		d.MaxMessage = l.MaxMessage
	}
	if l.MaxFilterBytes > 0 {
		d.MaxFilterBytes = l.MaxFilterBytes
	}
	if l.MaxIndices > 0 {
		d.MaxIndices = l.MaxIndices
	}
	if l.MaxBlockSize > 0 {
		d.MaxBlockSize = l.MaxBlockSize
	}
	if l.MaxUniverse > 0 {
		d.MaxUniverse = l.MaxUniverse
	}
	if l.MaxReason > 0 {
		d.MaxReason = l.MaxReason
	}
	return d
}

// MarshalBinary encodes the message (implements encoding.BinaryMarshaler).
func (m *Message) MarshalBinary() ([]byte, error) {
	var buf bytes.Buffer
	if err := m.encode(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// AppendBinary appends the encoded message to b (implements encoding.BinaryAppender).
func (m *Message) AppendBinary(b []byte) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	if err := m.encode(buf); err != nil {
		return b, err
	}
	return buf.Bytes(), nil
}

// EncodedSize returns the number of bytes MarshalBinary produces, without building
// them; it is what callers report as bytes on the wire.
func (m *Message) EncodedSize() int {
	var c countWriter
	if err := m.encode(&c); err != nil {
		return 0
	}
	return int(c)
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// WriteString lets msgpack write strings without converting them to bytes.
func (c *countWriter) WriteString(s string) (int, error) {
	*c += countWriter(len(s))
	return len(s), nil
}

// encode writes the msgpack form. Encoding validates the fields a decoder would
// reject, so that a session never emits a message its peer cannot read.
func (m *Message) encode(w io.Writer) error {
	e := msgpack.GetEncoder()
	defer msgpack.PutEncoder(e)
	e.Reset(w)
	e.UseCompactInts(true)
	var err error
	put := func(f error) {
		if err == nil {
			err = f
		}
	}
	switch m.Type {
	case MsgFilter:
		f := &m.Filter
		p := f.Params
		if f.Universe < 0 || f.SetSize < 0 || p.M < 0 || p.K < 0 || p.R < 0 {
			return fmt.Errorf("%w: negative filter field", ErrMessage)
		}
		put(e.EncodeArrayLen(13))
		put(e.EncodeUint(Version))
		put(e.EncodeUint(uint64(m.Type)))
		put(e.EncodeUint(m.Session))
		put(e.EncodeUint(uint64(f.Method)))
		put(e.EncodeUint(uint64(p.M)))
		put(e.EncodeUint(uint64(p.K)))
		put(e.EncodeUint(uint64(p.R)))
		put(e.EncodeUint(uint64(p.Hash)))
		put(e.EncodeUint(p.Seed))
		put(e.EncodeUint(uint64(f.Universe)))
		put(e.EncodeUint(uint64(f.SetSize)))
		put(e.EncodeBool(f.Reply))
		put(e.EncodeBytes(f.Data))
	case MsgOffer, MsgBlocks, MsgWant:
		packed, perr := packIndices(m.Indices)
		if perr != nil {
			return perr
		}
		n := 5
		if m.Type == MsgBlocks {
			n = 7
			if m.BlockSize < 1 || len(m.Data) != len(m.Indices)*m.BlockSize {
				return fmt.Errorf("%w: %d bytes of data for %d blocks of %d bytes",
					ErrMessage, len(m.Data), len(m.Indices), m.BlockSize)
			}
		}
		put(e.EncodeArrayLen(n))
		put(e.EncodeUint(Version))
		put(e.EncodeUint(uint64(m.Type)))
		put(e.EncodeUint(m.Session))
		put(e.EncodeUint(uint64(len(m.Indices))))
		put(e.EncodeBytes(packed))
		if m.Type == MsgBlocks {
			put(e.EncodeUint(uint64(m.BlockSize)))
			put(e.EncodeBytes(m.Data))
		}
	case MsgReject:
		put(e.EncodeArrayLen(4))
		put(e.EncodeUint(Version))
		put(e.EncodeUint(uint64(m.Type)))
		put(e.EncodeUint(m.Session))
		put(e.EncodeString(m.Reason))
	case MsgMore:
		if m.Cells < 1 {
			return fmt.Errorf("%w: more asks for %d cells", ErrMessage, m.Cells)
		}
		put(e.EncodeArrayLen(4))
		put(e.EncodeUint(Version))
		put(e.EncodeUint(uint64(m.Type)))
		put(e.EncodeUint(m.Session))
		put(e.EncodeUint(uint64(m.Cells)))
	default:
		return fmt.Errorf("%w: unknown message type %d", ErrMessage, uint8(m.Type))
	}
	if err != nil {
		return fmt.Errorf("reconcile: encode %v: %w", m.Type, err)
	}
	return nil
}

// packIndices delta-codes strictly increasing indices as uvarints.
func packIndices(idx []uint32) ([]byte, error) {
	out := make([]byte, 0, len(idx)*2)
	prev := int64(-1)
	for _, i := range idx {
		if int64(i) <= prev {
			return nil, fmt.Errorf("%w: indices not strictly increasing at %d", ErrMessage, i)
		}
		out = binary.AppendUvarint(out, uint64(int64(i)-prev-1))
		prev = int64(i)
	}
	return out, nil
}

// unpackIndices reverses packIndices, expecting exactly n indices using all of b.
func unpackIndices(b []byte, n int) ([]uint32, error) {
	if n > len(b) { // every index takes at least one byte: bound before allocating
		return nil, fmt.Errorf("%w: %d indices in %d bytes", ErrMessage, n, len(b))
	}
	out := make([]uint32, n)
	next := uint64(0)
	for j := range out {
		d, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("%w: truncated index %d", ErrMessage, j)
		}
		b = b[k:]
		v := next + d
		if d > math.MaxUint32 || v > math.MaxUint32 {
			return nil, fmt.Errorf("%w: index %d overflows", ErrMessage, j)
		}
		out[j] = uint32(v)
		next = v + 1
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the indices", ErrMessage, len(b))
	}
	return out, nil
}

// Decode parses one message, checking the version, the type, every length against
// the input and the limits, and the consistency of the fields. It never panics and
// allocates at most a small multiple of len(b). The Data and Filter.Data of the
// result alias b. Errors wrap [ErrVersion], [ErrMessage] or [ErrLimit].
func Decode(b []byte, lim Limits) (Message, error) {
	lim = lim.withDefaults()
	var m Message
	if len(b) > lim.MaxMessage {
		return m, fmt.Errorf("%w: message of %d bytes > %d", ErrLimit, len(b), lim.MaxMessage)
	}
	d := decoder{b: b}
	n := d.arrayLen()
	ver := d.uint(math.MaxUint8)
	if d.err == nil && ver != Version {
		return m, fmt.Errorf("%w: got %d, want %d", ErrVersion, ver, Version)
	}
	m.Type = MsgType(d.uint(math.MaxUint8))
	m.Session = d.uint(math.MaxUint64)
	if d.err != nil {
		return m, d.err
	}
	want := map[MsgType]int{MsgFilter: 13, MsgOffer: 5, MsgBlocks: 7, MsgReject: 4, MsgMore: 4, MsgWant: 5}[m.Type]
	if want == 0 {
		return m, fmt.Errorf("%w: unknown message type %d", ErrMessage, uint8(m.Type))
	}
	if n != want {
		return m, fmt.Errorf("%w: %v message with %d fields, want %d", ErrMessage, m.Type, n, want)
	}
	switch m.Type {
	case MsgFilter:
		f := &m.Filter
		f.Method = Method(d.uint(math.MaxUint8))
		f.Params.M = int(d.uint(uint64(cbfalgebra.MaxM)))
		f.Params.K = int(d.uint(cbfalgebra.MaxK))
		f.Params.R = int(d.uint(64))
		f.Params.Hash = cbfalgebra.HashFamily(d.uint(math.MaxUint8))
		f.Params.Seed = d.uint(math.MaxUint64)
		f.Universe = int(d.uint(uint64(lim.MaxUniverse)))
		f.SetSize = int(d.uint(uint64(lim.MaxUniverse)))
		f.Reply = d.bool()
		f.Data = d.bytes(lim.MaxFilterBytes)
		if d.err == nil && f.SetSize > f.Universe {
			d.err = fmt.Errorf("%w: set of %d blocks in a universe of %d", ErrMessage, f.SetSize, f.Universe)
		}
	case MsgOffer, MsgBlocks, MsgWant:
		cnt := int(d.uint(uint64(lim.MaxIndices)))
		packed := d.bytes(lim.MaxMessage)
		if d.err == nil {
			m.Indices, d.err = unpackIndices(packed, cnt)
		}
		if m.Type == MsgBlocks {
			m.BlockSize = int(d.uint(uint64(lim.MaxBlockSize)))
			m.Data = d.bytes(lim.MaxMessage)
			if d.err == nil && (m.BlockSize < 1 || len(m.Data) != cnt*m.BlockSize) {
				d.err = fmt.Errorf("%w: %d bytes of data for %d blocks of %d bytes",
					ErrMessage, len(m.Data), cnt, m.BlockSize)
			}
		}
	case MsgReject:
		m.Reason = string(d.bytes(lim.MaxReason))
	case MsgMore:
		m.Cells = int(d.uint(uint64(ibltMaxCells(lim.MaxUniverse))))
		if d.err == nil && m.Cells < 1 {
			d.err = fmt.Errorf("%w: more asks for 0 cells", ErrMessage)
		}
	}
	if d.err == nil && d.off != len(b) {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrMessage, len(b)-d.off)
	}
	if d.err != nil {
		return Message{}, d.err
	}
	return m, nil
}

// decoder reads the few msgpack forms the schema uses straight from a byte slice,
// so that no length is trusted before the bytes are known to be there. The first
// error sticks.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMessage}, args...)...)
	}
}

func (d *decoder) need(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b)-d.off < n {
		d.fail("truncated at byte %d", d.off)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *decoder) code() byte {
	p := d.need(1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (d *decoder) be(n int) uint64 {
	p := d.need(n)
	var v uint64
	for _, c := range p {
		v = v<<8 | uint64(c)
	}
	return v
}

func (d *decoder) arrayLen() int {
	c := d.code()
	switch {
	case d.err != nil:
		return 0
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f)
	case c == 0xdc:
		return int(d.be(2))
	}
	d.fail("expected an array, got code 0x%02x", c)
	return 0
}

// uint reads a non-negative integer of any msgpack width, at most lim.
func (d *decoder) uint(lim uint64) uint64 {
	c := d.code()
	if d.err != nil {
		return 0
	}
	var v uint64
	switch {
	case c <= 0x7f:
		v = uint64(c)
	case c == 0xcc:
		v = d.be(1)
	case c == 0xcd:
		v = d.be(2)
	case c == 0xce:
		v = d.be(4)
	case c == 0xcf:
		v = d.be(8)
	default:
		d.fail("expected an unsigned integer, got code 0x%02x", c)
		return 0
	}
	if d.err == nil && v > lim {
		d.err = fmt.Errorf("%w: value %d > %d at byte %d", ErrLimit, v, lim, d.off)
		return 0
	}
	return v
}

func (d *decoder) bool() bool {
	switch c := d.code(); {
	case d.err != nil:
	case c == 0xc3:
		return true
	case c == 0xc2:
	default:
		d.fail("expected a bool, got code 0x%02x", c)
	}
	return false
}

// bytes reads a bin or str of at most lim bytes (nil and empty both give nil).
func (d *decoder) bytes(lim int) []byte {
	c := d.code()
	if d.err != nil {
		return nil
	}
	var n int
	switch {
	case c == 0xc0:
		return nil
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == 0xc4 || c == 0xd9:
		n = int(d.be(1))
	case c == 0xc5 || c == 0xda:
		n = int(d.be(2))
	case c == 0xc6 || c == 0xdb:
		n = int(d.be(4))
	default:
		d.fail("expected bytes, got code 0x%02x", c)
		return nil
	}
	if d.err == nil && n > lim {
		d.err = fmt.Errorf("%w: %d bytes > %d", ErrLimit, n, lim)
		return nil
	}
	p := d.need(n)
	if len(p) == 0 {
		return nil
	}
	return p
}

// Sentinel errors of the package; errors returned by it wrap one of these (or one of
// package cbfalgebra's, such as cbfalgebra.ErrNotHomologous and ErrCorrupt).
var (
	// ErrMessage reports a malformed message: truncated, wrong field count or
	// type, inconsistent lengths, unsorted indices, trailing bytes.
	ErrMessage = errors.New("reconcile: malformed message")
	// ErrVersion reports a message of another schema version.
	ErrVersion = errors.New("reconcile: unsupported message version")
	// ErrLimit reports a message field beyond the decoder's [Limits].
	ErrLimit = errors.New("reconcile: message exceeds limits")
	// ErrMethod reports an unknown method or a message for another method.
	ErrMethod = errors.New("reconcile: unknown or mismatched method")
	// ErrIndex reports a block index outside the universe.
	ErrIndex = errors.New("reconcile: block index outside the universe")
	// ErrUniverse reports a peer that describes another universe (block count).
	ErrUniverse = errors.New("reconcile: universe mismatch")
	// ErrState reports a message the session did not expect at this point.
	ErrState = errors.New("reconcile: unexpected message")
	// ErrRejected reports that the peer rejected the session (MsgReject).
	ErrRejected = errors.New("reconcile: rejected by peer")
)
