// Package delta carries a run of blocks as its difference from bytes the
// asking peer already holds, such as the older version of a file an edit
// fell in: rsync's algorithm in librsync's format. The asking peer sends a
// Signature of its bytes (the basis), the peer that holds the run answers
// with Make's delta, and the asking peer rebuilds the run with Apply and
// checks each block against the manifest as it would a block it fetched.
// Signatures and patching are github.com/balena-os/librsync-go's; Make is
// ours, a faster scan that writes the same format.
//
// Every input from the other side is bounded before it is used:
// a signature's block length and checksum length are checked, a delta can
// neither write past the run's length nor make Apply read more of the basis
// than that, and a delta that does not rebuild the run exactly is an error.
package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	librsync "github.com/balena-os/librsync-go"
	"golang.org/x/crypto/blake2b"
)

// The bounds of a signature's block length, and its strong checksum
// length (a BLAKE2b prefix: a false match costs a block that fails its
// hash, fetched again, never a wrong block stored).
const (
	MinBlockLen = 256
	MaxBlockLen = 64 << 10
	StrongLen   = 8
	headerLen   = 12 // magic, block length, strong length
	// MaxSignatureLen bounds the signatures a peer takes: that of 256 MiB
	// of basis, far more than a basis holds (chunker.Basis).
	MaxSignatureLen = 256 << 10
	entryLen        = 4 + StrongLen
)

// ErrBadSignature is a signature that is not one of ours: a wrong magic
// number or lengths, or a length that is not whole entries.
var ErrBadSignature = errors.New("delta: bad signature")

// ErrBadDelta is a delta that does not rebuild a run of the length asked.
var ErrBadDelta = errors.New("delta: delta does not rebuild the run")

// BlockLen returns the signature block length for a basis of n bytes: the
// one that about balances the signature's bytes (n/b entries of 12 bytes)
// against the literal bytes an edit costs (about a block and a half).
func BlockLen(n int64) int {
	b := int(math.Sqrt(8*float64(max(n, 0)))) &^ 63
	return min(max(b, MinBlockLen), MaxBlockLen)
}

// SignatureLen returns the length of the signature of n bytes.
func SignatureLen(n int64) int64 {
	b := int64(BlockLen(n))
	return headerLen + (n+b-1)/b*entryLen
}

// Signature returns the signature of the n bytes of basis.
func Signature(basis io.Reader, n int64) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(int(SignatureLen(n)))
	if _, err := librsync.Signature(io.LimitReader(basis, n), &out, uint32(BlockLen(n)), StrongLen, librsync.BLAKE2_SIG_MAGIC); err != nil {
		return nil, fmt.Errorf("delta: signature: %w", err)
	}
	if int64(out.Len()) != SignatureLen(n) {
		return nil, fmt.Errorf("delta: signature: basis shorter than %d bytes", n)
	}
	return out.Bytes(), nil
}

// checkSignature checks that sig is a signature Signature makes: our magic
// number, a block length within bounds, our strong length, whole entries.
func checkSignature(sig []byte) error {
	if len(sig) < headerLen || (len(sig)-headerLen)%entryLen != 0 {
		return fmt.Errorf("%w: %d bytes", ErrBadSignature, len(sig))
	}
	magic := librsync.MagicNumber(binary.BigEndian.Uint32(sig))
	bl, sl := binary.BigEndian.Uint32(sig[4:]), binary.BigEndian.Uint32(sig[8:])
	if magic != librsync.BLAKE2_SIG_MAGIC || bl < MinBlockLen || bl > MaxBlockLen || sl != StrongLen {
		return fmt.Errorf("%w: magic %#x, block length %d, strong length %d", ErrBadSignature, uint32(magic), bl, sl)
	}
	return nil
}

// Make returns the delta that rebuilds target from the basis whose
// signature is sig, in librsync's delta format. It finds the basis's blocks
// in target as librsync's delta does (a rolling checksum over every window
// of a block's length, a strong checksum where it matches), but scans the
// target in place, about 5x as fast as librsync-go's own on bytes that match nothing (BenchmarkMake).
func Make(sig, target []byte) ([]byte, error) {
	if err := checkSignature(sig); err != nil {
		return nil, err
	}
	s := parseSignature(sig)
	b := s.blockLen
	e := encoder{out: binary.BigEndian.AppendUint32(make([]byte, 0, 64), uint32(librsync.DELTA_MAGIC))}
	var (
		rs  librsync.Rollsum
		lit int // the first byte not yet sent
		i   int // the window's start
	)
	if len(target) >= b {
		rs.Update(target[:b])
	}
	for i+b <= len(target) {
		if k, ok := s.find(rs.Digest(), target[i:i+b]); ok {
			e.literal(target[lit:i])
			e.copy(int64(k)*int64(b), int64(b))
			i += b
			lit = i
			rs.Reset()
			if i+b <= len(target) {
				rs.Update(target[i : i+b])
			}
			continue
		}
		if i+b < len(target) {
			rs.Rotate(target[i], target[i+b])
		}
		i++
	}
	e.literal(target[lit:])
	e.flush()
	return append(e.out, 0), nil // OP_END
}

// signature is a parsed signature: its blocks' weak checksums, indexed, and
// strong checksums.
type signature struct {
	blockLen int
	strong   []byte // StrongLen bytes a block
	// first maps a weak checksum to 1 + its first block, next chains the
	// blocks of one weak checksum (1 + the next, 0 at the end), and tags
	// has bit w%len set when some block's weak checksum is w: most windows
	// are passed over on a test of one bit.
	first map[uint32]int32
	next  []int32
	tags  []uint64
}

// tagBits is the size of signature.tags, in bits.
const tagBits = 1 << 16

