package chunker

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/reconcile-p2p/reconcile/chunker/internal/pathrules"
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
	if c = c.canon(); c.IsZero() {
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

// checkPath validates one manifest path (see File.Path).
func checkPath(p string) error {
	if err := pathrules.CheckPath(p); err != nil {
		return fmt.Errorf("%w: %w", ErrBadPath, err)
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

// BytesOf estimates the bytes of n of the manifest's blocks, for progress
// shown before their indices are known: n times the block size (the
// average block, for content-defined blocks), at most the total size.
func (m *Manifest) BytesOf(n int) int64 {
	per := int64(m.blockSize)
	if m.ContentDefined() {
		per = int64(m.AvgBlockLen())
	}
	return min(int64(max(n, 0))*per, m.total)
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

// Top returns the first element of the manifest's paths: the name of the file of a
// single-file manifest, the top folder of a tree's ("" for an empty manifest).
func (m *Manifest) Top() string {
	var first string
	switch {
	case len(m.files) > 0:
		first = m.files[0].Path
	case len(m.links) > 0:
		first = m.links[0].Path
	case len(m.dirs) > 0:
		first = m.dirs[0]
	}
	top, _, _ := strings.Cut(first, "/")
	return top
}

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
