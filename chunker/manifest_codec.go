package chunker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/reconcile-p2p/reconcile/chunker/internal/bounded"
)

// A manifest's canonical encoding, formats Version and Version2: encodeTo writes
// it (build calls it, and the ID is its hash), DecodeManifest reads and checks it
// (through package bounded, whose errors it wraps in ErrCorrupt).

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
// where chunking is CDCAlgorithm, CDCAlgorithmNC0 or "fixed" (min = normal = max = the block
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
		_ = e.EncodeString(m.chunking.name())
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
	var bad *bounded.Error
	if errors.As(err, &bad) {
		return nil, fmt.Errorf("%w: manifest %w", ErrCorrupt, err)
	}
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

// decodeFiles reads the file list.
func decodeFiles(md *bounded.Decoder) ([]File, error) {
	// Every file takes at least 4 bytes (array header, path, size, mode).
	nf, err := md.Array("file list", 4)
	if err != nil {
		return nil, err
	}
	files := make([]File, nf)
	for i := range files {
		if k, err := md.ArrayLen(); err != nil || k != 3 {
			return nil, bounded.Bad(fmt.Sprintf("file %d (array of %d)", i, k), err)
		}
		p, err := md.Bytes("file path", MaxPathLen)
		if err != nil {
			return nil, err
		}
		size, err := md.Uint("file size", math.MaxInt64)
		if err != nil {
			return nil, err
		}
		mode, err := md.Uint("file mode", 0o777)
		if err != nil {
			return nil, err
		}
		files[i] = File{Path: string(p), Size: int64(size), Mode: uint32(mode)}
	}
	return files, nil
}

func decodeManifest(b []byte) (*Manifest, error) {
	md := bounded.NewDecoder(b)
	n, err := md.ArrayLen()
	if err != nil || n != 6 && n != 9 {
		return nil, bounded.Bad(fmt.Sprintf("header (array of %d)", n), err)
	}
	v, err := md.Uint("version", math.MaxUint32)
	if err != nil {
		return nil, err
	}
	switch {
	case v == Version && n == 6, v == Version2 && n == 9:
	case v == Version || v == Version2:
		return nil, bounded.Bad(fmt.Sprintf("version %d header (array of %d)", v, n), nil)
	default:
		return nil, fmt.Errorf("%w: manifest version %d, this build reads %d and %d", ErrCorrupt, v, Version, Version2)
	}
	hn, err := md.Bytes("hash name", 64)
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

func decodeV1(md *bounded.Decoder) (*Manifest, error) {
	bs, err := md.Uint("block size", MaxBlockSize)
	if err != nil {
		return nil, err
	}
	bc, err := md.Uint("block count", MaxBlocks)
	if err != nil {
		return nil, err
	}
	files, err := decodeFiles(md)
	if err != nil {
		return nil, err
	}
	hashes, err := md.Bytes("block hashes", math.MaxInt)
	if err != nil {
		return nil, err
	}
	if md.Len() != 0 {
		return nil, bounded.Bad(fmt.Sprintf("has %d trailing bytes", md.Len()), nil)
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

func decodeV2(md *bounded.Decoder) (*Manifest, error) {
	if k, err := md.ArrayLen(); err != nil || k != 4 {
		return nil, bounded.Bad(fmt.Sprintf("chunking (array of %d)", k), err)
	}
	algo, err := md.Bytes("chunking", 64)
	if err != nil {
		return nil, err
	}
	var sizes [3]uint64
	for i, what := range []string{"chunking min", "chunking normal", "chunking max"} {
		if sizes[i], err = md.Uint(what, MaxBlockSize); err != nil {
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
			return nil, bounded.Bad(fmt.Sprintf("fixed chunking of sizes %v", sizes), nil)
		}
		bs = int(sizes[0])
	case CDCAlgorithm, CDCAlgorithmNC0:
		c = Chunking{Min: int(sizes[0]), Normal: int(sizes[1]), Max: int(sizes[2])}
		if string(algo) == CDCAlgorithmNC0 {
			c.Algorithm = CDCAlgorithmNC0
		}
		if err := c.Check(); err != nil {
			return nil, fmt.Errorf("%w: manifest chunking: %w", ErrCorrupt, err)
		}
	default:
		return nil, fmt.Errorf("%w: manifest chunking %q, this build knows %q, %q and %q", ErrCorrupt, algo, chunkingFixed, CDCAlgorithm, CDCAlgorithmNC0)
	}
	bc, err := md.Uint("block count", MaxBlocks)
	if err != nil {
		return nil, err
	}
	files, err := decodeFiles(md)
	if err != nil {
		return nil, err
	}
	lens, err := md.Bytes("block lengths", math.MaxInt)
	if err != nil {
		return nil, err
	}
	hashes, err := md.Bytes("block hashes", math.MaxInt)
	if err != nil {
		return nil, err
	}
	// Every link takes at least 3 bytes (array header, path, target).
	nl, err := md.Array("symbolic links", 3)
	if err != nil {
		return nil, err
	}
	links := make([]Symlink, nl)
	for i := range links {
		if k, err := md.ArrayLen(); err != nil || k != 2 {
			return nil, bounded.Bad(fmt.Sprintf("symbolic link %d (array of %d)", i, k), err)
		}
		p, err := md.Bytes("symbolic link path", MaxPathLen)
		if err != nil {
			return nil, err
		}
		tg, err := md.Bytes("symbolic link target", MaxPathLen)
		if err != nil {
			return nil, err
		}
		links[i] = Symlink{Path: string(p), Target: string(tg)}
	}
	nd, err := md.Array("empty folders", 1)
	if err != nil {
		return nil, err
	}
	dirs := make([]string, nd)
	for i := range dirs {
		p, err := md.Bytes("empty folder path", MaxPathLen)
		if err != nil {
			return nil, err
		}
		dirs[i] = string(p)
	}
	if md.Len() != 0 {
		return nil, bounded.Bad(fmt.Sprintf("has %d trailing bytes", md.Len()), nil)
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
			return nil, bounded.Bad("has block lengths for fixed-size blocks", nil)
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
				return nil, bounded.Bad(fmt.Sprintf("block length %d of block %d", l, len(offs)-1), nil)
			}
			if uint64(len(offs)) > bc {
				return nil, bounded.Bad(fmt.Sprintf("has more than %d block lengths", bc), nil)
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
