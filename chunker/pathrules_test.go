package chunker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWindowsNames checks Windows' naming rules on every system: the rules are
// a pure function of the names.
func TestWindowsNames(t *testing.T) {
	long := strings.Repeat("d/", 140) + "file.txt" // 288 characters, short elements
	for _, tc := range []struct {
		path string
		bad  string // a part of the error, "" if Windows holds the path
	}{
		{"readme.txt", ""},
		{"photos/2024/a.jpg", ""},
		{"CON", "reserved device name"},
		{"con", "reserved device name"},
		{"dir/Nul.txt", "reserved device name"},
		{"PRN.tar.gz", "reserved device name"},
		{"AUX", "reserved device name"},
		{"aux/file", "reserved device name"}, // a folder too
		{"COM1", "reserved device name"},
		{"com9.log", "reserved device name"},
		{"LPT1", "reserved device name"},
		{"lpt5.txt", "reserved device name"},
		{"COM¹", "reserved device name"},
		{"CONOUT$", "reserved device name"},
		{"CON .txt", "reserved device name"},
		{"CONSOLE", ""},
		{"COM10", ""},
		{"LPT", ""},
		{"xcon", ""},
		{"nul_", ""},
		{"a:b", `holds ':'`},
		{"C:/x", `holds ':'`},
		{"file.txt:stream", `holds ':'`},
		{"what?", `holds '?'`},
		{"a*b", `holds '*'`},
		{"a<b>c", `holds '<'`},
		{`say "hi"`, `holds '"'`},
		{"pipe|x", `holds '|'`},
		{"tab\tname", "control character 0x9"},
		{"trailing.", "ends in a dot or space"},
		{"dir./x", "ends in a dot or space"},
		{"space ", "ends in a dot or space"},
		{".hidden", ""},
		{"a..b", ""},
		{long, ""}, // over MAX_PATH: os.Root walks it element by element
		{strings.Repeat("x", 255), ""},
		{strings.Repeat("x", 256), "256 UTF-16 units long"},
		{strings.Repeat("é", 255), ""},                 // 510 bytes, 255 UTF-16 units
		{strings.Repeat("😀", 128), "256 UTF-16 units"}, // surrogate pairs count twice
		{"日本語/ファイル.txt", ""},
	} {
		err := rulesFor("windows").check([]string{tc.path})
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.path, err)
		case tc.bad != "" && err == nil:
			t.Errorf("%q: no error, want one with %q", tc.path, tc.bad)
		case tc.bad != "" && (!errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), "on windows")):
			t.Errorf("%q: %v, want ErrBadPath with %q", tc.path, err, tc.bad)
		}
		// Linux holds every valid manifest path.
		if err := rulesFor("linux").check([]string{tc.path}); err != nil {
			t.Errorf("linux: %q: %v", tc.path, err)
		}
	}
}

// TestFoldedNames checks that names differing only in case are refused where
// the file system folds case, and only there.
func TestFoldedNames(t *testing.T) {
	paths := []string{"Docs/a.txt", "README", "docs/A.TXT"}
	for goos, fold := range map[string]bool{"windows": true, "darwin": true, "linux": false, "freebsd": false} {
		err := rulesFor(goos).check(paths)
		if !fold {
			if err != nil {
				t.Errorf("%s: %v", goos, err)
			}
			continue
		}
		want := `"Docs/a.txt" and "docs/A.TXT" would be one file on ` + goos
		if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrBadPath with %s", goos, err, want)
		}
	}
}

// withRules runs the rest of the test with a store creating files as if on
// goos.
func withRules(t *testing.T, goos string) {
	old := hostRules
	hostRules = rulesFor(goos)
	t.Cleanup(func() { hostRules = old })
}

// TestCreateStoreWindowsNames checks, through the rules a store checks on
// Windows, that a fetch of content named for another system fails before it
// writes anything, naming the file, and that the single-file layout checks the
// name it writes, not the seed's.
func TestCreateStoreWindowsNames(t *testing.T) {
	withRules(t, "windows")
	m, err := NewManifest([]File{{Path: "notes/aux.txt"}, {Path: "notes/ok.txt"}}, MinBlockSize, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = CreateStore(context.Background(), dir, m)
	if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), `"notes/aux.txt"`) {
		t.Fatalf("CreateStore: %v, want ErrBadPath naming notes/aux.txt", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the refused store left %d entries in its folder", len(ents))
	}

	one, err := NewManifest([]File{{Path: "a:b"}}, MinBlockSize, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := CreateFileStore(context.Background(), filepath.Join(t.TempDir(), "renamed.txt"), one)
	if err != nil {
		t.Fatalf("CreateFileStore under a name Windows holds: %v", err)
	}
	s.Close()
	_, err = CreateFileStore(context.Background(), filepath.Join(t.TempDir(), "NUL"), one)
	if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), `"NUL"`) {
		t.Fatalf("CreateFileStore NUL: %v, want ErrBadPath naming NUL", err)
	}
}
