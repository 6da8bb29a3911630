package cbfalgebra

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// DefaultMaxEncodedSize is the largest encoding UnmarshalBinary and ReadFrom
// accept (64 MiB); DecodeCBF, DecodeBloom, ReadCBF and ReadBloom take their
// own limit.
const DefaultMaxEncodedSize = 64 << 20

// FormatVersion is the version of the wire format written by this package.
const FormatVersion = 1

const (
	headerLen   = 36
	trailerLen  = 4
	magicCBF    = "RCBF"
	magicBloom  = "RBLF"
	bloomRField = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the decoded fixed part of an encoding.
type header struct {
	p Params
	n int
}

func putHeader(dst []byte, magic string, p Params, n int) {
	copy(dst[0:4], magic)
	dst[4] = FormatVersion
	dst[5] = uint8(p.Hash)
	dst[6] = uint8(p.R)
	dst[7] = 0
	binary.LittleEndian.PutUint64(dst[8:], uint64(p.M))
	binary.LittleEndian.PutUint32(dst[16:], uint32(p.K))
	binary.LittleEndian.PutUint64(dst[20:], p.Seed)
	binary.LittleEndian.PutUint64(dst[28:], uint64(n))
}

// parseHeader validates the fixed header and returns it with the total
// encoded size it implies.
func parseHeader(b []byte, magic string) (header, int64, error) {
	if string(b[0:4]) != magic {
		return header{}, 0, fmt.Errorf("%w: bad magic %q, want %q", ErrCorrupt, b[0:4], magic)
	}
	if b[4] != FormatVersion {
		return header{}, 0, fmt.Errorf("%w: unsupported format version %d", ErrCorrupt, b[4])
	}
	if b[7] != 0 {
		return header{}, 0, fmt.Errorf("%w: reserved byte is %d, want 0", ErrCorrupt, b[7])
	}
	m := binary.LittleEndian.Uint64(b[8:])
	k := binary.LittleEndian.Uint32(b[16:])
	n := binary.LittleEndian.Uint64(b[28:])
	if m > uint64(MaxM) || k > MaxK {
		return header{}, 0, fmt.Errorf("%w: m=%d k=%d out of range", ErrCorrupt, m, k)
	}
	if n > math.MaxInt {
		return header{}, 0, fmt.Errorf("%w: n=%d out of range", ErrCorrupt, n)
	}
	h := header{p: Params{M: int(m), K: int(k), R: int(b[6]), Hash: HashFamily(b[5]),
		Seed: binary.LittleEndian.Uint64(b[20:])}, n: int(n)}
	var err error
	if magic == magicBloom {
		if h.p.R != bloomRField {
			err = fmt.Errorf("%w: bloom filter with r=%d", ErrInvalidParams, h.p.R)
		} else {
			err = h.p.validateHashing()
		}
	} else {
		err = h.p.Validate()
	}
	if err != nil {
		return header{}, 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	size := int64(headerLen) + 8*int64(wordsFor(h.p.M, h.p.R)) + trailerLen
	return h, size, nil
}

func limitOf(maxBytes int) int64 {
	if maxBytes <= 0 {
		return DefaultMaxEncodedSize
	}
	return int64(maxBytes)
}

// appendEncoding appends the encoding of a filter to dst.
func appendEncoding(dst []byte, magic string, p Params, n int, words []uint64) []byte {
	start := len(dst)
	var hdr [headerLen]byte
	putHeader(hdr[:], magic, p, n)
	dst = append(dst, hdr[:]...)
	for _, w := range words {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// writeEncoding streams the encoding of a filter to w in bounded chunks.
func writeEncoding(w io.Writer, magic string, p Params, n int, words []uint64) (int64, error) {
	var buf [4096]byte
	putHeader(buf[:], magic, p, n)
	fill := headerLen
	var total int64
	crc := uint32(0)
	flush := func() error {
		crc = crc32.Update(crc, castagnoli, buf[:fill])
		k, err := w.Write(buf[:fill])
		total += int64(k)
		fill = 0
		return err
	}
	for _, x := range words {
		if fill+8 > len(buf) {
			if err := flush(); err != nil {
				return total, err
			}
		}
		binary.LittleEndian.PutUint64(buf[fill:], x)
		fill += 8
	}
	if err := flush(); err != nil {
		return total, err
	}
	binary.LittleEndian.PutUint32(buf[:], crc)
	k, err := w.Write(buf[:trailerLen])
	return total + int64(k), err
}

// decodeBytes validates a whole encoding held in b.
func decodeBytes(b []byte, magic string, maxBytes int) (header, []uint64, error) {
	limit := limitOf(maxBytes)
	if len(b) < headerLen+trailerLen {
		return header{}, nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte minimum", ErrCorrupt, len(b), headerLen+trailerLen)
	}
	h, size, err := parseHeader(b, magic)
	if err != nil {
		return header{}, nil, err
	}
	if size > limit {
		return header{}, nil, fmt.Errorf("%w: %d bytes declared, limit %d", ErrTooLarge, size, limit)
	}
	if int64(len(b)) != size {
		return header{}, nil, fmt.Errorf("%w: %d bytes, header implies %d", ErrCorrupt, len(b), size)
	}
	body := b[:size-trailerLen]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[size-trailerLen:]); got != want {
		return header{}, nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	words, err := wordsOf(body[headerLen:], h.p)
	return h, words, err
}

// wordsOf converts the packed payload and checks the padding bits.
func wordsOf(payload []byte, p Params) ([]uint64, error) {
	words := make([]uint64, len(payload)/8)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(payload[8*i:])
	}
	if err := checkPadding(words, p); err != nil {
		return nil, err
	}
	return words, nil
}

// checkPadding verifies that the bits after the last counter are zero.
func checkPadding(words []uint64, p Params) error {
	if used := (int64(p.M) * int64(p.R)) % 64; used != 0 && len(words) > 0 {
		if words[len(words)-1]>>used != 0 {
			return fmt.Errorf("%w: padding bits after counter %d are not zero", ErrCorrupt, p.M-1)
		}
	}
	return nil
}

// readEncoding reads one encoding from r, never past its end, allocating
// as the bytes arrive (at most min(declared size, limit)).
func readEncoding(r io.Reader, magic string, maxBytes int) (header, []uint64, int64, error) {
	limit := limitOf(maxBytes)
	var hb [headerLen]byte
	k, err := io.ReadFull(r, hb[:])
	read := int64(k)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return header{}, nil, read, fmt.Errorf("%w: no data: %w", ErrCorrupt, io.EOF)
		}
		return header{}, nil, read, fmt.Errorf("%w: reading header: %w", ErrCorrupt, err)
	}
	h, size, err := parseHeader(hb[:], magic)
	if err != nil {
		return header{}, nil, read, err
	}
	if size > limit {
		return header{}, nil, read, fmt.Errorf("%w: %d bytes declared, limit %d", ErrTooLarge, size, limit)
	}
	// Read the counters in bounded chunks, growing the slice only as the
	// bytes arrive.
	nw := wordsFor(h.p.M, h.p.R)
	words := make([]uint64, 0, min(nw, 1<<12))
	var chunk [1 << 12]byte
	crc := crc32.Checksum(hb[:], castagnoli)
	for len(words) < nw {
		c := chunk[:8*min(nw-len(words), len(chunk)/8)]
		k, err := io.ReadFull(r, c)
		read += int64(k)
		if err != nil {
			return header{}, nil, read, fmt.Errorf("%w: truncated after %d of %d bytes: %w", ErrCorrupt, read, size, io.ErrUnexpectedEOF)
		}
		crc = crc32.Update(crc, castagnoli, c)
		for off := 0; off < len(c); off += 8 {
			words = append(words, binary.LittleEndian.Uint64(c[off:]))
		}
	}
	k, err = io.ReadFull(r, chunk[:trailerLen])
	read += int64(k)
	if err != nil {
		return header{}, nil, read, fmt.Errorf("%w: truncated after %d of %d bytes: %w", ErrCorrupt, read, size, io.ErrUnexpectedEOF)
	}
	if want := binary.LittleEndian.Uint32(chunk[:]); crc != want {
		return header{}, nil, read, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, crc, want)
	}
	if err := checkPadding(words, h.p); err != nil {
		return header{}, nil, read, err
	}
	return h, words, read, nil
}

