package prealloc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A file is made at its size, then its space is reserved (where Reserve
// cannot, the file stays sparse, without an error).
func ExampleReserve() {
	name := filepath.Join(os.TempDir(), fmt.Sprintf("prealloc-example-%d", os.Getpid()))
	defer os.Remove(name)
	f, err := os.Create(name)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	fmt.Println(f.Truncate(1<<20), Reserve(f, 1<<20))
	info, _ := f.Stat()
	fmt.Println(info.Size())
	// Output:
	// <nil> <nil>
	// 1048576
}

// TestNoSpaceError checks the error's words, with and without the free space.
func TestNoSpaceError(t *testing.T) {
	known := &NoSpaceError{Need: 2 << 20, Free: 4096}
	if got, want := known.Error(), "2097152 bytes needed, 4096 free"; got != want {
		t.Errorf("%+v: %q, want %q", known, got, want)
	}
	unknown := &NoSpaceError{Need: 10, Free: -1}
	if got, want := unknown.Error(), "10 bytes needed"; got != want {
		t.Errorf("%+v: %q, want %q", unknown, got, want)
	}
}
