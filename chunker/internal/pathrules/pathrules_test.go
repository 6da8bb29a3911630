package pathrules

import (
	"fmt"
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
		err := For("windows").Check([]string{tc.path})
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.path, err)
		case tc.bad != "" && err == nil:
			t.Errorf("%q: no error, want one with %q", tc.path, tc.bad)
		case tc.bad != "" && (!strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), "on windows")):
			t.Errorf("%q: %v, want an error with %q", tc.path, err, tc.bad)
		}
		// Linux holds every valid manifest path.
		if err := For("linux").Check([]string{tc.path}); err != nil {
			t.Errorf("linux: %q: %v", tc.path, err)
		}
	}
}

// TestFoldedNames checks that names differing only in case are refused where
// the file system folds case, and only there.
func TestFoldedNames(t *testing.T) {
	paths := []string{"Docs/a.txt", "README", "docs/A.TXT"}
	for goos, fold := range map[string]bool{"windows": true, "darwin": true, "linux": false, "freebsd": false} {
		err := For(goos).Check(paths)
		if !fold {
			if err != nil {
				t.Errorf("%s: %v", goos, err)
			}
			continue
		}
		want := `"Docs/a.txt" and "docs/A.TXT" would be one file on ` + goos
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %s", goos, err, want)
		}
	}
}

// TestLinkTargets checks that link targets are held to the names of the
// system, but for the ".." and "." that are no names.
func TestLinkTargets(t *testing.T) {
	for _, tc := range []struct {
		target string
		bad    string
	}{
		{"../x/file.txt", ""},
		{"./a", ""},
		{"C:x", `"C:x" holds ':'`},
		{"../aux", "reserved device name"},
		{"dir./f", "ends in a dot or space"},
	} {
		err := For("windows").CheckTarget("top/link", tc.target)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.target, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), `symbolic link "top/link"`)):
			t.Errorf("%q: %v, want an error naming the link with %q", tc.target, err, tc.bad)
		}
		for _, goos := range []string{"linux", "darwin"} {
			if err := For(goos).CheckTarget("top/link", tc.target); err != nil {
				t.Errorf("%s: %q: %v", goos, tc.target, err)
			}
		}
	}
}

func ExampleRules_Check() {
	paths := []string{"photos/CON.jpg", "photos/a.jpg"}
	fmt.Println(For("linux").Check(paths))
	fmt.Println(For("windows").Check(paths))
	fmt.Println(For("darwin").Check([]string{"README", "readme"}))
	// Output:
	// <nil>
	// "photos/CON.jpg" cannot be written on windows: "CON.jpg" is a reserved device name
	// "README" and "readme" would be one file on darwin (names differ only in case)
}
