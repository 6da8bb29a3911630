package chunker

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

// Block size limits and the default.
const (
	// DefaultBlockSize is the block size used when none is given: 256 KiB.
	DefaultBlockSize = 256 << 10
	// MinBlockSize is the smallest allowed block size: 1 KiB.
	MinBlockSize = 1 << 10
	// MaxBlockSize is the largest allowed block size: 16 MiB.
	MaxBlockSize = 16 << 20
)

// Format limits.
const (
	// Version is the manifest format version written by this package.
	Version = 1
	// MaxPathLen bounds the length in bytes of a file path in a manifest.
	MaxPathLen = 4096
	// MaxBlocks bounds the block count of a manifest, so that an index fits an int
	// on every platform and the uint32 of a held-log record.
	MaxBlocks = math.MaxInt32
	// DefaultMaxManifestBytes is the manifest size limit used when reopening a store.
	DefaultMaxManifestBytes = 1 << 30
)

// ID identifies a manifest: the hash of its canonical encoding.
type ID [HashSize]byte

// String returns the id as 64 lowercase hex digits.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// ParseID parses the 64 hex digits printed by ID.String.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 2*HashSize {
		return id, fmt.Errorf("chunker: id %q: want %d hex digits, got %d", s, 2*HashSize, len(s))
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("chunker: id %q: %w", s, err)
	}
	return id, nil
}

// File is one file of a manifest. Its bytes follow those of the file before it in the
// manifest's block stream.
type File struct {
	// Path is slash-separated and relative ("photos/2024/a.jpg"): no empty, "." or
	// ".." element, no leading slash, no backslash or NUL, valid UTF-8, and not in
	// MetaDir (where a store keeps its metadata).
	Path string
	// Size is the length of the file in bytes.
	Size int64
	// Mode holds the Unix permission bits (0 to 0o777).
	Mode uint32
}

// Manifest describes a file or tree cut into blocks. It is immutable.
type Manifest struct {
	blockSize  int
	blockCount int
	files      []File
	starts     []int64 // starts[i] is the stream offset of files[i]
	total      int64
	hashes     []byte // blockCount*HashSize bytes
	enc        []byte // canonical encoding
	id         ID
}

// NewManifest builds a manifest from its files (sorted by path, byte-wise), the block
// size and the hashes of the blocks of their concatenated bytes. It checks every field.
func NewManifest(files []File, blockSize int, hashes [][HashSize]byte) (*Manifest, error) {
	flat := make([]byte, 0, len(hashes)*HashSize)
	for i := range hashes {
		flat = append(flat, hashes[i][:]...)
	}
	return newManifest(append([]File(nil), files...), blockSize, flat)
}

func newManifest(files []File, blockSize int, flat []byte) (*Manifest, error) {
	if blockSize < MinBlockSize || blockSize > MaxBlockSize {
		return nil, fmt.Errorf("%w: %d not in [%d, %d]", ErrBadBlockSize, blockSize, MinBlockSize, MaxBlockSize)
	}
	if err := checkFiles(files); err != nil {
		return nil, err
	}
	m := &Manifest{blockSize: blockSize, files: files, starts: make([]int64, len(files))}
	for i, f := range files {
		m.starts[i] = m.total
		if f.Size > math.MaxInt64-m.total {
			return nil, fmt.Errorf("%w: total size overflows", ErrTooLarge)
		}
		m.total += f.Size
	}
	n := (m.total + int64(blockSize) - 1) / int64(blockSize)
	if n > MaxBlocks || n > math.MaxInt/HashSize {
		return nil, fmt.Errorf("%w: %d blocks", ErrTooLarge, n)
	}
	m.blockCount = int(n)
	if len(flat) != m.blockCount*HashSize {
		return nil, fmt.Errorf("%w: %d block hashes for %d blocks", ErrCorrupt, len(flat)/HashSize, m.blockCount)
	}
	if flat == nil {
		flat = []byte{} // encoded as an empty bin, not as nil
	}
	m.hashes = flat
	var buf bytes.Buffer
	buf.Grow(64 + len(flat) + 32*len(files))
	m.encodeTo(&buf)
	m.enc = buf.Bytes()
	m.id = ID(HashBlock(m.enc))
	return m, nil
}

