package update

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// random returns n bytes drawn from seed.
func random(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// runs returns the [start, end) runs of the bytes where a and b differ.
func runs(a, b []byte) [][2]int {
	var out [][2]int
	for i := 0; i < len(a); i++ {
		if a[i] == b[i] {
			continue
		}
		j := i
		for j < len(a) && a[j] != b[j] {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

func TestEdit(t *testing.T) {
	v1 := random(1<<20, 1)
	keep := bytes.Clone(v1)
	for _, tc := range []struct {
		fraction    float64
		places      int
		runs, bytes int
	}{
		{0.01, 10, 10, 10486}, // 1 % of 1 MiB, rounded
		{0.01, 1, 1, 10486},
		{0.001, 3, 3, 1049},
		{0, 10, 0, 0},
		{1, 4, 1, 1 << 20}, // runs that meet make one
		{2e-6, 10, 2, 2},   // 2 bytes: 2 places of a byte each
		{0.5, 0, 1, 1 << 19},
	} {
		v2 := Edit(v1, tc.fraction, tc.places, 7)
		if !bytes.Equal(v1, keep) {
			t.Fatal("Edit modified v1")
		}
		rs := runs(v1, v2)
		n := 0
		for _, r := range rs {
			n += r[1] - r[0]
		}
		if len(rs) != tc.runs || n != tc.bytes || len(v2) != len(v1) {
			t.Errorf("fraction %g, %d places: %d runs of %d bytes in all, want %d of %d", tc.fraction, tc.places, len(rs), n, tc.runs, tc.bytes)
		}
		// Each run is centred in its span of the file.
		if tc.runs == tc.places && tc.places > 1 {
			for k, r := range rs {
				mid := (r[0] + r[1]) / 2
				if want := (2*k + 1) * len(v1) / (2 * tc.places); mid < want-2 || mid > want+2 {
					t.Errorf("fraction %g: run %d centred at %d, want %d", tc.fraction, k, mid, want)
				}
			}
		}
		if !bytes.Equal(v2, Edit(v1, tc.fraction, tc.places, 7)) {
			t.Errorf("fraction %g: not deterministic", tc.fraction)
		}
	}
	if tc := Edit(v1, 0.01, 10, 8); bytes.Equal(tc, Edit(v1, 0.01, 10, 7)) {
		t.Error("seeds 7 and 8 made the same bytes")
	}
	if got := Edit(nil, 0.5, 3, 1); len(got) != 0 {
		t.Errorf("Edit of nothing: %d bytes", len(got))
	}
}

func TestCompare(t *testing.T) {
	ctx := context.Background()
	v1 := random(1<<20, 2)
	v2 := Edit(v1, 0.01, 10, 3)
	// 16 KiB blocks: each run of 1,049 bytes lies in one block or across
	// two; every block it touches is new, and no other.
	m1, err := chunker.ChunkReader(ctx, "f", 0o644, bytes.NewReader(v1), 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := chunker.ChunkReader(ctx, "f", 0o644, bytes.NewReader(v2), 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	touched := map[int]bool{}
	for _, r := range runs(v1, v2) {
		for b := r[0] / (16 << 10); b <= (r[1]-1)/(16<<10); b++ {
			touched[b] = true
		}
	}
	d := Compare(m1, m2)
	if d.NewBlocks != len(touched) || d.SharedBlocks != m2.BlockCount()-len(touched) || d.NewBytes != int64(len(touched))*16<<10 {
		t.Errorf("delta %d new, %d shared, %d bytes; want %d new of %d", d.NewBlocks, d.SharedBlocks, d.NewBytes, len(touched), m2.BlockCount())
	}
	for b := range touched {
		if !d.New[b] {
			t.Errorf("block %d touched, not new", b)
		}
	}
	if d := Compare(m1, m1); d.NewBlocks != 0 || d.NewBytes != 0 || d.SharedBlocks != m1.BlockCount() {
		t.Errorf("a version against itself: %+v", d)
	}
}

// TestOlder: a folder holding version 1 takes every shared block from it,
// and the rest makes version 2, published over version 1's file.
func TestOlder(t *testing.T) {
	ctx := context.Background()
	for _, cdc := range []bool{false, true} {
		v1 := random(2<<20, 4)
		v2 := Edit(v1, 0.01, 4, 5)
		bs, opts := 16<<10, []chunker.ChunkOption(nil)
		if cdc {
			bs, opts = 0, []chunker.ChunkOption{chunker.WithContentDefined()}
		}
		m1, err := chunker.ChunkReader(ctx, "content.bin", 0o644, bytes.NewReader(v1), bs, opts...)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := chunker.ChunkReader(ctx, "content.bin", 0o644, bytes.NewReader(v2), bs, opts...)
		if err != nil {
			t.Fatal(err)
		}
		d := Compare(m1, m2)
		dir := t.TempDir()
		s, st, err := Older(ctx, dir, m1, v1, m2)
		if err != nil {
			t.Fatal(err)
		}
		if st.Blocks != d.SharedBlocks || s.HeldCount() != d.SharedBlocks {
			t.Errorf("cdc %v: reused %d blocks, %d held; %d shared", cdc, st.Blocks, s.HeldCount(), d.SharedBlocks)
		}
		t.Logf("cdc %v: %d blocks, %d new (%d bytes)", cdc, m2.BlockCount(), d.NewBlocks, d.NewBytes)
		if got, err := os.ReadFile(filepath.Join(dir, "content.bin")); err != nil || !bytes.Equal(got, v1) {
			t.Fatalf("cdc %v: version 1's file before the publish: %v", cdc, err)
		}
		for _, i := range s.Missing() {
			if !d.New[i] {
				t.Errorf("cdc %v: block %d missing, not new", cdc, i)
			}
			off, n := m2.BlockSpan(i)
			if err := s.PutBlock(i, v2[off:off+int64(n)]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Publish(chunker.PublishOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, "content.bin")); err != nil || !bytes.Equal(got, v2) {
			t.Errorf("cdc %v: the file after the publish is not version 2: %v", cdc, err)
		}
		if _, _, err := Older(ctx, t.TempDir(), m1, v1[1:], m2); err == nil {
			t.Error("Older took too few bytes of version 1")
		}
	}
}

func TestFigures(t *testing.T) {
	f := NewFigures(0.01, 10, "ab", Delta{SharedBlocks: 90, NewBlocks: 10, NewBytes: 1000})
	for _, n := range []int{90, 88, 90} {
		f.AddReused(n)
	}
	f.SetSeedBytes(1300)
	if f.ReusedMin != 88 || f.ReusedMax != 90 || len(f.Reused) != 3 || f.Copies != 1.3 {
		t.Errorf("figures %+v", f)
	}
}
