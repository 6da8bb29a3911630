package chunker

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"slices"
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

// Format versions and limits.
const (
	// Version is the manifest format of fixed-size blocks over regular files
	// only, unchanged since the first release: such manifests are still
	// written in it, so their encoding and ID stay what they were.
	Version = 1
	// Version2 is the manifest format of content-defined blocks (see Chunking)
	// and of any manifest that records symbolic links or empty folders. It adds
	// the chunking rule, every block's length (content-defined blocks), the
	// links and the folders.
	Version2 = 2
	// MaxPathLen bounds the length in bytes of a file path in a manifest, and
	// of a symbolic link's target.
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
//
// Blocks are either of a fixed size (BlockSize bytes, the last one maybe shorter,
// cut from the files' bytes read as one stream, so a block may span files) or
// content-defined (see Chunking: each file cut on its own, its blocks' lengths
// following its bytes, no block spanning files). Either way block i is the byte
// range BlockSpan(i) of the stream of the files' bytes in manifest order.
type Manifest struct {
	version    int
	blockSize  int      // fixed-size: the block size; content-defined: chunking.Max
	chunking   Chunking // zero for fixed-size blocks
	blockCount int
	maxLen     int // the longest block
	files      []File
	starts     []int64 // starts[i] is the stream offset of files[i]
	total      int64
	hashes     []byte  // blockCount*HashSize bytes
	offs       []int64 // content-defined: offs[i] is block i's stream offset, offs[blockCount] = total
	links      []Symlink
	dirs       []string
	enc        []byte // canonical encoding
	id         ID
}

// NewManifest builds a manifest of fixed-size blocks from its files (sorted by path,
// byte-wise), the block size and the hashes of the blocks of their concatenated
// bytes. It checks every field.
func NewManifest(files []File, blockSize int, hashes [][HashSize]byte) (*Manifest, error) {
	return NewFixedManifest(Tree{Files: files}, blockSize, hashes)
}

// NewFixedManifest is NewManifest for a tree that may have symbolic links and
// empty folders (a manifest with any is written in format Version2).
func NewFixedManifest(t Tree, blockSize int, hashes [][HashSize]byte) (*Manifest, error) {
	return build(t.clone(), blockSize, Chunking{}, nil, flatten(hashes))
}

// NewContentManifest builds a manifest of content-defined blocks: the tree, the
// chunking rule that cut it and, in stream order, every block's length and hash.
// The blocks of each file must add up to its size (no block spans files; an empty
// file has none), each at most c.Max bytes long and, but for a file's last block,
// at least c.Min. It does not re-run the chunking: ChunkPath and ChunkReader do.
func NewContentManifest(t Tree, c Chunking, lengths []int, hashes [][HashSize]byte) (*Manifest, error) {
	if c.IsZero() {
		return nil, fmt.Errorf("%w: content-defined manifest without a chunking rule", ErrBadBlockSize)
	}
	if len(lengths) > MaxBlocks {
		return nil, fmt.Errorf("%w: %d blocks", ErrTooLarge, len(lengths))
	}
	offs := make([]int64, len(lengths)+1)
	for i, n := range lengths {
		if n <= 0 || n > c.Max {
			return nil, fmt.Errorf("%w: block %d is %d bytes long, not in [1, %d]", ErrCorrupt, i, n, c.Max)
		}
		offs[i+1] = offs[i] + int64(n)
	}
	return build(t.clone(), 0, c, offs, flatten(hashes))
}

func flatten(hashes [][HashSize]byte) []byte {
	flat := make([]byte, 0, len(hashes)*HashSize)
	for i := range hashes {
		flat = append(flat, hashes[i][:]...)
	}
	return flat
}

// build checks and builds a manifest: of fixed-size blocks if c is zero, else of
// content-defined blocks whose stream offsets are offs (blockCount+1 of them,
// ending at the total size). It takes ownership of t's slices, offs and flat.
func build(t Tree, blockSize int, c Chunking, offs []int64, flat []byte) (*Manifest, error) {
	cdc := !c.IsZero()
	if cdc {
		if err := c.Check(); err != nil {
			return nil, err
		}
		blockSize = c.Max
	} else if blockSize < MinBlockSize || blockSize > MaxBlockSize {
		return nil, fmt.Errorf("%w: %d not in [%d, %d]", ErrBadBlockSize, blockSize, MinBlockSize, MaxBlockSize)
	}
	if err := checkTree(t); err != nil {
		return nil, err
	}
	m := &Manifest{version: Version, blockSize: blockSize, chunking: c, files: t.Files,
		starts: make([]int64, len(t.Files)), links: t.Symlinks, dirs: t.Dirs}
	if cdc || len(t.Symlinks) > 0 || len(t.Dirs) > 0 {
		m.version = Version2
	}
	for i, f := range m.files {
		m.starts[i] = m.total
		if f.Size > math.MaxInt64-m.total {
			return nil, fmt.Errorf("%w: total size overflows", ErrTooLarge)
		}
		m.total += f.Size
	}
	if cdc {
		if err := m.setBlocks(offs); err != nil {
			return nil, err
		}
	} else {
		n := (m.total + int64(blockSize) - 1) / int64(blockSize)
		if n > MaxBlocks || n > math.MaxInt/HashSize {
			return nil, fmt.Errorf("%w: %d blocks", ErrTooLarge, n)
		}
		m.blockCount = int(n)
		m.maxLen = int(min(int64(blockSize), m.total))
	}
	if len(flat) != m.blockCount*HashSize {
		return nil, fmt.Errorf("%w: %d block hashes for %d blocks", ErrCorrupt, len(flat)/HashSize, m.blockCount)
	}
	if flat == nil {
		flat = []byte{} // encoded as an empty bin, not as nil
	}
	m.hashes = flat
	var buf bytes.Buffer
	buf.Grow(64 + len(flat) + len(flat)/8 + 32*len(m.files))
	m.encodeTo(&buf)
	m.enc = buf.Bytes()
	m.id = ID(HashBlock(m.enc))
	return m, nil
}

// setBlocks checks the content-defined block offsets against the files: each
// file's blocks start where it starts and end where it ends, none longer than
// Max, none but a file's last shorter than Min.
func (m *Manifest) setBlocks(offs []int64) error {
	if len(offs) == 0 || offs[0] != 0 {
		return fmt.Errorf("%w: block offsets do not start at 0", ErrCorrupt)
	}
	n := len(offs) - 1
	if n > MaxBlocks || n > math.MaxInt/HashSize {
		return fmt.Errorf("%w: %d blocks", ErrTooLarge, n)
	}
	c := m.chunking
	i := 0
	for k, f := range m.files {
		if f.Size == 0 {
			continue
		}
		end := m.starts[k] + f.Size // offs[i] is the file's start: the previous file ended there
		for {
			if i >= n {
				return fmt.Errorf("%w: blocks end inside %q", ErrCorrupt, f.Path)
			}
			l := offs[i+1] - offs[i]
			if l <= 0 || l > int64(c.Max) {
				return fmt.Errorf("%w: block %d is %d bytes long, not in [1, %d]", ErrCorrupt, i, l, c.Max)
			}
			if offs[i+1] > end {
				return fmt.Errorf("%w: block %d spans the end of %q", ErrCorrupt, i, f.Path)
			}
			m.maxLen = max(m.maxLen, int(l))
			i++
			if offs[i] == end {
				break
			}
			if l < int64(c.Min) {
				return fmt.Errorf("%w: block %d of %q is %d bytes long, under the minimum %d", ErrCorrupt, i-1, f.Path, l, c.Min)
			}
		}
	}
	if i != n {
		return fmt.Errorf("%w: %d blocks for files of %d", ErrCorrupt, n, i)
	}
	m.blockCount = n
	m.offs = offs
	return nil
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

// Version returns the manifest's format version: Version, or Version2 for
// content-defined blocks and for manifests with symbolic links or empty folders.
func (m *Manifest) Version() int { return m.version }

// BlockCount returns the number of blocks.
func (m *Manifest) BlockCount() int { return m.blockCount }

// BlockSize returns the longest a block of the manifest may be: for fixed-size
// blocks the size of every block but the last, for content-defined blocks the
// maximum of its chunking rule (Chunking().Max), so that a buffer of BlockSize
// bytes holds any block. Code that takes every block to be BlockSize bytes long
// holds only for fixed-size manifests (see ContentDefined); use BlockLen and
// BlockSpan.
func (m *Manifest) BlockSize() int { return m.blockSize }

// ContentDefined reports whether the blocks are content-defined (see Chunking):
// their lengths vary and no block spans files. False means fixed-size blocks, as
// a fixed-shard scheme (the Byers baseline) requires.
func (m *Manifest) ContentDefined() bool { return m.offs != nil }

// Chunking returns the chunking rule of content-defined blocks, or the zero
// Chunking for fixed-size blocks.
func (m *Manifest) Chunking() Chunking { return m.chunking }

// MaxBlockLen returns the length of the longest block (0 if there is none).
func (m *Manifest) MaxBlockLen() int { return m.maxLen }

// AvgBlockLen returns the average block length, rounded up (0 if there is no block).
func (m *Manifest) AvgBlockLen() int {
	if m.blockCount == 0 {
		return 0
	}
	return int((m.total + int64(m.blockCount) - 1) / int64(m.blockCount))
}

// BlockLen returns the length of block i, or 0 if i is out of range.
func (m *Manifest) BlockLen(i int) int {
	if i < 0 || i >= m.blockCount {
		return 0
	}
	if m.offs != nil {
		return int(m.offs[i+1] - m.offs[i])
	}
	if i == m.blockCount-1 {
		return int(m.total - int64(i)*int64(m.blockSize))
	}
	return m.blockSize
}

// BlockSpan returns the byte range [off, off+BlockLen(i)) of block i in the stream of
// the manifest's files (n is 0 if i is out of range).
func (m *Manifest) BlockSpan(i int) (off int64, n int) {
	if m.offs != nil && i >= 0 && i < m.blockCount {
		return m.offs[i], int(m.offs[i+1] - m.offs[i])
	}
	return int64(i) * int64(m.blockSize), m.BlockLen(i)
}

// FileBlocks returns the blocks that hold bytes of file k: [first, end), empty for
// an empty file or k out of range. Content-defined blocks belong to one file
// each; fixed-size blocks at a file's edges may hold bytes of its neighbours too.
func (m *Manifest) FileBlocks(k int) (first, end int) {
	if k < 0 || k >= len(m.files) || m.files[k].Size == 0 {
		return 0, 0
	}
	start, stop := m.starts[k], m.starts[k]+m.files[k].Size
	if m.offs != nil {
		first, _ = slices.BinarySearch(m.offs[:m.blockCount], start)
		end, _ = slices.BinarySearch(m.offs[:m.blockCount], stop)
		return first, end
	}
	bs := int64(m.blockSize)
	return int(start / bs), int((stop-1)/bs) + 1
}

// TotalSize returns the sum of the file sizes.
func (m *Manifest) TotalSize() int64 { return m.total }

// Files returns a copy of the files, in stream order.
func (m *Manifest) Files() []File { return append([]File(nil), m.files...) }

// FileCount returns the number of files.
func (m *Manifest) FileCount() int { return len(m.files) }

// Symlinks returns a copy of the symbolic links, sorted by path.
func (m *Manifest) Symlinks() []Symlink { return append([]Symlink(nil), m.links...) }

// Dirs returns a copy of the empty folders, sorted by path.
func (m *Manifest) Dirs() []string { return append([]string(nil), m.dirs...) }

// Tree returns a copy of the files, symbolic links and empty folders.
func (m *Manifest) Tree() Tree { return Tree{Files: m.Files(), Symlinks: m.Symlinks(), Dirs: m.Dirs()} }

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

// chunkingFixed names fixed-size blocks in a Version2 manifest.
const chunkingFixed = "fixed"

// encodeTo writes the canonical encoding, every integer in its shortest form.
// Version 1 is the msgpack array
//
//	[1, hash name, block size, block count, [[path, size, mode]...], hashes (bin)]
//
// and Version2 the array
//
//	[2, hash name, [chunking, min, normal, max], block count,
//	 [[path, size, mode]...], lengths (bin), hashes (bin),
//	 [[link path, target]...], [empty folder path...]]
//
// where chunking is CDCAlgorithm or "fixed" (min = normal = max = the block
// size) and lengths holds every block's length as a uvarint (encoding/binary)
// for content-defined blocks, nothing for fixed-size ones.
func (m *Manifest) encodeTo(w io.Writer) {
	e := msgpack.NewEncoder(w)
	// Writes to a bytes.Buffer do not fail.
	if m.version == Version {
		_ = e.EncodeArrayLen(6)
		_ = e.EncodeUint(Version)
		_ = e.EncodeString(HashName)
		_ = e.EncodeUint(uint64(m.blockSize))
		_ = e.EncodeUint(uint64(m.blockCount))
		m.encodeFiles(e)
		_ = e.EncodeBytes(m.hashes)
		return
	}
	_ = e.EncodeArrayLen(9)
	_ = e.EncodeUint(Version2)
	_ = e.EncodeString(HashName)
	_ = e.EncodeArrayLen(4)
	if m.offs != nil {
		_ = e.EncodeString(CDCAlgorithm)
		_ = e.EncodeUint(uint64(m.chunking.Min))
		_ = e.EncodeUint(uint64(m.chunking.Normal))
		_ = e.EncodeUint(uint64(m.chunking.Max))
	} else {
		_ = e.EncodeString(chunkingFixed)
		for range 3 {
			_ = e.EncodeUint(uint64(m.blockSize))
		}
	}
	_ = e.EncodeUint(uint64(m.blockCount))
	m.encodeFiles(e)
	var lens []byte
	if m.offs != nil {
		lens = make([]byte, 0, 3*m.blockCount)
		for i := range m.blockCount {
			lens = binary.AppendUvarint(lens, uint64(m.offs[i+1]-m.offs[i]))
		}
	}
	if lens == nil {
		lens = []byte{} // an empty bin, not nil
	}
	_ = e.EncodeBytes(lens)
	_ = e.EncodeBytes(m.hashes)
	_ = e.EncodeArrayLen(len(m.links))
	for _, l := range m.links {
		_ = e.EncodeArrayLen(2)
		_ = e.EncodeString(l.Path)
		_ = e.EncodeString(l.Target)
	}
	_ = e.EncodeArrayLen(len(m.dirs))
	for _, d := range m.dirs {
		_ = e.EncodeString(d)
	}
}

func (m *Manifest) encodeFiles(e *msgpack.Encoder) {
	_ = e.EncodeArrayLen(len(m.files))
	for _, f := range m.files {
		_ = e.EncodeArrayLen(3)
		_ = e.EncodeString(f.Path)
		_ = e.EncodeUint(uint64(f.Size))
		_ = e.EncodeUint(uint64(f.Mode))
	}
}

// DecodeManifest decodes and validates a canonical manifest encoding of at most
// maxBytes bytes (maxBytes <= 0 means DefaultMaxManifestBytes), of format Version
// or Version2. Every field is checked, nothing is allocated beyond what the
// input's bytes hold, and an input that is not exactly the canonical encoding of
// the manifest it describes is rejected, so the id of the result is the hash of b.
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

// manifestDecoder reads the fields of an encoding, checking every claimed length
// and count against the bytes left.
type manifestDecoder struct {
	r *bytes.Reader
	d *msgpack.Decoder
}

func (md manifestDecoder) bad(what string, err error) error {
	if err == nil {
		return fmt.Errorf("%w: manifest %s", ErrCorrupt, what)
	}
	return fmt.Errorf("%w: manifest %s: %w", ErrCorrupt, what, err)
}

// bytes reads a str or bin whose claimed length is checked against the bytes left.
func (md manifestDecoder) bytes(what string, limit int) ([]byte, error) {
	n, err := md.d.DecodeBytesLen()
	if err != nil {
		return nil, md.bad(what, err)
	}
	if n < 0 || n > md.r.Len() || n > limit {
		return nil, md.bad(fmt.Sprintf("%s: length %d", what, n), nil)
	}
	buf := make([]byte, n)
	if err := md.d.ReadFull(buf); err != nil {
		return nil, md.bad(what, err)
	}
	return buf, nil
}

func (md manifestDecoder) uint(what string, max uint64) (uint64, error) {
	v, err := md.d.DecodeUint64()
	if err != nil {
		return 0, md.bad(what, err)
	}
	if v > max {
		return 0, md.bad(fmt.Sprintf("%s %d out of range", what, v), nil)
	}
	return v, nil
}

// array reads an array header of a count that, at minSize bytes per element,
// the bytes left can hold.
func (md manifestDecoder) array(what string, minSize int) (int, error) {
	n, err := md.d.DecodeArrayLen()
	if err != nil {
		return 0, md.bad(what, err)
	}
	if n < 0 || n > md.r.Len()/minSize {
		return 0, md.bad(fmt.Sprintf("%s count %d", what, n), nil)
	}
	return n, nil
}

func (md manifestDecoder) files() ([]File, error) {
	// Every file takes at least 4 bytes (array header, path, size, mode).
	nf, err := md.array("file list", 4)
	if err != nil {
		return nil, err
	}
	files := make([]File, nf)
	for i := range files {
		if k, err := md.d.DecodeArrayLen(); err != nil || k != 3 {
			return nil, md.bad(fmt.Sprintf("file %d (array of %d)", i, k), err)
		}
		p, err := md.bytes("file path", MaxPathLen)
		if err != nil {
			return nil, err
		}
		size, err := md.uint("file size", math.MaxInt64)
		if err != nil {
			return nil, err
		}
		mode, err := md.uint("file mode", 0o777)
		if err != nil {
			return nil, err
		}
		files[i] = File{Path: string(p), Size: int64(size), Mode: uint32(mode)}
	}
	return files, nil
}

func decodeManifest(b []byte) (*Manifest, error) {
	r := bytes.NewReader(b)
	md := manifestDecoder{r: r, d: msgpack.NewDecoder(r)}
	n, err := md.d.DecodeArrayLen()
	if err != nil || n != 6 && n != 9 {
		return nil, md.bad(fmt.Sprintf("header (array of %d)", n), err)
	}
	v, err := md.uint("version", math.MaxUint32)
	if err != nil {
		return nil, err
	}
	switch {
	case v == Version && n == 6, v == Version2 && n == 9:
	case v == Version || v == Version2:
		return nil, md.bad(fmt.Sprintf("version %d header (array of %d)", v, n), nil)
	default:
		return nil, fmt.Errorf("%w: manifest version %d, this build reads %d and %d", ErrCorrupt, v, Version, Version2)
	}
	hn, err := md.bytes("hash name", 64)
	if err != nil {
		return nil, err
	}
	if string(hn) != HashName {
		return nil, fmt.Errorf("%w: manifest hash %q, this build uses %q", ErrCorrupt, hn, HashName)
	}
	if v == Version {
		return decodeV1(md)
	}
	return decodeV2(md)
}

func decodeV1(md manifestDecoder) (*Manifest, error) {
	bs, err := md.uint("block size", MaxBlockSize)
	if err != nil {
		return nil, err
	}
	bc, err := md.uint("block count", MaxBlocks)
	if err != nil {
		return nil, err
	}
	files, err := md.files()
	if err != nil {
		return nil, err
	}
	hashes, err := md.bytes("block hashes", math.MaxInt)
	if err != nil {
		return nil, err
	}
	if md.r.Len() != 0 {
		return nil, md.bad(fmt.Sprintf("has %d trailing bytes", md.r.Len()), nil)
	}
	m, err := build(Tree{Files: files}, int(bs), Chunking{}, nil, hashes)
	if err != nil {
		return nil, err
	}
	if uint64(m.blockCount) != bc {
		return nil, fmt.Errorf("%w: manifest says %d blocks, its files make %d", ErrCorrupt, bc, m.blockCount)
	}
	return m, nil
}

func decodeV2(md manifestDecoder) (*Manifest, error) {
	if k, err := md.d.DecodeArrayLen(); err != nil || k != 4 {
		return nil, md.bad(fmt.Sprintf("chunking (array of %d)", k), err)
	}
	algo, err := md.bytes("chunking", 64)
	if err != nil {
		return nil, err
	}
	var sizes [3]uint64
	for i, what := range []string{"chunking min", "chunking normal", "chunking max"} {
		if sizes[i], err = md.uint(what, MaxBlockSize); err != nil {
			return nil, err
		}
	}
	var (
		c  Chunking
		bs int
	)
	switch string(algo) {
	case chunkingFixed:
		if sizes[0] != sizes[1] || sizes[1] != sizes[2] {
			return nil, md.bad(fmt.Sprintf("fixed chunking of sizes %v", sizes), nil)
		}
		bs = int(sizes[0])
	case CDCAlgorithm:
		c = Chunking{Min: int(sizes[0]), Normal: int(sizes[1]), Max: int(sizes[2])}
		if err := c.Check(); err != nil {
			return nil, fmt.Errorf("%w: manifest chunking: %w", ErrCorrupt, err)
		}
	default:
		return nil, fmt.Errorf("%w: manifest chunking %q, this build knows %q and %q", ErrCorrupt, algo, chunkingFixed, CDCAlgorithm)
	}
	bc, err := md.uint("block count", MaxBlocks)
	if err != nil {
		return nil, err
	}
	files, err := md.files()
	if err != nil {
		return nil, err
	}
	lens, err := md.bytes("block lengths", math.MaxInt)
	if err != nil {
		return nil, err
	}
	hashes, err := md.bytes("block hashes", math.MaxInt)
	if err != nil {
		return nil, err
	}
	// Every link takes at least 3 bytes (array header, path, target).
	nl, err := md.array("symbolic links", 3)
	if err != nil {
		return nil, err
	}
	links := make([]Symlink, nl)
	for i := range links {
		if k, err := md.d.DecodeArrayLen(); err != nil || k != 2 {
			return nil, md.bad(fmt.Sprintf("symbolic link %d (array of %d)", i, k), err)
		}
		p, err := md.bytes("symbolic link path", MaxPathLen)
		if err != nil {
			return nil, err
		}
		tg, err := md.bytes("symbolic link target", MaxPathLen)
		if err != nil {
			return nil, err
		}
		links[i] = Symlink{Path: string(p), Target: string(tg)}
	}
	nd, err := md.array("empty folders", 1)
	if err != nil {
		return nil, err
	}
	dirs := make([]string, nd)
	for i := range dirs {
		p, err := md.bytes("empty folder path", MaxPathLen)
		if err != nil {
			return nil, err
		}
		dirs[i] = string(p)
	}
	if md.r.Len() != 0 {
		return nil, md.bad(fmt.Sprintf("has %d trailing bytes", md.r.Len()), nil)
	}
	if len(links) == 0 {
		links = nil
	}
	if len(dirs) == 0 {
		dirs = nil
	}
	t := Tree{Files: files, Symlinks: links, Dirs: dirs}
	var offs []int64
	if c.IsZero() {
		if len(lens) != 0 {
			return nil, md.bad("has block lengths for fixed-size blocks", nil)
		}
	} else {
		// The hashes bound the count before the offsets are allocated.
		if uint64(len(hashes)) != bc*HashSize {
			return nil, fmt.Errorf("%w: %d bytes of block hashes for %d blocks", ErrCorrupt, len(hashes), bc)
		}
		offs = make([]int64, 1, bc+1)
		for len(lens) > 0 {
			l, k := binary.Uvarint(lens)
			if k <= 0 || l == 0 || l > uint64(c.Max) {
				return nil, md.bad(fmt.Sprintf("block length %d of block %d", l, len(offs)-1), nil)
			}
			if uint64(len(offs)) > bc {
				return nil, md.bad(fmt.Sprintf("has more than %d block lengths", bc), nil)
			}
			offs = append(offs, offs[len(offs)-1]+int64(l))
			lens = lens[k:]
		}
	}
	m, err := build(t, bs, c, offs, hashes)
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

// segment is the part of a block that lies in one file.
type segment struct {
	file int   // index into files
	off  int64 // offset in the file
	pos  int   // offset in the block
	n    int
}

// segments calls fn for every non-empty part of block i, in order. It finds the
// first file by binary search: O(log files), whatever the block count.
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
