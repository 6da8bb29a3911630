package chunker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker/internal/cut"
	"github.com/reconcile-p2p/reconcile/chunker/internal/pathrules"
)

// TestInternalLimits checks that the internal packages' copies of chunker's
// limits and names are chunker's.
func TestInternalLimits(t *testing.T) {
	if pathrules.MaxPathLen != MaxPathLen || pathrules.MetaDir != MetaDir {
		t.Fatalf("pathrules has MaxPathLen %d and MetaDir %q", pathrules.MaxPathLen, pathrules.MetaDir)
	}
	if cut.HashSize != HashSize || cut.MaxBlocks != MaxBlocks || cut.Algorithm != CDCAlgorithm {
		t.Fatalf("cut has HashSize %d, MaxBlocks %d and Algorithm %q", cut.HashSize, cut.MaxBlocks, cut.Algorithm)
	}
}

// testManifest builds a manifest of files with the given sizes over pseudo-random
// bytes and returns it with the stream bytes.
func testManifest(t testing.TB, blockSize int, sizes ...int64) (*Manifest, []byte) {
	t.Helper()
	var total int64
	files := make([]File, len(sizes))
	for i, s := range sizes {
		files[i] = File{Path: fmt.Sprintf("tree/f%03d.bin", i), Size: s, Mode: 0o644}
		total += s
	}
	data := randBytes(uint64(total)+uint64(len(sizes)), int(total))
	var hashes [][HashSize]byte
	for off := 0; off < len(data); off += blockSize {
		hashes = append(hashes, HashBlock(data[off:min(off+blockSize, len(data))]))
	}
	m, err := NewManifest(files, blockSize, hashes)
	if err != nil {
		t.Fatal(err)
	}
	return m, data
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 42))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestManifestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name      string
		blockSize int
		sizes     []int64
		blocks    int
	}{
		{"empty file", MinBlockSize, []int64{0}, 0},
		{"no files", MinBlockSize, nil, 0},
		{"one byte", MinBlockSize, []int64{1}, 1},
		{"exact blocks", MinBlockSize, []int64{4 * MinBlockSize}, 4},
		{"partial last block", MinBlockSize, []int64{4*MinBlockSize + 17}, 5},
		{"blocks span files", MinBlockSize, []int64{100, 0, 3000, 1, 5000}, 8},
		{"big block", 64 << 10, []int64{100 << 10}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, data := testManifest(t, tc.blockSize, tc.sizes...)
			if m.BlockCount() != tc.blocks {
				t.Fatalf("BlockCount = %d, want %d", m.BlockCount(), tc.blocks)
			}
			if m.TotalSize() != int64(len(data)) {
				t.Fatalf("TotalSize = %d, want %d", m.TotalSize(), len(data))
			}
			enc, err := m.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeManifest(enc, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID() != m.ID() || got.ID() != ID(HashBlock(enc)) {
				t.Fatalf("id %s after round trip, want %s", got.ID(), m.ID())
			}
			if fmt.Sprint(got.Files()) != fmt.Sprint(m.Files()) || got.BlockSize() != m.BlockSize() {
				t.Fatalf("files %v, want %v", got.Files(), m.Files())
			}
			sum := 0
			for i := range got.BlockCount() {
				off, n := got.BlockSpan(i)
				if err := VerifyBlock(got, i, data[off:off+int64(n)]); err != nil {
					t.Fatalf("block %d: %v", i, err)
				}
				sum += n
			}
			if sum != len(data) {
				t.Fatalf("blocks cover %d bytes, want %d", sum, len(data))
			}
			if _, err := DecodeManifestID(enc, m.ID(), 0); err != nil {
				t.Fatal(err)
			}
			var other ID
			if _, err := DecodeManifestID(enc, other, 0); !errors.Is(err, ErrManifestMismatch) {
				t.Fatalf("wrong id: err = %v, want ErrManifestMismatch", err)
			}
		})
	}
}

