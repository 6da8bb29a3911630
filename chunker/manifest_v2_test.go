package chunker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
)

// v2Manifest returns a content-defined manifest of two files, a link and an
// empty folder.
func v2Manifest(t testing.TB) *Manifest {
	t.Helper()
	a, b := randBytes(61, 20<<10), randBytes(62, 3000)
	lens, hashes := cutSmall(a)
	l2, h2 := cutSmall(b)
	m, err := NewContentManifest(Tree{
		Files:    []File{{Path: "t/a", Size: int64(len(a)), Mode: 0o644}, {Path: "t/b", Size: int64(len(b)), Mode: 0o600}},
		Symlinks: []Symlink{{Path: "t/l", Target: "a"}},
		Dirs:     []string{"t/z"},
	}, smallChunking, append(lens, l2...), append(hashes, h2...))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// cutSmall cuts data with smallChunking, returning the lengths and hashes.
func cutSmall(data []byte) ([]int, [][HashSize]byte) {
	m, err := ChunkReader(context.Background(), "x", 0, bytes.NewReader(data), 0, WithChunking(smallChunking))
	if err != nil {
		panic(err)
	}
	var lens []int
	var hashes [][HashSize]byte
	for i := range m.BlockCount() {
		lens = append(lens, m.BlockLen(i))
		hashes = append(hashes, m.BlockHash(i))
	}
	return lens, hashes
}

func TestManifestV2RoundTrip(t *testing.T) {
	m := v2Manifest(t)
	enc, _ := m.MarshalBinary()
	got, err := DecodeManifest(enc, 0)
	if err != nil || got.ID() != m.ID() || fmt.Sprint(got.Tree()) != fmt.Sprint(m.Tree()) || got.Chunking() != smallChunking {
		t.Fatalf("round trip: %v", err)
	}
	for i := range m.BlockCount() {
		if o1, n1 := got.BlockSpan(i); o1 != m.offs[i] || n1 != m.BlockLen(i) {
			t.Fatalf("block %d span %d+%d", i, o1, n1)
		}
	}
	// Each rule is recorded by name and read back; CDCAlgorithm given by name
	// is the same rule as "" (same manifest, same id).
	for _, c := range []Chunking{DefaultChunking, {Algorithm: CDCAlgorithm, Min: 96 << 10, Normal: 128 << 10, Max: 1 << 20}} {
		m := chunkBytes(t, "r.bin", randBytes(3, 1<<20), c)
		enc, _ := m.MarshalBinary()
		got, err := DecodeManifest(enc, 0)
		if err != nil || got.ID() != m.ID() || got.Chunking() != c.canon() || !bytes.Contains(enc, []byte(c.name())) {
			t.Fatalf("%s: round trip: %v, chunking %s", c, err, got.Chunking())
		}
	}
	if m2 := chunkBytes(t, "r.bin", randBytes(3, 1<<20), Chunking{Min: 96 << 10, Normal: 128 << 10, Max: 1 << 20}); m2.Chunking().Algorithm != "" {
		t.Fatal("CDCAlgorithm not written \"\"")
	}
	if err := (Chunking{Algorithm: "rabin", Min: 1 << 10, Normal: 4 << 10, Max: 16 << 10}).Check(); !errors.Is(err, ErrBadBlockSize) {
		t.Fatalf("unknown algorithm: err = %v", err)
	}
	// Every truncation fails cleanly, every byte flip is rejected or changes the id.
	for n := range len(enc) {
		if _, err := DecodeManifest(enc[:n], 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: err = %v, want ErrCorrupt", n, err)
		}
	}
	for i := range enc {
		b := bytes.Clone(enc)
		b[i] ^= 0x01
		if got, err := DecodeManifest(b, 0); err == nil && got.ID() == m.ID() {
			t.Fatalf("flipping byte %d kept the id", i)
		}
	}
	// A fixed-size manifest with only an empty folder is Version2 too.
	mf, err := NewFixedManifest(Tree{Dirs: []string{"d"}}, MinBlockSize, nil)
	if err != nil || mf.Version() != Version2 || mf.ContentDefined() {
		t.Fatalf("fixed with a folder: %v", err)
	}
	enc, _ = mf.MarshalBinary()
	if got, err := DecodeManifest(enc, 0); err != nil || got.ID() != mf.ID() {
		t.Fatalf("fixed v2 round trip: %v", err)
	}
}

// TestManifestV2Bad encodes manifests that break one rule each (bypassing the
// constructors' checks) and checks that decoding refuses them.
func TestManifestV2Bad(t *testing.T) {
	good := v2Manifest(t)
	for _, tc := range []struct {
		name string
		edit func(m *Manifest)
		want error
	}{
		{"link leaves the tree", func(m *Manifest) { m.links = []Symlink{{"t/l", "../x"}} }, ErrBadPath},
		{"absolute link", func(m *Manifest) { m.links = []Symlink{{"t/l", "/etc"}} }, ErrBadPath},
		{"unclean target", func(m *Manifest) { m.links = []Symlink{{"t/l", "a/../b"}} }, ErrBadPath},
		{"link at the top", func(m *Manifest) { m.links = []Symlink{{"l", "t"}} }, ErrBadPath},
		{"link is a file", func(m *Manifest) { m.links = []Symlink{{"t/a", "b"}} }, ErrBadPath},
		{"link holds a file", func(m *Manifest) { m.links = []Symlink{{"t", "t"}} }, ErrBadPath},
		{"links unsorted", func(m *Manifest) { m.links = []Symlink{{"t/m", "a"}, {"t/l", "a"}} }, ErrBadPath},
		{"folder not empty", func(m *Manifest) { m.dirs = []string{"t"} }, ErrBadPath},
		{"folder escapes", func(m *Manifest) { m.dirs = []string{"../z"} }, ErrBadPath},
		{"block spans files", func(m *Manifest) {
			m.offs = append([]int64(nil), m.offs...)
			k, _ := m.FileBlocks(1)
			m.offs[k] += 10
		}, ErrCorrupt},
		{"block under min", func(m *Manifest) {
			m.offs = append([]int64(nil), m.offs...)
			m.offs[1] = 100
		}, ErrCorrupt},
		{"block over max", func(m *Manifest) {
			m.chunking.Max = m.MaxBlockLen() - 1
		}, ErrCorrupt},
		{"bad chunking", func(m *Manifest) { m.chunking.Normal = 3000 }, ErrCorrupt},
		{"lengths of fixed blocks", func(m *Manifest) {}, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := *good
			tc.edit(&m)
			var buf bytes.Buffer
			if tc.name == "lengths of fixed blocks" {
				// Put a length where a fixed-size manifest's empty bin of lengths is.
				mf, err := NewFixedManifest(Tree{Files: []File{{Path: "d/f", Size: 3000}}, Dirs: []string{"d/e"}}, MinBlockSize, make([][HashSize]byte, 3))
				if err != nil {
					t.Fatal(err)
				}
				enc := bytes.Clone(mf.enc)
				i := bytes.Index(enc, []byte{0xc4, 0x00, 0xc4, 0x60})
				if i < 0 {
					t.Fatal("empty lengths not found")
				}
				enc = append(enc[:i:i], append([]byte{0xc4, 0x01, 0x05}, enc[i+2:]...)...)
				buf = *bytes.NewBuffer(enc)
			} else {
				m.encodeTo(&buf)
			}
			if _, err := DecodeManifest(buf.Bytes(), 0); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// The constructor refuses the same.
	if _, err := NewContentManifest(Tree{Files: []File{{Path: "f", Size: 10}}}, smallChunking, []int{4, 6}, make([][HashSize]byte, 2)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short non-last block: err = %v", err)
	}
	if _, err := NewContentManifest(Tree{Files: []File{{Path: "f", Size: 10}}}, Chunking{}, []int{10}, make([][HashSize]byte, 1)); !errors.Is(err, ErrBadBlockSize) {
		t.Fatalf("zero chunking: err = %v", err)
	}
}

// checkDecoded checks what any decoded manifest must satisfy.
func checkDecoded(t *testing.T, m *Manifest, b []byte) {
	enc, _ := m.MarshalBinary()
	if !bytes.Equal(enc, b) || m.ID() != ID(HashBlock(b)) {
		t.Fatal("decoded manifest does not re-encode to its input")
	}
	var total int64
	for _, f := range m.Files() {
		if checkPath(f.Path) != nil {
			t.Fatalf("bad path %q accepted", f.Path)
		}
		total += f.Size
	}
	if total != m.TotalSize() {
		t.Fatal("sizes disagree")
	}
	var off int64
	for i := range m.BlockCount() {
		o, n := m.BlockSpan(i)
		if o != off || n <= 0 || n > m.BlockSize() || n > m.MaxBlockLen() {
			t.Fatalf("block %d: span %d+%d at %d", i, o, n, off)
		}
		off += int64(n)
		if m.ContentDefined() {
			segs := 0
			m.segments(i, func(segment) error { segs++; return nil })
			if segs != 1 {
				t.Fatalf("content-defined block %d lies in %d files", i, segs)
			}
		}
	}
	if off != total {
		t.Fatalf("blocks cover %d bytes of %d", off, total)
	}
	if !m.ContentDefined() && int64(m.BlockCount()) != (total+int64(m.BlockSize())-1)/int64(m.BlockSize()) {
		t.Fatal("fixed-size block count disagrees")
	}
	for _, l := range m.Symlinks() {
		if checkPath(l.Path) != nil || checkTarget(l) != nil {
			t.Fatalf("bad link %v accepted", l)
		}
	}
}

func FuzzDecodeManifestV2(f *testing.F) {
	m := v2Manifest(f)
	enc, _ := m.MarshalBinary()
	f.Add(enc)
	mf, _ := NewFixedManifest(Tree{Files: []File{{Path: "d/f", Size: 3000}}, Symlinks: []Symlink{{"d/l", "f"}}, Dirs: []string{"d/e"}}, MinBlockSize, make([][HashSize]byte, 3))
	enc, _ = mf.MarshalBinary()
	f.Add(enc)
	mz, _ := NewContentManifest(Tree{Files: []File{{Path: "z", Size: 0}}}, DefaultChunking, nil, nil)
	enc, _ = mz.MarshalBinary()
	f.Add(enc)
	f.Add([]byte{0x99, 0x02, 0xa6, 'b', 'l', 'a', 'k', 'e', '3', 0x94, 0xae})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b, 1<<20)
		if err != nil {
			return
		}
		checkDecoded(t, m, b)
	})
}