// EncodedSize returns the length of c's encoding in bytes.
func (c *CBF) EncodedSize() int { return headerLen + 8*len(c.words) + trailerLen }

// AppendBinary appends c's encoding to b (encoding.BinaryAppender).
func (c *CBF) AppendBinary(b []byte) ([]byte, error) {
	return appendEncoding(b, magicCBF, c.p, c.n, c.words), nil
}

// MarshalBinary returns c's encoding (encoding.BinaryMarshaler).
func (c *CBF) MarshalBinary() ([]byte, error) {
	return c.AppendBinary(make([]byte, 0, c.EncodedSize()))
}

// WriteTo writes c's encoding to w (io.WriterTo).
func (c *CBF) WriteTo(w io.Writer) (int64, error) {
	return writeEncoding(w, magicCBF, c.p, c.n, c.words)
}

// DecodeCBF decodes a CBF from exactly the bytes b, refusing encodings
// longer than maxBytes (DefaultMaxEncodedSize when maxBytes <= 0).
func DecodeCBF(b []byte, maxBytes int) (*CBF, error) {
	h, words, err := decodeBytes(b, magicCBF, maxBytes)
	if err != nil {
		return nil, err
	}
	return &CBF{p: h.p, n: h.n, words: words, l: lanesFor(h.p.R)}, nil
}

