package chunker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker/internal/cut"
)

// smallChunking keeps the tests' inputs small: blocks of 1 to 16 KiB.
var smallChunking = Chunking{Min: 1 << 10, Normal: 4 << 10, Max: 16 << 10}

// chunkBytes chunks data as one file with c and returns its manifest.
func chunkBytes(t testing.TB, name string, data []byte, c Chunking) *Manifest {
	t.Helper()
	m, err := ChunkReader(context.Background(), name, 0o644, bytes.NewReader(data), 0, WithChunking(c))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// blockSet returns the hashes of m's blocks.
func blockSet(m *Manifest) map[[HashSize]byte]bool {
	s := make(map[[HashSize]byte]bool, m.BlockCount())
	for i := range m.BlockCount() {
		s[m.BlockHash(i)] = true
	}
	return s
}

// checkCDC checks m's blocks against the stream data: lengths within c, spans
// contiguous and inside one file, hashes right, FileBlocks consistent.
func checkCDC(t *testing.T, m *Manifest, data []byte, c Chunking) {
	t.Helper()
	if !m.ContentDefined() || m.Chunking() != c || m.Version() != Version2 || m.BlockSize() != c.Max {
		t.Fatalf("ContentDefined %v Chunking %v Version %d BlockSize %d", m.ContentDefined(), m.Chunking(), m.Version(), m.BlockSize())
	}
	var off int64
	maxLen := 0
	for i := range m.BlockCount() {
		o, n := m.BlockSpan(i)
		if o != off || n != m.BlockLen(i) || n < 1 || n > c.Max {
			t.Fatalf("block %d: span %d+%d at %d", i, o, n, off)
		}
		if m.BlockHash(i) != HashBlock(data[o:o+int64(n)]) {
			t.Fatalf("block %d: wrong hash", i)
		}
		segs := 0
		m.segments(i, func(segment) error { segs++; return nil })
		if segs != 1 {
			t.Fatalf("block %d lies in %d files", i, segs)
		}
		off += int64(n)
		maxLen = max(maxLen, n)
	}
	if off != m.TotalSize() || int64(len(data)) != off || m.MaxBlockLen() != maxLen {
		t.Fatalf("blocks cover %d bytes of %d, max %d vs %d", off, len(data), maxLen, m.MaxBlockLen())
	}
	next := 0
	for k, f := range m.files {
		first, end := m.FileBlocks(k)
		if f.Size == 0 {
			if first != end {
				t.Fatalf("empty file %s has blocks [%d, %d)", f.Path, first, end)
			}
			continue
		}
		if first != next || end <= first {
			t.Fatalf("file %s: blocks [%d, %d), want from %d", f.Path, first, end, next)
		}
		for i := first; i < end; i++ {
			if n := m.BlockLen(i); i < end-1 && n < c.Min {
				t.Fatalf("file %s: block %d of %d bytes is not its last but under Min", f.Path, i, n)
			}
		}
		if o, n := m.BlockSpan(end - 1); o+int64(n) != m.starts[k]+f.Size {
			t.Fatalf("file %s: its last block does not end at its end", f.Path)
		}
		next = end
	}
	enc, _ := m.MarshalBinary()
	got, err := DecodeManifest(enc, 0)
	if err != nil || got.ID() != m.ID() || got.Chunking() != c {
		t.Fatalf("round trip: %v", err)
	}
}

func TestChunkContentDefined(t *testing.T) {
	c := smallChunking
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte{7}},
		{"under min", randBytes(1, c.Min-1)},
		{"min", randBytes(2, c.Min)},
		{"normal", randBytes(3, c.Normal)},
		{"random", randBytes(4, 300<<10)},
		{"zeros", make([]byte, 5*c.Max+17)}, // no cut in the content: Max-long blocks
		{"text", bytes.Repeat([]byte("the same line again and again\n"), 9000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := chunkBytes(t, "f.bin", tc.data, c)
			checkCDC(t, m, tc.data, c)
			if len(tc.data) == 0 && m.BlockCount() != 0 {
				t.Fatalf("an empty file has %d blocks", m.BlockCount())
			}
			// ChunkPath of the same bytes gives the same manifest.
			p := filepath.Join(t.TempDir(), "f.bin")
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			m2, err := ChunkPath(context.Background(), p, 0, WithChunking(c))
			if err != nil || m2.ID() != m.ID() {
				t.Fatalf("ChunkPath: %v, same id %v", err, err == nil && m2.ID() == m.ID())
			}
		})
	}
}

