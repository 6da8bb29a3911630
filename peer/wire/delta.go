package wire

import (
	"encoding/binary"
	"fmt"
)

// AppendDeltaAsk encodes the ask for blocks first to first+count-1 as a
// delta against the bytes whose signature is sig (package delta).
func AppendDeltaAsk(b []byte, first, count int, sig []byte) []byte {
	b = binary.AppendUvarint(append(b, TypeDelta), uint64(first))
	return append(binary.AppendUvarint(b, uint64(count)), sig...)
}

// DecodeDeltaAsk decodes an ask of AppendDeltaAsk for a content of limit
// blocks: the run lies within them and holds at most maxCount blocks. sig
// aliases f.
func DecodeDeltaAsk(f []byte, limit, maxCount int) (first, count int, sig []byte, err error) {
	body, err := DecodeTyped(f, TypeDelta)
	if err != nil {
		return 0, 0, nil, err
	}
	a, k := binary.Uvarint(body)
	if k <= 0 {
		return 0, 0, nil, fmt.Errorf("%w: delta ask's first block", ErrMalformed)
	}
	n, j := binary.Uvarint(body[k:])
	if j <= 0 {
		return 0, 0, nil, fmt.Errorf("%w: delta ask's count", ErrMalformed)
	}
	if n == 0 || n > uint64(maxCount) || a >= uint64(limit) || n > uint64(limit)-a {
		return 0, 0, nil, fmt.Errorf("%w: delta ask of %d blocks from %d (%d blocks, at most %d a run)", ErrMalformed, n, a, limit, maxCount)
	}
	return int(a), int(n), body[k+j:], nil
}
