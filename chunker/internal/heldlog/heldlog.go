// Package heldlog is a block store's held log: its format, an append-only
// record of the blocks whose bytes are verified and on disk, and Log, the only
// writer of it. Replaying the log gives the held set, a Bitset over the
// manifest's block indices.
//
// The log is a 64-byte header followed by 16-byte records. Header: 16 bytes of
// magic and version, the manifest id (32 bytes), 8 zero bytes, and the xxh3 of
// the first 56 bytes (little endian). Record: block index (uint32 LE), op
// (uint32 LE: Held or Dropped), and the xxh3 of the first 8 bytes seeded with
// the manifest id (uint64 LE). Records are only appended; replaying them in
// order gives the held set. A torn or garbage record fails its check and is
// ignored, a partial record at the end is cut off.
package heldlog

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

// The sizes of the log's parts.
const (
	// HeaderSize is the length of the header in bytes.
	HeaderSize = 64
	// RecordSize is the length of one record in bytes.
	RecordSize = 16
)

const magic = "reconcile-held\x00\x01"

// Op is what a record says of its block.
type Op uint32

// The ops of a record.
const (
	// Held records that the block's bytes are verified and on disk.
	Held Op = 1
	// Dropped records that the block is no longer held.
	Dropped Op = 2
)

// Errors of Replay (and Log.Load) for a log that cannot be replayed at all; the
// store maps them to its own sentinel errors.
var (
	// ErrBadHeader is returned for a log whose header is missing or damaged.
	ErrBadHeader = errors.New("held log header missing or damaged")
	// ErrOtherManifest is returned for a log whose header names another manifest.
	ErrOtherManifest = errors.New("held log belongs to another manifest")
)

// Seed derives the record check seed from the manifest id.
func Seed(id [32]byte) uint64 { return binary.LittleEndian.Uint64(id[:8]) }

// Header returns the header of the log of manifest id.
func Header(id [32]byte) []byte {
	h := make([]byte, HeaderSize)
	copy(h, magic)
	copy(h[16:], id[:])
	binary.LittleEndian.PutUint64(h[56:], xxh3.Hash(h[:56]))
	return h
}

// AppendRecord appends the record (index, op), checked with seed (see Seed), to b.
func AppendRecord(b []byte, seed uint64, index int, op Op) []byte {
	var r [RecordSize]byte
	binary.LittleEndian.PutUint32(r[0:], uint32(index))
	binary.LittleEndian.PutUint32(r[4:], uint32(op))
	binary.LittleEndian.PutUint64(r[8:], xxh3.HashSeed(r[:8], seed))
	return append(b, r[:]...)
}

// Replay reads a held log from r, checks its header against id and applies its
// records to held (a bitset over blockCount blocks). It reads in constant memory and
// returns the length of the valid prefix (header and whole records), the number of
// records read and the number of those that failed their check.
func Replay(r io.Reader, id [32]byte, blockCount int, held Bitset) (valid int64, records, bad int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	h := make([]byte, HeaderSize)
	if n, err := io.ReadFull(br, h); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, 0, 0, fmt.Errorf("%w (the log has %d bytes)", ErrBadHeader, n)
		}
		return 0, 0, 0, fmt.Errorf("chunker: read held log: %w", err)
	}
	if string(h[:16]) != magic || binary.LittleEndian.Uint64(h[56:]) != xxh3.Hash(h[:56]) {
		return 0, 0, 0, ErrBadHeader
	}
	if [32]byte(h[16:48]) != id {
		return 0, 0, 0, fmt.Errorf("%w (%x)", ErrOtherManifest, h[16:48])
	}
	seed := Seed(id)
	valid = HeaderSize
	var rec [RecordSize]byte
	for {
		if _, err := io.ReadFull(br, rec[:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return valid, records, bad, nil // a partial record at the end is torn
			}
			return valid, records, bad, fmt.Errorf("chunker: read held log: %w", err)
		}
		valid += RecordSize
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
		switch Op(binary.LittleEndian.Uint32(rec[4:])) {
		case Held:
			held.Set(i)
		case Dropped:
			held.Clear(i)
		default:
			bad++
		}
	}
}

// Log is an open store's held log: every write to the log goes through its
// methods (the header on creation, appended records, the compacting rewrite),
// which the store serializes. Its errors read as the store's ("chunker: ..."),
// which returns them as they are.
type Log struct {
	dir  *os.Root // the folder holding the log
	name string   // the log's name in dir
	id   [32]byte
	seed uint64 // record check seed
	f    *os.File
	off  int64  // where the next record goes
	buf  []byte // records being appended, reused
}

// New returns the log named name in dir of the manifest id, not yet read or
// open: Load reads it, then Open or Rewrite opens it for appending.
func New(dir *os.Root, name string, id [32]byte) *Log {
	return &Log{dir: dir, name: name, id: id, seed: Seed(id)}
}

// Load replays the log into held (a set over blockCount blocks) and returns the
// length of its valid prefix and the number of records read. A log that does not
// exist yet is created empty (a crash may come between a new store's manifest and
// its log).
func (l *Log) Load(ctx context.Context, held Bitset, blockCount int) (valid int64, records int, err error) {
	f, err := l.dir.Open(l.name)
	if errors.Is(err, fs.ErrNotExist) {
		if err := durable.WriteFile(l.dir, l.name, Header(l.id)); err != nil {
			return 0, 0, fmt.Errorf("chunker: create held log: %w", err)
		}
		return HeaderSize, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("chunker: open held log: %w", err)
	}
	defer f.Close()
	valid, records, _, err = Replay(ctxReader{ctx, f}, l.id, blockCount, held)
	return valid, records, err
}

// Open opens the log for appending after its first valid bytes, cutting off a torn
// record at the end.
func (l *Log) Open(valid int64) error {
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

// IsOpen reports whether the log is open for appending.
func (l *Log) IsOpen() bool { return l.f != nil }

// Append writes the records (i, op) for every i in idx and fsyncs them. written
// reports whether the records reached the file (only their fsync failed).
func (l *Log) Append(idx []int, op Op) (written bool, err error) {
	if len(idx) == 0 {
		return true, nil
	}
	buf := l.buf[:0]
	for _, i := range idx {
		buf = AppendRecord(buf, l.seed, i, op)
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

// Rewrite atomically replaces the log with one holding exactly the members of held
// (n, their number, sizes the buffer) and reopens it for appending.
func (l *Log) Rewrite(held Bitset, n int) error {
	buf := make([]byte, 0, HeaderSize+n*RecordSize)
	buf = append(buf, Header(l.id)...)
	for w, word := range held {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			buf = AppendRecord(buf, l.seed, w*64+b, Held)
			word &= word - 1
		}
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("chunker: rewrite held log: %w", err)
	}
	if err := durable.WriteFile(l.dir, l.name, buf); err != nil {
		return fmt.Errorf("chunker: rewrite held log: %w", err)
	}
	if err := l.Open(int64(len(buf))); err != nil {
		return fmt.Errorf("chunker: rewrite held log: %w", err)
	}
	return nil
}

// Close closes the log file if it is open.
func (l *Log) Close() error {
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