// TestChunkContentDefaults checks the default chunking on a few MiB: block
// lengths within its bounds, an average under 256 KiB, and one worker or
// several give the same manifest.
func TestChunkContentDefaults(t *testing.T) {
	data := randBytes(11, 6<<20)
	var ids []ID
	for _, w := range []int{1, 3} {
		m, err := ChunkReader(context.Background(), "f", 0o644, bytes.NewReader(data), 0, WithContentDefined(), WithWorkers(w))
		if err != nil {
			t.Fatal(err)
		}
		checkCDC(t, m, data, DefaultChunking)
		if m.AvgBlockLen() > 256<<10 || m.AvgBlockLen() < DefaultChunking.Min {
			t.Fatalf("average block %d bytes", m.AvgBlockLen())
		}
		ids = append(ids, m.ID())
	}
	if ids[0] != ids[1] {
		t.Fatal("the worker count changed the manifest")
	}
}

// TestChunkContentGolden pins the boundaries of CDCAlgorithm (the default
// rule of the first content-defined manifests) and of CDCAlgorithmNC0 (the
// default since): a change that moved them would change every manifest's id
// and must fail here.
func TestChunkContentGolden(t *testing.T) {
	data := randBytes(12, 3<<20)
	var lens []int
	for _, g := range []struct {
		c    Chunking
		want string
	}{
		{Chunking{Min: 96 << 10, Normal: 128 << 10, Max: 1 << 20}, "[150801 154032 143167 147133 125634 156106 173817 152374 145381 148830 131536 138196 150322 167816 192354 130868 148245 136208 210689 167728 74491]"},
		{DefaultChunking, "[75621 189400 101277 81702 87102 71506 132249 138016 67620 221533 112633 69786 148830 166548 84080 169426 167816 296809 76802 68986 83675 68122 70253 153717 117438 124781]"},
	} {
		m := chunkBytes(t, "golden.bin", data, g.c)
		lens = lens[:0]
		for i := range m.BlockCount() {
			lens = append(lens, m.BlockLen(i))
		}
		if got := fmt.Sprint(lens); got != g.want {
			t.Fatalf("%s: block lengths\n%s\nwant\n%s", g.c, got, g.want)
		}
	}
	m2 := chunkBytes(t, "golden.bin", data[:200<<10], smallChunking)
	lens = lens[:0]
	for i := range m2.BlockCount() {
		lens = append(lens, m2.BlockLen(i))
	}
	const want2 = "[4169 4696 4714 4125 4592 5582 4370 4308 8216 6086 5020 4670 5031 6480 1322 2240 1930 5865 3348 6324 4812 5726 4747 4060 3602 5790 4972 4802 4141 4386 4883 4432 1360 6286 4554 4325 6656 4314 4485 4168 4513 2181 4266 2151 2664 3436]"
	if got := fmt.Sprint(lens); got != want2 {
		t.Fatalf("small chunking: block lengths\n%s\nwant\n%s", got, want2)
	}
}

// newBlocks counts the blocks of m that old does not have.
func newBlocks(old, m *Manifest) int {
	have := blockSet(old)
	n := 0
	for i := range m.BlockCount() {
		if !have[m.BlockHash(i)] {
			n++
		}
	}
	return n
}