// ReadCBF reads one CBF from r, reading no further than its end and
// refusing encodings longer than maxBytes (DefaultMaxEncodedSize when
// maxBytes <= 0).
func ReadCBF(r io.Reader, maxBytes int) (*CBF, error) {
	c := new(CBF)
	_, err := c.readFrom(r, maxBytes)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// UnmarshalBinary replaces c with the CBF encoded in b
// (encoding.BinaryUnmarshaler), with limit DefaultMaxEncodedSize. On error
// c is unchanged.
func (c *CBF) UnmarshalBinary(b []byte) error {
	d, err := DecodeCBF(b, DefaultMaxEncodedSize)
	if err != nil {
		return err
	}
	*c = *d
	return nil
}

// ReadFrom replaces c with one CBF read from r (io.ReaderFrom), with limit
// DefaultMaxEncodedSize, reading no further than its end. On error c is
// unchanged.
func (c *CBF) ReadFrom(r io.Reader) (int64, error) { return c.readFrom(r, DefaultMaxEncodedSize) }

func (c *CBF) readFrom(r io.Reader, maxBytes int) (int64, error) {
	h, words, n, err := readEncoding(r, magicCBF, maxBytes)
	if err != nil {
		return n, err
	}
	*c = CBF{p: h.p, n: h.n, words: words, l: lanesFor(h.p.R)}
	return n, nil
}

// EncodedSize returns the length of b's encoding in bytes.
func (b *BloomFilter) EncodedSize() int { return headerLen + 8*len(b.words) + trailerLen }

// AppendBinary appends b's encoding to dst (encoding.BinaryAppender).
func (b *BloomFilter) AppendBinary(dst []byte) ([]byte, error) {
	return appendEncoding(dst, magicBloom, b.p, b.n, b.words), nil
}

// MarshalBinary returns b's encoding (encoding.BinaryMarshaler).
func (b *BloomFilter) MarshalBinary() ([]byte, error) {
	return b.AppendBinary(make([]byte, 0, b.EncodedSize()))
}

// WriteTo writes b's encoding to w (io.WriterTo).
func (b *BloomFilter) WriteTo(w io.Writer) (int64, error) {
	return writeEncoding(w, magicBloom, b.p, b.n, b.words)
}

// DecodeBloom decodes a Bloom filter from exactly the bytes data, refusing
// encodings longer than maxBytes (DefaultMaxEncodedSize when maxBytes <= 0).
func DecodeBloom(data []byte, maxBytes int) (*BloomFilter, error) {
	h, words, err := decodeBytes(data, magicBloom, maxBytes)
	if err != nil {
		return nil, err
	}
	return &BloomFilter{p: h.p, n: h.n, words: words}, nil
}

// ReadBloom reads one Bloom filter from r, reading no further than its end
// and refusing encodings longer than maxBytes (DefaultMaxEncodedSize when
// maxBytes <= 0).
func ReadBloom(r io.Reader, maxBytes int) (*BloomFilter, error) {
	b := new(BloomFilter)
	if _, err := b.readFrom(r, maxBytes); err != nil {
		return nil, err
	}
	return b, nil
}

// UnmarshalBinary replaces b with the Bloom filter encoded in data
// (encoding.BinaryUnmarshaler), limit DefaultMaxEncodedSize. On error b is
// unchanged.
func (b *BloomFilter) UnmarshalBinary(data []byte) error {
	d, err := DecodeBloom(data, DefaultMaxEncodedSize)
	if err != nil {
		return err
	}
	*b = *d
	return nil
}

// ReadFrom replaces b with one Bloom filter read from r (io.ReaderFrom),
// limit DefaultMaxEncodedSize, reading no further than its end. On error b
// is unchanged.
func (b *BloomFilter) ReadFrom(r io.Reader) (int64, error) {
	return b.readFrom(r, DefaultMaxEncodedSize)
}

func (b *BloomFilter) readFrom(r io.Reader, maxBytes int) (int64, error) {
	h, words, n, err := readEncoding(r, magicBloom, maxBytes)
	if err != nil {
		return n, err
	}
	*b = BloomFilter{p: h.p, n: h.n, words: words}
	return n, nil
}
