package sizepool

import "testing"

// TestGet: a slice has room for its bytes and at most 1/16 more (so what
// is in flight holds little more than its bytes), and a slice given back
// is only ever reused for a Get of its own size class.
func TestGet(t *testing.T) {
	for _, tc := range []struct{ n, cap int }{
		{1, 1}, {MinPooled - 1, MinPooled - 1}, {MinPooled, MinPooled},
		{MinPooled + 1, 17 << 6}, {16 << 10, 16 << 10}, {16<<10 + 7, 17 << 10},
		{256<<10 + 7, 17 << 14}, {3 << 20, 3 << 20}, {3<<20 + 1, 25 << 17},
	} {
		b := Get(tc.n)
		if len(b) != 0 || cap(b) != tc.cap {
			t.Errorf("Get(%d): len %d cap %d, want 0 and %d", tc.n, len(b), cap(b), tc.cap)
		}
		Put(b)
	}
	for range 100 { // a pool may drop what it holds: try until one comes back
		b := append(Get(5000), 0xab)
		Put(b)
		if c := Get(4000); cap(c) != 4096 || c[:1][0] == 0xab {
			t.Fatalf("a 4000-byte Get got a slice of %d bytes, or the 5 KiB one given back", cap(c))
		}
		c := Get(5100)
		if len(c) != 0 || cap(c) != 5120 {
			t.Fatalf("a 5100-byte Get got len %d cap %d", len(c), cap(c))
		}
		if c[:1][0] == 0xab {
			return // the slice given back
		}
	}
	t.Error("a slice given back was never reused")
}

// TestClass: every size from MinPooled to 1 MiB gets the least class that
// holds it, at most 1/16 larger, and each class's size is its own class.
func TestClass(t *testing.T) {
	last, lastSize := -1, 0
	for n := MinPooled; n <= 1<<20; n++ {
		k, size := Class(n)
		if size < n || 16*(size-n) >= size || k < 0 || k < last || k >= len(pools) {
			t.Fatalf("Class(%d) = %d, %d after %d, %d", n, k, size, last, lastSize)
		}
		if k == last && size != lastSize || k != last && size <= lastSize {
			t.Fatalf("Class(%d) = %d, %d after %d, %d", n, k, size, last, lastSize)
		}
		if k2, s2 := Class(size); k2 != k || s2 != size {
			t.Fatalf("Class(%d) = %d, %d; of its size %d: %d, %d", n, k, size, size, k2, s2)
		}
		last, lastSize = k, size
	}
}

// TestPutForeign: slices not of a class's size are dropped, never handed
// out with the wrong room.
func TestPutForeign(t *testing.T) {
	for range 100 {
		Put(make([]byte, 0, 17<<10+1))
		if c := Get(17 << 10); cap(c) != 17<<10 {
			t.Fatalf("Get(17 KiB) got a slice of %d bytes", cap(c))
		}
	}
}

// BenchmarkGetPut measures a Get and Put of a framed 16 KiB block, as each
// write through a testnet link stream pays.
func BenchmarkGetPut(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Put(append(Get(16<<10+7), 1))
	}
}

// TestNoAllocs: once warm, a Get and Put of a pooled size allocate nothing.
func TestNoAllocs(t *testing.T) {
	Put(Get(100 << 10))
	if a := testing.AllocsPerRun(100, func() { Put(Get(100 << 10)) }); a != 0 && !raceEnabled {
		t.Errorf("Get and Put: %v allocations, want 0", a)
	}
}