// TestManifestProperties checks on random manifests that encoding round trips and
// that the segments of every block tile it and stay inside their files.
func TestManifestProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := r.IntN(6)
		files := make([]File, n)
		var total int64
		for i := range files {
			files[i] = File{Path: fmt.Sprintf("d/%c/%d", 'a'+i, trial), Size: int64(r.IntN(5000)), Mode: uint32(r.IntN(0o1000))}
			total += files[i].Size
		}
		bs := MinBlockSize << r.IntN(3)
		nb := int((total + int64(bs) - 1) / int64(bs))
		hashes := make([][HashSize]byte, nb)
		for i := range hashes {
			hashes[i][0], hashes[i][31] = byte(i), byte(trial)
		}
		m, err := NewManifest(files, bs, hashes)
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := m.MarshalBinary()
		got, err := DecodeManifest(enc, len(enc))
		if err != nil || got.ID() != m.ID() {
			t.Fatalf("trial %d: round trip: %v", trial, err)
		}
		for i := range nb {
			pos := 0
			err := m.segments(i, func(g segment) error {
				if g.pos != pos || g.n <= 0 || g.off < 0 || g.off+int64(g.n) > files[g.file].Size {
					return fmt.Errorf("bad segment %+v at pos %d", g, pos)
				}
				if m.starts[g.file]+g.off != int64(i)*int64(bs)+int64(g.pos) {
					return fmt.Errorf("segment %+v is not at its stream offset", g)
				}
				pos += g.n
				return nil
			})
			if err == nil && pos != m.BlockLen(i) {
				err = fmt.Errorf("segments cover %d bytes, want %d", pos, m.BlockLen(i))
			}
			if err != nil {
				t.Fatalf("trial %d block %d: %v", trial, i, err)
			}
			if m.BlockHash(i) != hashes[i] {
				t.Fatalf("BlockHash(%d) differs", i)
			}
		}
	}
}

