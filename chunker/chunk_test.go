package chunker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"lukechampine.com/blake3"

	"github.com/reconcile-p2p/reconcile/chunker/internal/cut"
)

// writeTree writes files (manifest path without the root name -> bytes) under
// dir/name and returns dir/name.
func writeTree(t testing.TB, dir, name string, files map[string][]byte) string {
	t.Helper()
	root := filepath.Join(dir, name)
	for p, b := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// expectHashes hashes data block by block, the plain way.
func expectHashes(data []byte, bs int) [][HashSize]byte {
	var h [][HashSize]byte
	for off := 0; off < len(data); off += bs {
		h = append(h, blake3.Sum256(data[off:min(off+bs, len(data))]))
	}
	return h
}

func TestChunkPathFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		size int
		bs   int
	}{
		{"empty", 0, MinBlockSize},
		{"small", 10, MinBlockSize},
		{"exact", 8 * MinBlockSize, MinBlockSize},
		{"ragged", 8*MinBlockSize + 1, MinBlockSize},
		{"default", 3*DefaultBlockSize - 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := randBytes(uint64(tc.size), tc.size)
			p := filepath.Join(dir, tc.name+".bin")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			m, err := ChunkPath(context.Background(), p, tc.bs)
			if err != nil {
				t.Fatal(err)
			}
			bs := tc.bs
			if bs == 0 {
				bs = DefaultBlockSize
			}
			want, err := NewManifest([]File{{Path: tc.name + ".bin", Size: int64(tc.size), Mode: 0o600}}, bs, expectHashes(data, bs))
			if err != nil {
				t.Fatal(err)
			}
			if m.ID() != want.ID() {
				t.Fatalf("manifest %v differs from the expected %v", m.Files(), want.Files())
			}
			// ChunkReader over the same bytes gives the same manifest.
			m2, err := ChunkReader(context.Background(), tc.name+".bin", 0o600, bytes.NewReader(data), tc.bs)
			if err != nil || m2.ID() != m.ID() {
				t.Fatalf("ChunkReader: %v, id %s vs %s", err, m2.ID(), m.ID())
			}
		})
	}
}

func TestChunkPathTree(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"b.txt":        randBytes(1, 1500),
		"a/z.bin":      randBytes(2, 2500),
		"a-c":          randBytes(3, 10),
		"a/empty":      nil,
		"a/deep/x/y":   randBytes(4, 4096),
		"0first":       randBytes(5, 1),
		"unicode-é.md": randBytes(6, 700),
	}
	root := writeTree(t, dir, "photos", files)
	if err := os.Symlink("b.txt", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := ChunkPath(context.Background(), root, MinBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	// Byte-wise path order, the root's name first, symlinks and empty dirs skipped.
	order := []string{"0first", "a-c", "a/deep/x/y", "a/empty", "a/z.bin", "b.txt", "unicode-é.md"}
	var stream []byte
	var want []File
	for _, p := range order {
		stream = append(stream, files[p]...)
		want = append(want, File{Path: "photos/" + p, Size: int64(len(files[p])), Mode: 0o640})
	}
	if fmt.Sprint(m.Files()) != fmt.Sprint(want) {
		t.Fatalf("files\n%v\nwant\n%v", m.Files(), want)
	}
	wm, err := NewManifest(want, MinBlockSize, expectHashes(stream, MinBlockSize))
	if err != nil {
		t.Fatal(err)
	}
	if wm.ID() != m.ID() {
		t.Fatal("tree manifest differs from the expected one")
	}
	// Chunking through a relative path with a trailing slash names the same root.
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	m2, err := ChunkPath(context.Background(), "photos/", MinBlockSize)
	if err != nil || m2.ID() != m.ID() {
		t.Fatalf("relative path: %v", err)
	}
}

func TestChunkPathErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ChunkPath(context.Background(), filepath.Join(dir, "nope"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("x"), 0o644)
	if _, err := ChunkPath(context.Background(), p, 1000); !errors.Is(err, ErrBadBlockSize) {
		t.Errorf("block size 1000: %v", err)
	}
	if _, err := ChunkPath(context.Background(), "/", 0); !errors.Is(err, ErrBadPath) {
		t.Errorf("root: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 64*MinBlockSize), 0o644)
	if _, err := ChunkPath(ctx, big, MinBlockSize); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := ChunkReader(context.Background(), "../x", 0, bytes.NewReader(nil), 0); !errors.Is(err, ErrBadPath) {
		t.Errorf("ChunkReader bad name: %v", err)
	}
	errBoom := errors.New("boom")
	r := io.MultiReader(bytes.NewReader(make([]byte, 5000)), iotestErrReader{errBoom})
	if _, err := ChunkReader(context.Background(), "x", 0, r, MinBlockSize); !errors.Is(err, errBoom) {
		t.Errorf("read error: %v", err)
	}
}

type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }

// BenchmarkChunk measures chunking and hashing an in-memory stream against the hash
// alone over the same bytes, interleaved in the same run so that the load of the
// machine affects both alike; ratio = hash-alone time / chunk time (goal >= 0.8).
// workers=1 is the like-for-like comparison (one hashing goroutine).
func BenchmarkChunk(b *testing.B) {
	const size = 64 << 20
	data := randBytes(1, size)
	bs := DefaultBlockSize
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			var hashNs, chunkNs int64
			b.SetBytes(size)
			for b.Loop() {
				b.StopTimer()
				start := nanotime()
				for off := 0; off < len(data); off += bs {
					HashBlock(data[off:min(off+bs, len(data))])
				}
				mid := nanotime()
				hashNs += mid - start
				b.StartTimer()
				if _, _, err := cut.Stream(context.Background(), bytes.NewReader(data), bs, w, size, nil); err != nil {
					b.Fatal(err)
				}
				chunkNs += nanotime() - mid
			}
			b.ReportMetric(float64(hashNs)/float64(chunkNs), "ratio")
			b.ReportMetric(float64(size)*float64(b.N)/float64(hashNs)*1e3, "hashMB/s")
		})
	}
}

