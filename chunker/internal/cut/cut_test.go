package cut

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestReaderShrink checks that a file shorter than listed is an error, not a
// silently short stream.
func TestReaderShrink(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, make([]byte, 100), 0o644)
	r := &reader{files: []File{{Path: "f", Size: 200}}, srcs: []string{p}}
	defer r.Close()
	if _, err := io.ReadAll(r); err == nil {
		t.Fatal("a shrunk file read without error")
	}
	r2 := &reader{files: []File{{Path: "f", Size: 50}}, srcs: []string{p}}
	defer r2.Close()
	if _, err := io.ReadAll(r2); err == nil {
		t.Fatal("a grown file read without error")
	}
}