// checkFiles validates paths, sizes and modes, and that the paths are strictly
// increasing and no path is a directory of another.
func checkFiles(files []File) error {
	names := make(map[string]struct{}, len(files))
	for i, f := range files {
		if err := checkPath(f.Path); err != nil {
			return err
		}
		if i > 0 && files[i-1].Path >= f.Path {
			if files[i-1].Path == f.Path {
				return fmt.Errorf("%w: %q appears twice", ErrBadPath, f.Path)
			}
			return fmt.Errorf("%w: %q after %q: paths must be sorted", ErrBadPath, f.Path, files[i-1].Path)
		}
		if f.Size < 0 {
			return fmt.Errorf("%w: %q has size %d", ErrCorrupt, f.Path, f.Size)
		}
		if f.Mode > 0o777 {
			return fmt.Errorf("%w: %q has mode %#o", ErrCorrupt, f.Path, f.Mode)
		}
		names[f.Path] = struct{}{}
	}
	for _, f := range files {
		for j := strings.IndexByte(f.Path, '/'); j >= 0; {
			if _, ok := names[f.Path[:j]]; ok {
				return fmt.Errorf("%w: %q is a file and a directory of %q", ErrBadPath, f.Path[:j], f.Path)
			}
			k := strings.IndexByte(f.Path[j+1:], '/')
			if k < 0 {
				break
			}
			j += 1 + k
		}
	}
	return nil
}

// checkPath validates one manifest path.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", ErrBadPath)
	case len(p) > MaxPathLen:
		return fmt.Errorf("%w: %d bytes long", ErrBadPath, len(p))
	case !utf8.ValidString(p):
		return fmt.Errorf("%w: %q is not UTF-8", ErrBadPath, p)
	case strings.ContainsAny(p, "\\\x00"):
		return fmt.Errorf("%w: %q has a backslash or NUL", ErrBadPath, p)
	case p[0] == '/':
		return fmt.Errorf("%w: %q is absolute", ErrBadPath, p)
	case p == MetaDir || strings.HasPrefix(p, MetaDir+"/"):
		return fmt.Errorf("%w: %q is in %s, reserved for a store's metadata", ErrBadPath, p, MetaDir)
	}
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "":
			return fmt.Errorf("%w: %q has an empty element", ErrBadPath, p)
		case ".":
			return fmt.Errorf("%w: %q has a \".\" element", ErrBadPath, p)
		case "..":
			return fmt.Errorf("%w: %q escapes its root", ErrBadPath, p)
		}
	}
	return nil
}

// ID returns the manifest's id: the hash of its canonical encoding.
func (m *Manifest) ID() ID { return m.id }

// BlockCount returns the number of blocks.
func (m *Manifest) BlockCount() int { return m.blockCount }

// BlockSize returns the size of every block but the last.
func (m *Manifest) BlockSize() int { return m.blockSize }

// BlockLen returns the length of block i (the last block may be shorter), or 0 if i
// is out of range.
func (m *Manifest) BlockLen(i int) int {
	if i < 0 || i >= m.blockCount {
		return 0
	}
	if i == m.blockCount-1 {
		return int(m.total - int64(i)*int64(m.blockSize))
	}
	return m.blockSize
}

// TotalSize returns the sum of the file sizes.
func (m *Manifest) TotalSize() int64 { return m.total }

// Files returns a copy of the files, in stream order.
func (m *Manifest) Files() []File { return append([]File(nil), m.files...) }

// FileCount returns the number of files.
func (m *Manifest) FileCount() int { return len(m.files) }

// BlockHash returns the hash of block i, or the zero hash if i is out of range.
func (m *Manifest) BlockHash(i int) [HashSize]byte {
	var h [HashSize]byte
	if i >= 0 && i < m.blockCount {
		copy(h[:], m.hashes[i*HashSize:])
	}
	return h
}

