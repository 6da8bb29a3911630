package chunker

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReuseBases: after one edit of a file, Reuse gives the run of blocks
// around the edit a basis, and the basis is exactly the older version's
// bytes that stood where the run stands, for every kind of edit and both
// kinds of blocks, but a prepend to fixed-size blocks (which shifts every
// block: nothing is reused, so no run has a neighbour to place it).
func TestReuseBases(t *testing.T) {
	const size = 1<<20 + 5<<10
	v1 := randBytes(30, size)
	for _, rule := range []struct {
		name string
		size int
		opts []ChunkOption
	}{{"content-defined", 0, []ChunkOption{WithChunking(smallCDC)}}, {"fixed", 16 << 10, nil}} {
		for _, e := range []struct {
			name     string
			at, del  int
			newBytes []byte
		}{
			{"insert 1 KiB", size / 2, 0, randBytes(31, 1<<10)},
			{"overwrite 20 KiB", size / 3, 20 << 10, randBytes(32, 20<<10)},
			{"delete 1 KiB", size / 2, 1 << 10, nil},
			{"append 9 KiB", size, 0, randBytes(33, 9<<10)},
			{"prepend 3 KiB", 0, 0, randBytes(34, 3<<10)},
		} {
			t.Run(rule.name+"/"+e.name, func(t *testing.T) {
				v2 := slices.Concat(v1[:e.at], e.newBytes, v1[e.at+e.del:])
				dir := t.TempDir()
				old, src := filepath.Join(dir, "v1.bin"), filepath.Join(dir, "v2.bin")
				if err := os.WriteFile(old, v1, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(src, v2, 0o644); err != nil {
					t.Fatal(err)
				}
				m, err := ChunkPath(ctxb(), src, rule.size, rule.opts...)
				if err != nil {
					t.Fatal(err)
				}
				s, err := CreateFileStore(ctxb(), filepath.Join(dir, "out.bin"), m, WithStaging())
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				st, err := s.Reuse(ctxb(), []string{old}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if rule.size > 0 && e.at == 0 {
					if len(st.Bases) != 0 || st.Blocks != 0 {
						t.Fatalf("%d blocks reused, bases %+v, want none", st.Blocks, st.Bases)
					}
					return
				}
				if len(st.Bases) != 1 {
					t.Fatalf("%d bases, want 1: %+v (missing %v)", len(st.Bases), st.Bases, s.Missing())
				}
				b := st.Bases[0]
				if b.Path != old || !slices.Equal(s.Missing(), seq(b.First, b.First+b.Count)) {
					t.Fatalf("basis %+v, missing %v", b, s.Missing())
				}
				rs, _ := m.BlockSpan(b.First)
				lo, ln := m.BlockSpan(b.First + b.Count - 1)
				re := lo + int64(ln)
				if re-rs != b.Bytes || rs > int64(e.at) || re < int64(e.at+len(e.newBytes)) {
					t.Fatalf("run [%d, %d) of %d bytes does not hold the edit at %d", rs, re, b.Bytes, e.at)
				}
				want := v1[rs : re-int64(len(e.newBytes))+int64(e.del)]
				if got := v1[b.Off : b.Off+b.Len]; !bytes.Equal(got, want) {
					t.Fatalf("basis [%d, +%d), want v1[%d, %d)", b.Off, b.Len, rs, re-int64(len(e.newBytes))+int64(e.del))
				}
			})
		}
	}
}

// seq returns the ints [a, b).
func seq(a, b int) []int {
	var out []int
	for i := a; i < b; i++ {
		out = append(out, i)
	}
	return out
}
