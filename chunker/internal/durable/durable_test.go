package durable

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestWriteFile checks that WriteFile creates and replaces a file, in a
// subfolder too, and leaves no temporary file behind.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"state", "sub/state"} {
		for _, data := range []string{"first", "second, longer", ""} {
			if err := WriteFile(root, name, []byte(data)); err != nil {
				t.Fatalf("WriteFile %s: %v", name, err)
			}
			if b, err := root.ReadFile(name); err != nil || string(b) != data {
				t.Fatalf("%s holds %q, %v; want %q", name, b, err, data)
			}
			if _, err := root.Stat(name + ".tmp"); !os.IsNotExist(err) {
				t.Fatalf("%s.tmp left behind: %v", name, err)
			}
		}
	}
	if err := WriteFile(root, "missing/state", nil); err == nil {
		t.Fatal("WriteFile into a missing folder: no error")
	}
	if err := SyncDir(root, "missing"); err == nil && runtime.GOOS != "windows" {
		t.Fatal("SyncDir of a missing folder: no error")
	}
}

func ExampleWriteFile() {
	dir, _ := os.MkdirTemp("", "durable")
	defer os.RemoveAll(dir)
	root, _ := os.OpenRoot(dir)
	defer root.Close()
	if err := WriteFile(root, "manifest", []byte("v1")); err != nil {
		fmt.Println(err)
	}
	if err := WriteFile(root, "manifest", []byte("v2")); err != nil {
		fmt.Println(err)
	}
	b, _ := root.ReadFile("manifest")
	fmt.Println(string(b))
	// Output: v2
}