// MarshalBinary returns the canonical msgpack encoding; the manifest's ID is its hash.
func (m *Manifest) MarshalBinary() ([]byte, error) { return bytes.Clone(m.enc), nil }

// EncodedLen returns the length of the canonical encoding.
func (m *Manifest) EncodedLen() int { return len(m.enc) }

// Equal reports whether two manifests are the same (same id).
func (m *Manifest) Equal(o *Manifest) bool { return o != nil && m.id == o.id }

// encodeTo writes the canonical encoding: the msgpack array
// [version, hash name, block size, block count, [[path, size, mode]...], hashes (bin)],
// every integer in its shortest form.
func (m *Manifest) encodeTo(w io.Writer) {
	e := msgpack.NewEncoder(w)
	// Writes to a bytes.Buffer do not fail.
	_ = e.EncodeArrayLen(6)
	_ = e.EncodeUint(Version)
	_ = e.EncodeString(HashName)
	_ = e.EncodeUint(uint64(m.blockSize))
	_ = e.EncodeUint(uint64(m.blockCount))
	_ = e.EncodeArrayLen(len(m.files))
	for _, f := range m.files {
		_ = e.EncodeArrayLen(3)
		_ = e.EncodeString(f.Path)
		_ = e.EncodeUint(uint64(f.Size))
		_ = e.EncodeUint(uint64(f.Mode))
	}
	_ = e.EncodeBytes(m.hashes)
}

// DecodeManifest decodes and validates a canonical manifest encoding of at most
// maxBytes bytes (maxBytes <= 0 means DefaultMaxManifestBytes). Every field is
// checked, nothing is allocated beyond what the input's bytes hold, and an input that
// is not exactly the canonical encoding of the manifest it describes is rejected, so
// the id of the result is the hash of b.
func DecodeManifest(b []byte, maxBytes int) (*Manifest, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxManifestBytes
	}
	if len(b) > maxBytes {
		return nil, fmt.Errorf("%w: manifest of %d bytes, limit %d", ErrTooLarge, len(b), maxBytes)
	}
	m, err := decodeManifest(b)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(m.enc, b) {
		return nil, fmt.Errorf("%w: manifest encoding is not canonical", ErrCorrupt)
	}
	return m, nil
}

// DecodeManifestID decodes a manifest like DecodeManifest and checks that its id is
// want (ErrManifestMismatch otherwise).
func DecodeManifestID(b []byte, want ID, maxBytes int) (*Manifest, error) {
	m, err := DecodeManifest(b, maxBytes)
	if err != nil {
		return nil, err
	}
	if m.id != want {
		return nil, fmt.Errorf("%w: manifest id %s, want %s", ErrManifestMismatch, m.id, want)
	}
	return m, nil
}

