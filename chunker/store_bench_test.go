package chunker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// zeroManifest is the manifest of one file of n zero blocks: a freshly created
// store's sparse file already holds the right bytes.
func zeroManifest(t testing.TB, n, bs int) *Manifest {
	return repeatManifest(t, "zeros.bin", make([]byte, bs), n)
}

// repeatManifest is the manifest of one file, path, of n blocks that are all
// block.
func repeatManifest(t testing.TB, path string, block []byte, n int) *Manifest {
	h := HashBlock(block)
	hashes := make([][HashSize]byte, n)
	for i := range hashes {
		hashes[i] = h
	}
	m, err := NewManifest([]File{{Path: path, Size: int64(n) * int64(len(block)), Mode: 0o644}}, len(block), hashes)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// BenchmarkOpenStore measures reopening a store of 100,000 blocks, all held: reading
// and checking the manifest (3.2 MB) and replaying the held log.
func BenchmarkOpenStore(b *testing.B) {
	const n = 100_000
	m := zeroManifest(b, n, MinBlockSize)
	dir := b.TempDir()
	s, err := CreateStore(context.Background(), dir, m)
	if err != nil {
		b.Fatal(err)
	}
	s.held.SetAll(n)
	if err := s.log.Rewrite(s.held, n); err != nil {
		b.Fatal(err)
	}
	s.Close()
	for b.Loop() {
		s, err := OpenStore(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		if s.HeldCount() != n {
			b.Fatalf("held %d", s.HeldCount())
		}
		s.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/open")
}

// BenchmarkPutBlock measures PutBlock of 256 KiB blocks (hash check, write, fsync,
// record) with a record fsync per block and grouped per 64 blocks.
func BenchmarkPutBlock(b *testing.B) {
	bs := DefaultBlockSize
	data := randBytes(5, bs)
	const n = 64
	m := repeatManifest(b, "f", data, n)
	for _, every := range []int{1, 64} {
		b.Run(fmt.Sprintf("syncEvery=%d", every), func(b *testing.B) {
			b.SetBytes(int64(bs))
			i := n
			var s *Store
			for b.Loop() {
				if i == n {
					b.StopTimer()
					if s != nil {
						s.Close()
					}
					var err error
					if s, err = CreateStore(context.Background(), b.TempDir(), m, WithSyncEvery(every)); err != nil {
						b.Fatal(err)
					}
					i = 0
					b.StartTimer()
				}
				if err := s.PutBlock(i, data); err != nil {
					b.Fatal(err)
				}
				i++
			}
			s.Close()
		})
	}
}

// BenchmarkPutBlockConcurrent measures 8 goroutines putting the 1024
// blocks of 256 KiB of a fresh store (a fetch's writers: hash checks in
// parallel, writes to one file, fsyncs grouped per 64 blocks); one op is
// the whole store (256 MiB).
func BenchmarkPutBlockConcurrent(b *testing.B) {
	const n, writers = 1024, 8
	bs := DefaultBlockSize
	data := randBytes(6, bs)
	m := repeatManifest(b, "f", data, n)
	b.SetBytes(int64(n * bs))
	root := b.TempDir()
	for k := 0; b.Loop(); k++ {
		b.StopTimer()
		dir := filepath.Join(root, strconv.Itoa(k))
		s, err := CreateStore(context.Background(), dir, m, WithSyncEvery(64))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for range writers {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
					if err := s.PutBlock(i, data); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		if !s.Complete() {
			b.Fatalf("held %d of %d", s.HeldCount(), n)
		}
		s.Close()
		os.RemoveAll(dir)
		b.StartTimer()
	}
}

// BenchmarkReadBlock measures serving a held 256 KiB block (no re-hash).
func BenchmarkReadBlock(b *testing.B) {
	s := heldStore(b, 16, DefaultBlockSize)
	buf := make([]byte, DefaultBlockSize)
	var err error
	b.SetBytes(DefaultBlockSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if buf, err = s.ReadBlock(i%16, buf); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkReadPiece measures reading a held 256 KiB block a 16 KiB piece
// at a time (ReadPiece, as a push writer sends it), against
// BenchmarkReadBlock's whole reads.
func BenchmarkReadPiece(b *testing.B) {
	const piece = 16 << 10
	s := heldStore(b, 16, DefaultBlockSize)
	buf := make([]byte, piece)
	b.SetBytes(DefaultBlockSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for off := 0; off < DefaultBlockSize; off += piece {
			if err := s.ReadPiece(i%16, off, buf); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
}

// heldStore returns a store, closed when b ends, of n zero blocks of bs
// bytes, every one marked held.
func heldStore(b *testing.B, n, bs int) *Store {
	b.Helper()
	s, err := CreateStore(context.Background(), b.TempDir(), zeroManifest(b, n, bs))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	s.held.SetAll(n)
	return s
}

func TestReadBlockAllocs(t *testing.T) {
	m := zeroManifest(t, 4, MinBlockSize)
	s, err := CreateStore(context.Background(), t.TempDir(), m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.held.SetAll(4)
	s.nheld = 4
	buf := make([]byte, MinBlockSize)
	if _, err := s.ReadBlock(0, buf); err != nil { // opens the file
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(100, func() { buf, _ = s.ReadBlock(1, buf) }); a != 0 {
		t.Errorf("ReadBlock allocates %.0f times per call", a)
	}
}

// BenchmarkReadBlockParallel measures serving held 16 KiB blocks from several
// goroutines at once: a cache hit of the output-file cache takes the store's lock
// for reading only.
func BenchmarkReadBlockParallel(b *testing.B) {
	const n, bs = 64, 16 << 10
	s := heldStore(b, n, bs)
	s.nheld = n
	b.SetBytes(bs)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, bs)
		var err error
		i := 0
		for pb.Next() {
			if buf, err = s.ReadBlock(i%n, buf); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkOpenStoreShared measures reopening one of 8 stores of 10,000 blocks
// sharing a folder, chosen WithID (listing the folder's stores included).
func BenchmarkOpenStoreShared(b *testing.B) {
	const n, stores = 10_000, 8
	dir := b.TempDir()
	var id ID
	for k := range stores {
		h := HashBlock(make([]byte, MinBlockSize))
		hashes := make([][HashSize]byte, n)
		for i := range hashes {
			hashes[i] = h
		}
		m, err := NewManifest([]File{{Path: fmt.Sprintf("z%d.bin", k), Size: n * MinBlockSize, Mode: 0o644}}, MinBlockSize, hashes)
		if err != nil {
			b.Fatal(err)
		}
		s, err := CreateStore(context.Background(), dir, m)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		id = m.ID()
	}
	for b.Loop() {
		s, err := OpenStore(context.Background(), dir, WithID(id))
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/open")
}

// BenchmarkReadBlockSeed measures serving 256 KiB blocks from a seed store,
// which stats the block's source file after each read to notice a change
// (a few small allocations per block, no measurable cost beside the read).
func BenchmarkReadBlockSeed(b *testing.B) {
	dir := b.TempDir()
	root := writeTree(b, dir, "seed", map[string][]byte{"a": make([]byte, 16*DefaultBlockSize)})
	m, err := ChunkPath(context.Background(), root, DefaultBlockSize)
	if err != nil {
		b.Fatal(err)
	}
	s, err := SeedStore(context.Background(), root, m)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	buf := make([]byte, DefaultBlockSize)
	b.SetBytes(DefaultBlockSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if buf, err = s.ReadBlock(i%16, buf); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
