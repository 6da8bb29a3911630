package labbench

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// readAll reads a file the test needs, or fails.
func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// modTime returns a file's modification time, or fails.
func modTime(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// TestFileEdits: each file case changes exactly what it says, in the
// middle (at the end for append), with new bytes, the same for the same
// seed; v1 and v2 carry the times that make rsync compare them.
func TestFileEdits(t *testing.T) {
	const size = 4 << 20
	const mid = size / 2
	dir := t.TempDir()
	for _, c := range updateCases[:4] {
		t.Run(c.name, func(t *testing.T) {
			v1p, v2p := filepath.Join(dir, c.name, "v1"), filepath.Join(dir, c.name, "v2")
			if err := writeUpdateCase(c, v1p, v2p, size, 0, 0, 7); err != nil {
				t.Fatal(err)
			}
			v1, v2 := readAll(t, v1p), readAll(t, v2p)
			// The part of v1 v2 keeps before the change, the change, and
			// the part it keeps after it.
			var pre, cut, ins int
			switch c.name {
			case "overwrite":
				pre, cut, ins = mid-512<<10, 1<<20, 1<<20
			case "insert":
				pre, ins = mid, 1<<10
			case "delete":
				pre, cut = mid, 1<<10
			case "append":
				pre, ins = size, 64<<10
			}
			if len(v1) != size || len(v2) != size-cut+ins {
				t.Fatalf("v1 %d bytes, v2 %d; want %d and %d", len(v1), len(v2), size, size-cut+ins)
			}
			if !bytes.Equal(v2[:pre], v1[:pre]) {
				t.Error("v2 changed v1 before the edit")
			}
			if !bytes.Equal(v2[pre+ins:], v1[pre+cut:]) {
				t.Error("v2 changed v1 after the edit")
			}
			if ins > 0 && pre+ins <= size && bytes.Equal(v2[pre:pre+ins], v1[pre:pre+ins]) {
				t.Error("the new bytes are v1's")
			}
			if ins > 0 && bytes.Count(v2[pre:pre+ins], []byte{0}) > ins/64 {
				t.Error("the new bytes are not random")
			}
			if !modTime(t, v1p).Equal(updateTimeV1) || !modTime(t, v2p).Equal(updateTimeV2) {
				t.Errorf("times %v and %v, want %v and %v", modTime(t, v1p), modTime(t, v2p), updateTimeV1, updateTimeV2)
			}
			// The same seed, the same v2; another seed, another v1.
			again := filepath.Join(dir, c.name, "again")
			if err := writeUpdateCase(c, again+"1", again+"2", size, 0, 0, 7); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(readAll(t, again+"2"), v2) {
				t.Error("v2 is not the same for the same seed")
			}
			if err := writeUpdateCase(c, again+"1", again+"2", size, 0, 0, 8); err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(readAll(t, again+"1"), v1) {
				t.Error("v1 is the same for another seed")
			}
		})
	}
}

// TestPlanFolder: a tenth renamed, a twentieth each rewritten, deleted and
// added (the 10, 5, 5 and 5 of 100), at least one each, no file
// picked twice.
func TestPlanFolder(t *testing.T) {
	for _, tc := range []struct{ files, ren, other int }{{100, 10, 5}, {20, 2, 1}, {10, 1, 1}, {1000, 100, 50}} {
		p := planFolder(tc.files, 3)
		if len(p.renamed) != tc.ren || len(p.changed) != tc.other || len(p.deleted) != tc.other || p.added != tc.other {
			t.Errorf("%d files: %d renamed, %d changed, %d deleted, %d added; want %d, %d, %d, %d", tc.files,
				len(p.renamed), len(p.changed), len(p.deleted), p.added, tc.ren, tc.other, tc.other, tc.other)
		}
		all := slices.Concat(p.renamed, p.changed, p.deleted)
		slices.Sort(all)
		if len(slices.Compact(all)) != len(p.renamed)+len(p.changed)+len(p.deleted) || all[0] < 0 || all[len(all)-1] >= tc.files {
			t.Errorf("%d files: picks overlap or out of range: %v", tc.files, all)
		}
	}
}

// TestFolderCase: v2 of the folder is v1 with the planned files renamed
// (same bytes and time), rewritten (new bytes of the same size, a new
// time), deleted and added, and every other file as it was.
func TestFolderCase(t *testing.T) {
	const files, fileSize = 20, 4 << 10
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1", "data"), filepath.Join(dir, "v2", "data")
	if err := writeUpdateCase(updateCases[4], v1, v2, 0, files, fileSize, 9); err != nil {
		t.Fatal(err)
	}
	p := planFolder(files, 9)
	var want []string
	for i := range files {
		old := readAll(t, filepath.Join(v1, folderName(i)))
		if len(old) != fileSize || !modTime(t, filepath.Join(v1, folderName(i))).Equal(updateTimeV1) {
			t.Fatalf("v1's %s: %d bytes, time %v", folderName(i), len(old), modTime(t, filepath.Join(v1, folderName(i))))
		}
		name, time := folderName(i), updateTimeV1
		switch {
		case slices.Contains(p.deleted, i):
			continue
		case slices.Contains(p.renamed, i):
			name = renamedName(i)
		case slices.Contains(p.changed, i):
			time = updateTimeV2
		}
		want = append(want, name)
		got := readAll(t, filepath.Join(v2, name))
		if same := bytes.Equal(got, old); same == slices.Contains(p.changed, i) || len(got) != fileSize {
			t.Errorf("v2's %s (v1's %s): %d bytes, the same as v1's: %v", name, folderName(i), len(got), same)
		}
		if !modTime(t, filepath.Join(v2, name)).Equal(time) {
			t.Errorf("v2's %s: time %v, want %v", name, modTime(t, filepath.Join(v2, name)), time)
		}
	}
	for i := range p.added {
		want = append(want, addedName(i))
		if got := readAll(t, filepath.Join(v2, addedName(i))); len(got) != fileSize {
			t.Errorf("added %s: %d bytes", addedName(i), len(got))
		}
	}
	slices.Sort(want)
	got, err := treeFiles(v2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("v2 holds %v, want %v", got, want)
	}
}

// TestSameTree: a copy with a file missing, one too many, another size or
// one byte changed is not v2; copyTree makes one that is.
func TestSameTree(t *testing.T) {
	dir := t.TempDir()
	want := filepath.Join(dir, "want")
	if err := writeUpdateCase(updateCases[4], filepath.Join(dir, "v1"), want, 0, 10, 3<<20/2, 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(got string) error
		bad   bool
	}{
		{"copy", func(string) error { return nil }, false},
		{"missing", func(got string) error { return os.Remove(filepath.Join(got, addedName(0))) }, true},
		{"extra", func(got string) error { return os.WriteFile(filepath.Join(got, "x"), nil, 0o644) }, true},
		{"shorter", func(got string) error { return os.Truncate(filepath.Join(got, addedName(0)), 1<<20) }, true},
		{"one byte", func(got string) error {
			f, err := os.OpenFile(filepath.Join(got, addedName(0)), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			b := make([]byte, 1)
			f.ReadAt(b, 1<<20+5) // in the second MiB read
			f.WriteAt([]byte{b[0] ^ 1}, 1<<20+5)
			return f.Close()
		}, true},
	} {
		got := filepath.Join(dir, tc.name)
		if err := copyTree(want, got); err != nil {
			t.Fatal(err)
		}
		if err := tc.spoil(got); err != nil {
			t.Fatal(err)
		}
		err := sameTree(got, want)
		if tc.bad != errors.Is(err, errNotV2) || !tc.bad && err != nil {
			t.Errorf("%s: sameTree = %v", tc.name, err)
		}
	}
}