// parseSignature indexes a signature checkSignature passed.
func parseSignature(sig []byte) *signature {
	n := (len(sig) - headerLen) / entryLen
	s := &signature{blockLen: int(binary.BigEndian.Uint32(sig[4:])), strong: make([]byte, 0, n*StrongLen),
		first: make(map[uint32]int32, n), next: make([]int32, n), tags: make([]uint64, tagBits/64)}
	for k := n - 1; k >= 0; k-- { // backwards, so that chains run forwards
		e := sig[headerLen+k*entryLen:]
		w := binary.BigEndian.Uint32(e)
		s.next[k] = s.first[w]
		s.first[w] = int32(k + 1)
		s.tags[w%tagBits/64] |= 1 << (w % 64)
	}
	for k := range n {
		s.strong = append(s.strong, sig[headerLen+k*entryLen+4:headerLen+(k+1)*entryLen]...)
	}
	return s
}

// find returns the basis block whose checksums are those of window (weak
// being its weak checksum).
func (s *signature) find(weak uint32, window []byte) (int, bool) {
	if s.tags[weak%tagBits/64]&(1<<(weak%64)) == 0 {
		return 0, false
	}
	k := s.first[weak]
	if k == 0 {
		return 0, false
	}
	sum := blake2b.Sum256(window)
	for ; k != 0; k = s.next[k-1] {
		if string(sum[:StrongLen]) == string(s.strong[(k-1)*StrongLen:k*StrongLen]) {
			return int(k - 1), true
		}
	}
	return 0, false
}

// encoder writes librsync's delta commands, merging copies of adjacent
// basis bytes.
type encoder struct {
	out           []byte
	copyAt, copyN int64 // the copy not yet written (copyN > 0)
}

// The commands encoder writes (librsync's op codes).
const (
	opLiteralN4 = 0x43 // OP_LITERAL_N4: length uint32, bytes
	opCopyN8N8  = 0x54 // OP_COPY_N8_N8: offset int64, length int64
)

func (e *encoder) literal(b []byte) {
	if len(b) == 0 {
		return
	}
	e.flush()
	e.out = binary.BigEndian.AppendUint32(append(e.out, opLiteralN4), uint32(len(b)))
	e.out = append(e.out, b...)
}

func (e *encoder) copy(at, n int64) {
	if e.copyN > 0 && e.copyAt+e.copyN == at {
		e.copyN += n
		return
	}
	e.flush()
	e.copyAt, e.copyN = at, n
}

// flush writes the pending copy.
func (e *encoder) flush() {
	if e.copyN > 0 {
		e.out = binary.BigEndian.AppendUint64(append(e.out, opCopyN8N8), uint64(e.copyAt))
		e.out = binary.BigEndian.AppendUint64(e.out, uint64(e.copyN))
		e.copyN = 0
	}
}

// MaxLen bounds the delta of a run of n bytes: its literals, every command
// header, and the end.
func MaxLen(n int64) int64 { return n + n/8 + 64 }

// Apply rebuilds the n bytes of a run from the basis (its first basisLen
// bytes) and a delta made against the basis's signature. A delta that
// writes more or fewer than n bytes, or reaches outside the basis, is
// ErrBadDelta; whatever it holds, Apply reads at most n bytes of the basis
// and does work linear in len(delta) + n.
func Apply(basis io.ReaderAt, basisLen int64, delta []byte, n int) ([]byte, error) {
	b, err := ApplyMax(basis, basisLen, delta, n)
	if err == nil && len(b) != n {
		return nil, fmt.Errorf("%w: %d bytes of %d", ErrBadDelta, len(b), n)
	}
	return b, err
}

// ApplyMax is Apply for bytes of a length not known beforehand, at most max
// (a manifest, whose root then checks it): a delta that writes more is
// ErrBadDelta.
func ApplyMax(basis io.ReaderAt, basisLen int64, delta []byte, max int) ([]byte, error) {
	out := &capped{b: make([]byte, 0, min(max, len(delta)+int(basisLen))), max: max}
	base := &guarded{r: io.NewSectionReader(basis, 0, basisLen), out: out}
	if err := librsync.Patch(base, bytes.NewReader(delta), out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDelta, err)
	}
	if out.over || base.bad {
		return nil, fmt.Errorf("%w: over %d bytes, or outside the basis", ErrBadDelta, max)
	}
	return out.b, nil
}

// capped collects at most max bytes: a write past them fails, and marks the
// output as over.
type capped struct {
	b    []byte
	max  int
	over bool
}

// room is how many more bytes c takes.
func (c *capped) room() int { return c.max - len(c.b) }

func (c *capped) Write(p []byte) (int, error) {
	if len(p) > c.room() {
		c.over = true
		return 0, io.ErrShortWrite
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// guarded is the basis as Patch reads it. librsync's Patch drops the errors
// of its copies, so once the output is over, or a copy seeks outside the
// basis, every read fails at once: a delta of many copies then costs no
// more reading.
type guarded struct {
	r   *io.SectionReader
	out *capped
	bad bool
}

func (g *guarded) Read(p []byte) (int, error) {
	if g.out.over || g.bad {
		return 0, ErrBadDelta
	}
	// No read may fill more than the output can take.
	p = p[:min(len(p), g.out.room())]
	if len(p) == 0 {
		g.out.over = true
		return 0, ErrBadDelta
	}
	return g.r.Read(p)
}

func (g *guarded) Seek(off int64, whence int) (int64, error) {
	if whence != io.SeekStart || off < 0 || off > g.r.Size() {
		g.bad = true
		return 0, ErrBadDelta
	}
	return g.r.Seek(off, whence)
}