// BenchmarkChunkPath measures ChunkPath on a 64 MiB file in the page cache (open,
// read, pipeline, manifest), interleaved with the hash alone over the same bytes in
// memory; ratio = hash-alone time / ChunkPath time. The hash alone reads the 64 MiB
// from memory, the pipeline hashes blocks just read into a buffer that is still in
// cache, so ratioHot also compares with hashing one cache-hot block over and over.
func BenchmarkChunkPath(b *testing.B) {
	const size = 64 << 20
	data := randBytes(2, size)
	p := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	var hashNs, hotNs, chunkNs int64
	b.SetBytes(size)
	for b.Loop() {
		b.StopTimer()
		start := nanotime()
		for off := 0; off < len(data); off += DefaultBlockSize {
			HashBlock(data[off:min(off+DefaultBlockSize, len(data))])
		}
		hot := nanotime()
		for off := 0; off < len(data); off += DefaultBlockSize {
			HashBlock(data[:DefaultBlockSize])
		}
		mid := nanotime()
		hashNs += hot - start
		hotNs += mid - hot
		b.StartTimer()
		if _, err := ChunkPath(context.Background(), p, 0); err != nil {
			b.Fatal(err)
		}
		chunkNs += nanotime() - mid
	}
	b.ReportMetric(float64(hashNs)/float64(chunkNs), "ratio")
	b.ReportMetric(float64(hotNs)/float64(chunkNs), "ratioHot")
	b.ReportMetric(float64(size)*float64(b.N)/float64(hashNs)*1e3, "hashMB/s")
}

// TestChunkSymlinkRoot checks that a symbolic link given as the path is followed,
// keeps its name, and can be seeded; and that store metadata inside a tree is skipped.
func TestChunkSymlinkRoot(t *testing.T) {
	dir := t.TempDir()
	real := writeTree(t, dir, "real", map[string][]byte{"x": randBytes(1, 3000), "y/z": randBytes(2, 10)})
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "x"), filepath.Join(dir, "filelink")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		files string
	}{
		{filepath.Join(dir, "link"), "[{link/x 3000 416} {link/y/z 10 416}]"},
		{filepath.Join(dir, "filelink"), "[{filelink 3000 416}]"},
	} {
		m, err := ChunkPath(context.Background(), tc.path, MinBlockSize)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(m.Files()); got != tc.files {
			t.Fatalf("%s: files %s, want %s", tc.path, got, tc.files)
		}
		s, err := SeedStore(context.Background(), tc.path, m, WithVerify())
		if err != nil {
			t.Fatalf("seed through %s: %v", tc.path, err)
		}
		s.Close()
	}
	// A store's metadata folder inside the tree is not content.
	if err := os.MkdirAll(filepath.Join(real, MetaDir), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(real, MetaDir, "held"), []byte("changes all the time"), 0o644)
	m, err := ChunkPath(context.Background(), real, MinBlockSize)
	if err != nil || m.FileCount() != 2 {
		t.Fatalf("with a metadata folder: %v, files %v", err, m.Files())
	}
}