// TestCDCEditLocality is the point of content-defined blocks: an edit in the
// middle of a file changes only the blocks around it.
func TestCDCEditLocality(t *testing.T) {
	size := 32 << 20
	if testing.Short() {
		size = 8 << 20
	}
	base := randBytes(21, size)
	old := chunkBytes(t, "f", base, DefaultChunking)
	r := rand.New(rand.NewPCG(5, 6))
	patch := randBytes(22, 64<<10)
	for trial := range 6 {
		pos := size/4 + r.IntN(size/2)
		for _, edit := range []struct {
			name string
			data []byte
			max  int
		}{
			{"insert 1 KiB", slices.Concat(base[:pos], patch[:1<<10], base[pos:]), 2},
			{"delete 1 KiB", slices.Concat(base[:pos], base[pos+1<<10:]), 2},
			{"overwrite 1 KiB", slices.Concat(base[:pos], patch[:1<<10], base[pos+1<<10:]), 2},
			{"overwrite 1 MiB", slices.Concat(base[:pos], randBytes(uint64(trial), 1<<20), base[pos+1<<20:]), 1<<20/DefaultChunking.Min + 3},
			{"append 64 KiB", slices.Concat(base, patch), 2},
			{"truncate 1 KiB", base[:size-1<<10], 1},
		} {
			m := chunkBytes(t, "f", edit.data, DefaultChunking)
			if n := newBlocks(old, m); n > edit.max {
				t.Errorf("trial %d, %s at %d: %d new blocks of %d, want at most %d", trial, edit.name, pos, n, m.BlockCount(), edit.max)
			}
		}
	}
	// Appending changes only the tail: every block but the old last is kept.
	m := chunkBytes(t, "f", slices.Concat(base, patch), DefaultChunking)
	for i := range old.BlockCount() - 1 {
		if m.BlockHash(i) != old.BlockHash(i) {
			t.Fatalf("appending changed block %d of %d", i, old.BlockCount())
		}
	}
}

// TestCDCSameBytesAnywhere checks that a file gives the same blocks whatever
// its folder, its name and the files around it (blocks never span files).
func TestCDCSameBytesAnywhere(t *testing.T) {
	dir := t.TempDir()
	doc := randBytes(31, 200<<10)
	v1 := writeTree(t, dir, "v1", map[string][]byte{"a.bin": randBytes(32, 50<<10), "doc.pdf": doc, "z": randBytes(33, 7)})
	v2 := writeTree(t, dir, "v2", map[string][]byte{"moved/renamed.pdf": doc, "0first": randBytes(34, 12345)})
	var sets []map[[HashSize]byte]bool
	for _, p := range []string{v1, v2} {
		m, err := ChunkPath(context.Background(), p, 0, WithChunking(smallChunking))
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, blockSet(m))
	}
	alone := chunkBytes(t, "x", doc, smallChunking)
	for i := range alone.BlockCount() {
		if h := alone.BlockHash(i); !sets[0][h] || !sets[1][h] {
			t.Fatalf("block %d of the file alone is not in both trees", i)
		}
	}
}

func TestChunkOptionsBad(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		bs   int
		opts []ChunkOption
	}{
		{"block size with chunking", MinBlockSize, []ChunkOption{WithContentDefined()}},
		{"zero chunking", 0, []ChunkOption{WithChunking(Chunking{})}},
		{"normal not a power of two", 0, []ChunkOption{WithChunking(Chunking{Min: 1 << 10, Normal: 3 << 10, Max: 16 << 10})}},
		{"min over normal", 0, []ChunkOption{WithChunking(Chunking{Min: 8 << 10, Normal: 4 << 10, Max: 16 << 10})}},
		{"min too small", 0, []ChunkOption{WithChunking(Chunking{Min: 64, Normal: 4 << 10, Max: 16 << 10})}},
		{"max too large", 0, []ChunkOption{WithChunking(Chunking{Min: 1 << 10, Normal: 4 << 10, Max: MaxBlockSize + 1})}},
	} {
		_, err := ChunkReader(ctx, "f", 0o644, bytes.NewReader(nil), tc.bs, tc.opts...)
		if !errors.Is(err, ErrBadBlockSize) {
			t.Errorf("%s: err = %v, want ErrBadBlockSize", tc.name, err)
		}
	}
}

