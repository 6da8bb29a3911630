package reconcile

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/huff0"
)

// ccbfChunk is the largest chunk of filter bytes entropy coded as one huff0 block.
const ccbfChunk = 1 << 16

// Chunk kinds of the compressed filter format.
const (
	ccbfRaw  = 0 // the bytes as they are (incompressible chunk)
	ccbfHuff = 1 // huff0 4-stream Huffman block with its table
	ccbfRLE  = 2 // one byte repeated
)

// CompressFilter appends to dst the entropy-coded form of a filter in the
// cbfalgebra wire format (the [CCBF] method's filter encoding). At the optimal load
// the counters of a CBF are mostly 0 and 1, so Huffman coding of the packed counter
// bytes (two 4-bit counters a byte) brings a filter to about 42 % of its r*m bits.
//
// The format is a uvarint of the decoded length, then chunks of at most 64 KiB of
// decoded bytes, each a kind byte (0 raw, 1 huff0 4X, 2 run of one byte), the
// uvarint decoded length, and the payload (raw: the bytes; run: the byte; huff0:
// a uvarint length and the block, table included).
func CompressFilter(dst, filter []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(filter)))
	// Each chunk carries its own table: with the default policy huff0 may reuse
	// the previous chunk's table and leave it out, which a decoder that reads a
	// table per chunk cannot follow.
	s := huff0.Scratch{Reuse: huff0.ReusePolicyNone}
	for off := 0; off < len(filter); off += ccbfChunk {
		chunk := filter[off:min(off+ccbfChunk, len(filter))]
		out, _, err := huff0.Compress4X(chunk, &s)
		switch {
		case err == nil && len(out) < len(chunk):
			dst = append(dst, ccbfHuff)
			dst = binary.AppendUvarint(dst, uint64(len(chunk)))
			dst = binary.AppendUvarint(dst, uint64(len(out)))
			dst = append(dst, out...)
		case errors.Is(err, huff0.ErrUseRLE):
			dst = append(dst, ccbfRLE)
			dst = binary.AppendUvarint(dst, uint64(len(chunk)))
			dst = append(dst, chunk[0])
		default:
			dst = append(dst, ccbfRaw)
			dst = binary.AppendUvarint(dst, uint64(len(chunk)))
			dst = append(dst, chunk...)
		}
	}
	return dst
}

// DecompressFilter reverses [CompressFilter]. It returns an error wrapping
// [ErrMessage] for malformed input and [ErrLimit] when the decoded filter would
// exceed maxBytes; it never panics, and the output grows only as chunks present in
// data decode (at most maxBytes).
func DecompressFilter(data []byte, maxBytes int) ([]byte, error) {
	total, k := binary.Uvarint(data)
	if k <= 0 {
		return nil, fmt.Errorf("%w: compressed filter: bad length", ErrMessage)
	}
	if total > uint64(maxBytes) {
		return nil, fmt.Errorf("%w: compressed filter of %d bytes > %d", ErrLimit, total, maxBytes)
	}
	data = data[k:]
	out := make([]byte, 0, min(int(total), 16*len(data)+64))
	var s *huff0.Scratch
	for len(data) > 0 {
		kind := data[0]
		n, k := binary.Uvarint(data[1:])
		if k <= 0 || n == 0 || n > ccbfChunk || n > total-uint64(len(out)) {
			return nil, fmt.Errorf("%w: compressed filter: bad chunk length at %d decoded bytes", ErrMessage, len(out))
		}
		data = data[1+k:]
		switch kind {
		case ccbfRaw:
			if uint64(len(data)) < n {
				return nil, fmt.Errorf("%w: compressed filter: truncated raw chunk", ErrMessage)
			}
			out = append(out, data[:n]...)
			data = data[n:]
		case ccbfRLE:
			if len(data) < 1 {
				return nil, fmt.Errorf("%w: compressed filter: truncated run", ErrMessage)
			}
			for range n {
				out = append(out, data[0])
			}
			data = data[1:]
		case ccbfHuff:
			c, k := binary.Uvarint(data)
			if k <= 0 || c > uint64(len(data)-k) {
				return nil, fmt.Errorf("%w: compressed filter: truncated Huffman chunk", ErrMessage)
			}
			block := data[k : k+int(c)]
			data = data[k+int(c):]
			var rest []byte
			var err error
			s, rest, err = huff0.ReadTable(block, s)
			if err != nil {
				return nil, fmt.Errorf("%w: compressed filter: Huffman table: %w", ErrMessage, err)
			}
			s.MaxDecodedSize = int(n)
			dec, err := s.Decompress4X(rest, int(n))
			if err != nil || len(dec) != int(n) {
				return nil, fmt.Errorf("%w: compressed filter: Huffman chunk: %v", ErrMessage, err)
			}
			out = append(out, dec...)
		default:
			return nil, fmt.Errorf("%w: compressed filter: chunk kind %d", ErrMessage, kind)
		}
	}
	if uint64(len(out)) != total {
		return nil, fmt.Errorf("%w: compressed filter: %d of %d bytes", ErrMessage, len(out), total)
	}
	return out, nil
}
