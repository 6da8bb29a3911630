package reconcile

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// AppendBitfield appends the set as a bitfield to dst (the [Bitfield] method's
// filter encoding, BitTorrent's): ceil(Universe/8) bytes, block i at bit i%8 of byte
// i/8 (least significant bit first), unused high bits of the last byte zero.
func (s *Set) AppendBitfield(dst []byte) []byte {
	n := (s.u + 7) / 8
	for w := 0; n > 0; w++ {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], s.words[w])
		take := min(n, 8)
		dst = append(dst, b[:take]...)
		n -= take
	}
	return dst
}

// DecodeBitfield parses a bitfield of a universe of the given size (see
// [Set.AppendBitfield]). It fails with [ErrMessage] unless b has exactly
// ceil(universe/8) bytes and the bits past the universe are zero; it allocates only
// the set (universe/8 bytes, the size b already has).
func DecodeBitfield(b []byte, universe int) (*Set, error) {
	if universe < 0 || len(b) != (universe+7)/8 {
		return nil, fmt.Errorf("%w: bitfield of %d bytes for %d blocks", ErrMessage, len(b), universe)
	}
	s := NewSet(universe)
	for w := range s.words {
		var buf [8]byte
		copy(buf[:], b[w*8:])
		s.words[w] = binary.LittleEndian.Uint64(buf[:])
	}
	if rest := universe % 64; rest != 0 && len(s.words) > 0 {
		if s.words[len(s.words)-1]>>uint(rest) != 0 {
			return nil, fmt.Errorf("%w: bitfield has bits past block %d", ErrMessage, universe)
		}
	}
	for _, w := range s.words {
		s.n += bits.OnesCount64(w)
	}
	return s, nil
}
