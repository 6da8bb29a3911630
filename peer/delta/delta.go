// Package delta carries a run of blocks as its difference from bytes the
// asking peer already holds, such as the older version of a file an edit
// fell in: rsync's algorithm in librsync's format, through
// github.com/balena-os/librsync-go. The asking peer sends a Signature of its
// bytes (the basis), the peer that holds the run answers with Make's delta,
// and the asking peer rebuilds the run with Apply and checks each block
// against the manifest as it would a block it fetched.
//
// Every input from the other side is bounded before the library sees it:
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
	"sync"

	librsync "github.com/balena-os/librsync-go"
)

// The bounds of a signature's block length, and its strong checksum
// length (a BLAKE2b prefix: a false match costs a block that fails its
// hash, fetched again, never a wrong block stored).
const (
	MinBlockLen = 256
	MaxBlockLen = 64 << 10
	StrongLen   = 8
	headerLen   = 12 // magic, block length, strong length
	entryLen    = 4 + StrongLen
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

// literals are librsync's literal buffers (16 MiB of capacity each, of which
// a delta touches what its literals need).
var literals = sync.Pool{New: func() any { return make([]byte, 0, librsync.OUTPUT_BUFFER_SIZE) }}

// Make returns the delta that rebuilds target from the basis whose
// signature is sig. Its work is linear in len(target) (about 40 MB/s of
// target bytes that match nothing, more where they match).
func Make(sig, target []byte) ([]byte, error) {
	if err := checkSignature(sig); err != nil {
		return nil, err
	}
	s, err := librsync.ReadSignature(bytes.NewReader(sig))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	lit := literals.Get().([]byte)
	defer literals.Put(lit[:0])
	var out bytes.Buffer
	if err := librsync.DeltaBuff(s, bytes.NewReader(target), &out, lit[:0]); err != nil {
		return nil, fmt.Errorf("delta: %w", err)
	}
	return out.Bytes(), nil
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
	out := &capped{b: make([]byte, 0, n)}
	base := &guarded{r: io.NewSectionReader(basis, 0, basisLen), out: out}
	if err := librsync.Patch(base, bytes.NewReader(delta), out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDelta, err)
	}
	if out.over || base.bad || len(out.b) != n {
		return nil, fmt.Errorf("%w: %d bytes of %d", ErrBadDelta, len(out.b), n)
	}
	return out.b, nil
}

// capped collects at most cap(b) bytes: a write past them fails, and marks
// the output as over.
type capped struct {
	b    []byte
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if len(p) > cap(c.b)-len(c.b) {
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
	p = p[:min(len(p), cap(g.out.b)-len(g.out.b))]
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
