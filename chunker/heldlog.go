package chunker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"

	"github.com/reconcile-p2p/reconcile/chunker/internal/durable"
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

// heldLog is an open store's held log: every write to the log goes through its
// methods (the header on creation, appended records, the compacting rewrite), which
// the Store serializes under flushMu.
type heldLog struct {
	dir  *os.Root // the folder holding the log
	name string   // the log's name in dir
	id   ID
	seed uint64 // record check seed
	f    *os.File
	off  int64  // where the next record goes
	buf  []byte // records being appended, reused
}

// load replays the log into held (a set over blockCount blocks) and returns the
// length of its valid prefix and the number of records read. A log that does not
// exist yet is created empty (a crash may come between a new store's manifest and
// its log).
func (l *heldLog) load(ctx context.Context, held bitset, blockCount int) (valid int64, records int, err error) {
	f, err := l.dir.Open(l.name)
	if errors.Is(err, fs.ErrNotExist) {
		if err := durable.WriteFile(l.dir, l.name, logHeader(l.id)); err != nil {
			return 0, 0, fmt.Errorf("chunker: create held log: %w", err)
		}
		return logHeaderSize, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("chunker: open held log: %w", err)
	}
	defer f.Close()
	valid, records, _, err = replayLog(ctxReader{ctx, f}, l.id, blockCount, held)
	return valid, records, err
}

// open opens the log for appending after its first valid bytes, cutting off a torn
// record at the end.
func (l *heldLog) open(valid int64) error {
	f, err := l.dir.OpenFile(l.name, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("chunker: open held log: %w", err)
	}
	if err := f.Truncate(valid); err != nil {
		f.Close()
		return fmt.Errorf("chunker: open held log: %w", err)
	}
	l.f, l.off = f, valid
	return nil
}

// append writes the records (i, op) for every i in idx and fsyncs them. written
// reports whether the records reached the file (only their fsync failed).
func (l *heldLog) append(idx []int, op uint32) (written bool, err error) {
	if len(idx) == 0 {
		return true, nil
	}
	buf := l.buf[:0]
	for _, i := range idx {
		buf = appendRecord(buf, l.seed, i, op)
	}
	l.buf = buf
	if _, err := l.f.WriteAt(buf, l.off); err != nil {
		return false, fmt.Errorf("chunker: write held log: %w", err)
	}
	l.off += int64(len(buf))
	if err := l.f.Sync(); err != nil {
		return true, fmt.Errorf("chunker: sync held log: %w", err)
	}
	return true, nil
}

// rewrite atomically replaces the log with one holding exactly the members of held
// (n, their number, sizes the buffer) and reopens it for appending.
func (l *heldLog) rewrite(held bitset, n int) error {
	buf := make([]byte, 0, logHeaderSize+n*logRecordSize)
	buf = append(buf, logHeader(l.id)...)
	for w, word := range held {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			buf = appendRecord(buf, l.seed, w*64+b, opHeld)
			word &= word - 1
		}
	}
	if err := l.close(); err != nil {
		return fmt.Errorf("chunker: rewrite held log: %w", err)
	}
	if err := durable.WriteFile(l.dir, l.name, buf); err != nil {
		return fmt.Errorf("chunker: rewrite held log: %w", err)
	}
	if err := l.open(int64(len(buf))); err != nil {
		return fmt.Errorf("chunker: rewrite held log: %w", err)
	}
	return nil
}

// close closes the log file if it is open.
func (l *heldLog) close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// ctxReader is an io.Reader that fails with the context's error once it is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
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
