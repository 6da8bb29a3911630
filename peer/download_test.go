package peer

import (
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// TestFrameBufsAllocs checks that a block's frame buffer, once the pools are
// warm, is taken and given back without an allocation, and that a buffer
// too small for a frame is not pooled.
func TestFrameBufsAllocs(t *testing.T) {
	bs := chunker.DefaultBlockSize
	m, err := chunker.NewManifest([]chunker.File{{Path: "f", Size: int64(4 * bs), Mode: 0o644}}, bs, make([][chunker.HashSize]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	f := &fetch{t: blockTarget{c: &content{man: m}}}
	b := f.getBuf()
	if len(b) != 0 || cap(b) < bs+1+binaryMaxVarint {
		t.Fatalf("getBuf: len %d cap %d, want 0 and at least a frame", len(b), cap(b))
	}
	f.putBuf(b[:100])
	if a := testing.AllocsPerRun(100, func() { f.putBuf(f.getBuf()) }); a != 0 {
		t.Errorf("getBuf and putBuf: %v allocations, want 0", a)
	}
	f.putBuf(make([]byte, 10))
	for range 4 {
		if b := f.getBuf(); cap(b) < bs {
			t.Fatalf("getBuf gave a buffer of %d bytes, want at least %d", cap(b), bs)
		}
	}
}

// BenchmarkFrameBufs measures taking and returning one frame buffer, as the
// fetch does for every block received.
func BenchmarkFrameBufs(b *testing.B) {
	bs := chunker.DefaultBlockSize
	m, err := chunker.NewManifest([]chunker.File{{Path: "f", Size: int64(4 * bs), Mode: 0o644}}, bs, make([][chunker.HashSize]byte, 4))
	if err != nil {
		b.Fatal(err)
	}
	f := &fetch{t: blockTarget{c: &content{man: m}}}
	b.ReportAllocs()
	for b.Loop() {
		f.putBuf(f.getBuf())
	}
}