// TestManifestV1Golden checks that a manifest written by the first release
// still decodes, to the same id, and that fixed-size chunking still writes it.
func TestManifestV1Golden(t *testing.T) {
	enc, err := os.ReadFile(filepath.Join("testdata", "manifest-v1.bin"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "e7314610f5572611243c485e32422c68f376c9668d23eb3d915fb05adbb56d5f"
	m, err := DecodeManifest(enc, 0)
	if err != nil || m.ID().String() != id || m.Version() != Version || m.ContentDefined() {
		t.Fatalf("decode: %v, id %v", err, m)
	}
	m2, _ := testManifest(t, MinBlockSize, 3000, 0, 10)
	if m2.ID().String() != id {
		t.Fatalf("NewManifest writes id %s, the first release wrote %s", m2.ID(), id)
	}
	// A tree with a link and an empty folder, fixed-size blocks: the first
	// release's id (links and empty folders left out).
	root := writeTree(t, t.TempDir(), "photos", map[string][]byte{"a/x": randBytes(7, 5000), "b": randBytes(8, 10)})
	os.Symlink("b", filepath.Join(root, "link"))
	os.MkdirAll(filepath.Join(root, "empty"), 0o755)
	m3, err := ChunkPath(context.Background(), root, MinBlockSize)
	if err != nil || m3.ID().String() != "4814aeffb6160d256e608af73d7c20f6e179fe4113e0bdc6676e07d9bfd3f942" {
		t.Fatalf("fixed-size tree: %v, id %s", err, m3.ID())
	}
}

// BenchmarkChunkCDC measures content-defined chunking (WithContentDefined:
// cuts found on the reading goroutine, blocks hashed on the workers) against
// fixed-size blocks of DefaultBlockSize over the same 64 MiB in memory, one
// after the other in every iteration so that the machine's load hits both
// alike. ratio = content-defined time / fixed-size time (the goal: at most
// 1.2); the MB/s figures are of each alone.
func BenchmarkChunkCDC(b *testing.B) {
	const size = 64 << 20
	data := randBytes(1, size)
	ctx := context.Background()
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			var fixedNs, cdcNs int64
			var m *Manifest
			b.SetBytes(2 * size)
			for b.Loop() {
				t0 := nanotime()
				if _, _, err := cut.Stream(ctx, bytes.NewReader(data), DefaultBlockSize, w, size, nil); err != nil {
					b.Fatal(err)
				}
				t1 := nanotime()
				var err error
				if m, err = ChunkReader(ctx, "f", 0o644, bytes.NewReader(data), 0, WithContentDefined(), WithWorkers(w)); err != nil {
					b.Fatal(err)
				}
				cdcNs += nanotime() - t1
				fixedNs += t1 - t0
			}
			reportCDC(b, size, fixedNs, cdcNs, m)
		})
	}
}

// BenchmarkChunkPathCDC is BenchmarkChunkCDC through ChunkPath, over a 64 MiB
// file in the page cache (open, read, pipeline, manifest).
func BenchmarkChunkPathCDC(b *testing.B) {
	const size = 64 << 20
	p := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(p, randBytes(2, size), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var fixedNs, cdcNs int64
	var m *Manifest
	b.SetBytes(2 * size)
	for b.Loop() {
		t0 := nanotime()
		if _, err := ChunkPath(ctx, p, 0); err != nil {
			b.Fatal(err)
		}
		t1 := nanotime()
		var err error
		if m, err = ChunkPath(ctx, p, 0, WithContentDefined()); err != nil {
			b.Fatal(err)
		}
		cdcNs += nanotime() - t1
		fixedNs += t1 - t0
	}
	reportCDC(b, size, fixedNs, cdcNs, m)
}

func reportCDC(b *testing.B, size int, fixedNs, cdcNs int64, m *Manifest) {
	b.ReportMetric(float64(cdcNs)/float64(fixedNs), "ratio")
	b.ReportMetric(float64(size)*float64(b.N)/float64(fixedNs)*1e3, "fixedMB/s")
	b.ReportMetric(float64(size)*float64(b.N)/float64(cdcNs)*1e3, "cdcMB/s")
	b.ReportMetric(float64(m.AvgBlockLen())/1024, "avgKiB")
}
