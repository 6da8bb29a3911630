package chunker

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"github.com/zeebo/xxh3"
)

// The held log ("held" in the metadata folder) is a 64-byte header followed by
// 16-byte records. Header: 16 bytes of magic and version, the manifest id (32 bytes),
// 8 zero bytes, and the xxh3 of the first 56 bytes (little endian). Record: block
// index (uint32 LE), op (uint32 LE: opHeld or opDropped), and the xxh3 of the first 8
// bytes seeded with the manifest id (uint64 LE). Records are only appended; replaying
// them in order gives the held set. A torn or garbage record fails its check and is
// ignored, a partial record at the end is cut off.
const (
	logMagic      = "reconcile-held\x00\x01"
	logHeaderSize = 64
	logRecordSize = 16

	opHeld    = 1
	opDropped = 2
)

// logSeed derives the record check seed from the manifest id.
func logSeed(id ID) uint64 { return binary.LittleEndian.Uint64(id[:8]) }

func logHeader(id ID) []byte {
	h := make([]byte, logHeaderSize)
	copy(h, logMagic)
	copy(h[16:], id[:])
	binary.LittleEndian.PutUint64(h[56:], xxh3.Hash(h[:56]))
	return h
}

// appendRecord appends the record (index, op) to b.
func appendRecord(b []byte, seed uint64, index int, op uint32) []byte {
	var r [logRecordSize]byte
	binary.LittleEndian.PutUint32(r[0:], uint32(index))
	binary.LittleEndian.PutUint32(r[4:], op)
	binary.LittleEndian.PutUint64(r[8:], xxh3.HashSeed(r[:8], seed))
	return append(b, r[:]...)
}

// replayLog reads a held log from r, checks its header against id and applies its
// records to held (a bitset over blockCount blocks). It reads in constant memory and
// returns the length of the valid prefix (header and whole records), the number of
// records read and the number of those that failed their check.
func replayLog(r io.Reader, id ID, blockCount int, held bitset) (valid int64, records, bad int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	h := make([]byte, logHeaderSize)
	if n, err := io.ReadFull(br, h); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, 0, 0, fmt.Errorf("%w: held log has %d bytes, no header", ErrCorrupt, n)
		}
		return 0, 0, 0, fmt.Errorf("chunker: read held log: %w", err)
	}
	if string(h[:16]) != logMagic || binary.LittleEndian.Uint64(h[56:]) != xxh3.Hash(h[:56]) {
		return 0, 0, 0, fmt.Errorf("%w: held log header", ErrCorrupt)
	}
	if ID(h[16:48]) != id {
		return 0, 0, 0, fmt.Errorf("%w: held log belongs to manifest %x", ErrManifestMismatch, h[16:48])
	}
	seed := logSeed(id)
	valid = logHeaderSize
	var rec [logRecordSize]byte
	for {
		if _, err := io.ReadFull(br, rec[:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return valid, records, bad, nil // a partial record at the end is torn
			}
			return valid, records, bad, fmt.Errorf("chunker: read held log: %w", err)
		}
		valid += logRecordSize
		records++
		if binary.LittleEndian.Uint64(rec[8:]) != xxh3.HashSeed(rec[:8], seed) {
			bad++
			continue
		}
		i := int(binary.LittleEndian.Uint32(rec[0:]))
		if i >= blockCount {
			bad++
			continue
		}
		switch binary.LittleEndian.Uint32(rec[4:]) {
		case opHeld:
			held.set(i)
		case opDropped:
			held.clear(i)
		default:
			bad++
		}
	}
}

// bitset is a set of block indices.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) has(i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i int)      { b[i>>6] |= 1 << (i & 63) }
func (b bitset) clear(i int)    { b[i>>6] &^= 1 << (i & 63) }
func (b bitset) setAll(n int) {
	for i := range b {
		b[i] = ^uint64(0)
	}
	if r := n & 63; r != 0 {
		b[len(b)-1] = 1<<r - 1
	}
}

// count returns the number of members.
func (b bitset) count() int {
	c := 0
	for _, w := range b {
		c += bits.OnesCount64(w)
	}
	return c
}