func decodeManifest(b []byte) (*Manifest, error) {
	r := bytes.NewReader(b)
	d := msgpack.NewDecoder(r)
	bad := func(what string, err error) error {
		if err == nil {
			return fmt.Errorf("%w: manifest %s", ErrCorrupt, what)
		}
		return fmt.Errorf("%w: manifest %s: %w", ErrCorrupt, what, err)
	}
	// readBytes reads a str or bin whose claimed length is checked against the bytes left.
	readBytes := func(what string, limit int) ([]byte, error) {
		n, err := d.DecodeBytesLen()
		if err != nil {
			return nil, bad(what, err)
		}
		if n < 0 || n > r.Len() || n > limit {
			return nil, bad(fmt.Sprintf("%s: length %d", what, n), nil)
		}
		buf := make([]byte, n)
		if err := d.ReadFull(buf); err != nil {
			return nil, bad(what, err)
		}
		return buf, nil
	}
	readUint := func(what string, max uint64) (uint64, error) {
		v, err := d.DecodeUint64()
		if err != nil {
			return 0, bad(what, err)
		}
		if v > max {
			return 0, bad(fmt.Sprintf("%s %d out of range", what, v), nil)
		}
		return v, nil
	}
	n, err := d.DecodeArrayLen()
	if err != nil || n != 6 {
		return nil, bad(fmt.Sprintf("header (array of %d)", n), err)
	}
	v, err := readUint("version", math.MaxUint32)
	if err != nil {
		return nil, err
	}
	if v != Version {
		return nil, fmt.Errorf("%w: manifest version %d, this build reads %d", ErrCorrupt, v, Version)
	}
	hn, err := readBytes("hash name", 64)
	if err != nil {
		return nil, err
	}
	if string(hn) != HashName {
		return nil, fmt.Errorf("%w: manifest hash %q, this build uses %q", ErrCorrupt, hn, HashName)
	}
	bs, err := readUint("block size", MaxBlockSize)
	if err != nil {
		return nil, err
	}
	bc, err := readUint("block count", MaxBlocks)
	if err != nil {
		return nil, err
	}
	nf, err := d.DecodeArrayLen()
	if err != nil {
		return nil, bad("file list", err)
	}
	// Every file takes at least 4 bytes (array header, path, size, mode).
	if nf < 0 || nf > r.Len()/4 {
		return nil, bad(fmt.Sprintf("file count %d", nf), nil)
	}
	files := make([]File, nf)
	for i := range files {
		if k, err := d.DecodeArrayLen(); err != nil || k != 3 {
			return nil, bad(fmt.Sprintf("file %d (array of %d)", i, k), err)
		}
		p, err := readBytes("file path", MaxPathLen)
		if err != nil {
			return nil, err
		}
		size, err := readUint("file size", math.MaxInt64)
		if err != nil {
			return nil, err
		}
		mode, err := readUint("file mode", 0o777)
		if err != nil {
			return nil, err
		}
		files[i] = File{Path: string(p), Size: int64(size), Mode: uint32(mode)}
	}
	hashes, err := readBytes("block hashes", math.MaxInt)
	if err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, bad(fmt.Sprintf("has %d trailing bytes", r.Len()), nil)
	}
	m, err := newManifest(files, int(bs), hashes)
	if err != nil {
		return nil, err
	}
	if uint64(m.blockCount) != bc {
		return nil, fmt.Errorf("%w: manifest says %d blocks, its files make %d", ErrCorrupt, bc, m.blockCount)
	}
	return m, nil
}

// VerifyBlock checks that data is block i of m: ErrBadIndex if i is out of range,
// ErrBadBlock if the length or hash differ.
func VerifyBlock(m *Manifest, i int, data []byte) error {
	if i < 0 || i >= m.blockCount {
		return fmt.Errorf("%w: block %d of %d", ErrBadIndex, i, m.blockCount)
	}
	if len(data) != m.BlockLen(i) {
		return fmt.Errorf("%w: block %d has %d bytes, want %d", ErrBadBlock, i, len(data), m.BlockLen(i))
	}
	h := HashBlock(data)
	if !bytes.Equal(h[:], m.hashes[i*HashSize:(i+1)*HashSize]) {
		return fmt.Errorf("%w: block %d", ErrBadBlock, i)
	}
	return nil
}

// BlockSpan returns the byte range [off, off+BlockLen(i)) of block i in the stream of
// the manifest's files.
func (m *Manifest) BlockSpan(i int) (off int64, n int) {
	return int64(i) * int64(m.blockSize), m.BlockLen(i)
}

// segment is the part of a block that lies in one file.
type segment struct {
	file int   // index into files
	off  int64 // offset in the file
	pos  int   // offset in the block
	n    int
}

// segments calls fn for every non-empty part of block i, in order.
func (m *Manifest) segments(i int, fn func(segment) error) error {
	off, n := m.BlockSpan(i)
	end := off + int64(n)
	// First file whose end is beyond off.
	lo, hi := 0, len(m.files)
	for lo < hi {
		mid := (lo + hi) / 2
		if m.starts[mid]+m.files[mid].Size > off {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	for f := lo; f < len(m.files) && m.starts[f] < end; f++ {
		fs, fe := m.starts[f], m.starts[f]+m.files[f].Size
		s, e := max(fs, off), min(fe, end)
		if e <= s {
			continue
		}
		if err := fn(segment{file: f, off: s - fs, pos: int(s - off), n: int(e - s)}); err != nil {
			return err
		}
	}
	return nil
}
