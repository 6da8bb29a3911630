//go:build linux

package blake3sum

import (
	"os"
	"syscall"
	"testing"

	"lukechampine.com/blake3"
)

// TestSum256GuardPage hashes inputs that end right before a page that
// may not be read: the SIMD kernels read whole groups of 16 chunks, and
// Sum256 must hand them only groups that lie within the data (a read past
// it would crash the test).
func TestSum256GuardPage(t *testing.T) {
	page := os.Getpagesize()
	size := (maxBlock/page + 1) * page
	mem, err := syscall.Mmap(-1, 0, size+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[size:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	for i := range size {
		mem[i] = byte(i * 13)
	}
	for _, n := range []int{0, 1, 1024, 1025, 8 << 10, 16<<10 - 1, 16 << 10, 16<<10 + 1, 24 << 10, 32 << 10, 33 << 10, defaultBlock - 1, defaultBlock, 1 << 20, maxBlock} {
		// Capacity ends with the data too: lukechampine.com/blake3's Sum256
		// reads up to a whole group into a slice's capacity (the reference
		// below would crash on the guard page otherwise).
		in := mem[size-n : size : size]
		if got, want := Sum256(in), blake3.Sum256(in); got != want {
			t.Fatalf("Sum256 of %d bytes before a guard page = %x, want %x", n, got, want)
		}
	}
}