func TestManifestBadFiles(t *testing.T) {
	h := [][HashSize]byte{{}}
	for _, tc := range []struct {
		name  string
		files []File
		want  error
	}{
		{"parent escape", []File{{Path: "../etc/passwd", Size: 1}}, ErrBadPath},
		{"inner escape", []File{{Path: "a/../../b", Size: 1}}, ErrBadPath},
		{"absolute", []File{{Path: "/etc/passwd", Size: 1}}, ErrBadPath},
		{"dot", []File{{Path: "a/./b", Size: 1}}, ErrBadPath},
		{"empty element", []File{{Path: "a//b", Size: 1}}, ErrBadPath},
		{"trailing slash", []File{{Path: "a/", Size: 1}}, ErrBadPath},
		{"empty", []File{{Path: "", Size: 1}}, ErrBadPath},
		{"backslash", []File{{Path: `a\..\b`, Size: 1}}, ErrBadPath},
		{"nul", []File{{Path: "a\x00b", Size: 1}}, ErrBadPath},
		{"not utf8", []File{{Path: "a\xff", Size: 1}}, ErrBadPath},
		{"too long", []File{{Path: strings.Repeat("a", MaxPathLen+1), Size: 1}}, ErrBadPath},
		{"duplicate", []File{{Path: "a", Size: 1}, {Path: "a", Size: 0}}, ErrBadPath},
		{"unsorted", []File{{Path: "b", Size: 1}, {Path: "a", Size: 0}}, ErrBadPath},
		{"file is a dir", []File{{Path: "a", Size: 1}, {Path: "a/b", Size: 0}}, ErrBadPath},
		{"file is a deep dir", []File{{Path: "a/b", Size: 1}, {Path: "a/b-", Size: 0}, {Path: "a/b/c/d", Size: 0}}, ErrBadPath},
		{"store metadata", []File{{Path: ".reconcile/held", Size: 1}}, ErrBadPath},
		{"store metadata folder", []File{{Path: ".reconcile", Size: 1}}, ErrBadPath},
		{"negative size", []File{{Path: "a", Size: -1}}, ErrCorrupt},
		{"bad mode", []File{{Path: "a", Size: 1, Mode: 0o4755}}, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewManifest(tc.files, MinBlockSize, h)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := NewManifest([]File{{Path: "a", Size: 1}}, MinBlockSize-1, h); !errors.Is(err, ErrBadBlockSize) {
		t.Fatalf("small block size: err = %v", err)
	}
	if _, err := NewManifest([]File{{Path: "a", Size: 1}}, MaxBlockSize+1, h); !errors.Is(err, ErrBadBlockSize) {
		t.Fatalf("large block size: err = %v", err)
	}
	if _, err := NewManifest([]File{{Path: "a", Size: 1}}, MinBlockSize, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("missing hash: err = %v", err)
	}
}

func TestDecodeManifestBad(t *testing.T) {
	m, _ := testManifest(t, MinBlockSize, 3000, 10)
	enc, _ := m.MarshalBinary()
	// Every truncation fails cleanly.
	for n := range len(enc) {
		if _, err := DecodeManifest(enc[:n], 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: err = %v, want ErrCorrupt", n, err)
		}
	}
	if _, err := DecodeManifest(append(bytes.Clone(enc), 0), 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: err = %v", err)
	}
	if _, err := DecodeManifest(enc, len(enc)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: err = %v", err)
	}
	// Every single-byte change is either rejected or gives another id.
	for i := range enc {
		b := bytes.Clone(enc)
		b[i] ^= 0x01
		got, err := DecodeManifest(b, 0)
		if err == nil && got.ID() == m.ID() {
			t.Fatalf("flipping byte %d kept the id", i)
		}
	}
	// A non-canonical integer (block size 1024 as uint64 instead of uint16).
	b := bytes.Clone(enc)
	i := bytes.Index(b, []byte{0xcd, 0x04, 0x00})
	if i < 0 {
		t.Fatal("block size not found in the encoding")
	}
	b = append(b[:i:i], append([]byte{0xcf, 0, 0, 0, 0, 0, 0, 0x04, 0x00}, b[i+3:]...)...)
	if _, err := DecodeManifest(b, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("non-canonical: err = %v", err)
	}
	// A path escape smuggled into an otherwise well-formed encoding.
	evil := bytes.Replace(enc, []byte("tree/f000.bin"), []byte("../f000.bin.."), 1)
	if _, err := DecodeManifest(evil, 0); !errors.Is(err, ErrBadPath) {
		t.Fatalf("path escape: err = %v, want ErrBadPath", err)
	}
}

func TestParseID(t *testing.T) {
	m, _ := testManifest(t, MinBlockSize, 10)
	id, err := ParseID(m.ID().String())
	if err != nil || id != m.ID() {
		t.Fatalf("ParseID(String()) = %v, %v", id, err)
	}
	if id2, err := ParseID(strings.ToUpper(m.ID().String())); err != nil || id2 != id {
		t.Fatalf("upper case: %v, %v", id2, err)
	}
	for _, s := range []string{"", "abc", strings.Repeat("g", 64), m.ID().String() + "00"} {
		if _, err := ParseID(s); err == nil {
			t.Errorf("ParseID(%q) succeeded", s)
		}
	}
}

func TestVerifyBlock(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 2500)
	if err := VerifyBlock(m, 2, data[2048:]); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		i    int
		data []byte
		want error
	}{
		{-1, data[:1024], ErrBadIndex},
		{3, data[:1024], ErrBadIndex},
		{0, data[1:1025], ErrBadBlock},
		{0, data[:1023], ErrBadBlock},
		{2, data[2047:], ErrBadBlock},
		{1, data[:1024], ErrBadBlock},
	} {
		if err := VerifyBlock(m, tc.i, tc.data); !errors.Is(err, tc.want) {
			t.Errorf("VerifyBlock(%d, %d bytes) = %v, want %v", tc.i, len(tc.data), err, tc.want)
		}
	}
}

func FuzzDecodeManifest(f *testing.F) {
	for _, sizes := range [][]int64{{0}, {1}, {1500, 0, 700}, {4096}} {
		m, _ := testManifest(f, MinBlockSize, sizes...)
		enc, _ := m.MarshalBinary()
		f.Add(enc)
	}
	f.Add([]byte{0x96, 0x01})
	f.Add([]byte{0x96, 0x01, 0xa6, 'b', 'l', 'a', 'k', 'e', '3', 0xcd, 0x04, 0x00, 0xce, 0xff, 0xff, 0xff, 0xff, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b, 1<<20)
		if err != nil {
			return
		}
		// Whatever decodes is canonical and self-consistent.
		checkDecoded(t, m, b)
	})
}

// TestBytesOf: the estimate of n blocks' bytes is n blocks of the block
// size (the average, content-defined), never over the total.
func TestBytesOf(t *testing.T) {
	m, err := ChunkReader(context.Background(), "f", 0o644, bytes.NewReader(make([]byte, 10<<10+5)), 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]int64{-1: 0, 0: 0, 1: 4 << 10, 2: 8 << 10, 3: 10<<10 + 5, 9: 10<<10 + 5} {
		if got := m.BytesOf(n); got != want {
			t.Errorf("BytesOf(%d) = %d, want %d", n, got, want)
		}
	}
}
