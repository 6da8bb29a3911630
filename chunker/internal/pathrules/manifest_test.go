package pathrules

import (
	"strings"
	"testing"
)

// TestManifestPaths checks the rules of manifest paths and link targets, and
// that each refusal says why.
func TestManifestPaths(t *testing.T) {
	for p, bad := range map[string]string{ // the path, and a part of the error ("" if valid)
		"a":                               "",
		"photos/2024/a.jpg":               "",
		".reconciled":                     "",
		"":                                "empty",
		strings.Repeat("a", MaxPathLen+1): "bytes long",
		"a\xff":                           "not UTF-8",
		`a\b`:                             "backslash",
		"/etc":                            "absolute",
		".reconcile/held":                 "reserved",
		"a//b":                            "empty element",
		"a/./b":                           `"." element`,
		"a/../../b":                       "escapes",
	} {
		err := CheckPath(p)
		if bad == "" && err != nil || bad != "" && (err == nil || !strings.Contains(err.Error(), bad)) {
			t.Errorf("CheckPath(%.20q) = %v, want %q", p, err, bad)
		}
	}
	for _, tc := range []struct {
		path, target string
		bad          string
		inside       bool
	}{
		{"t/l", "a", "", true},
		{"t/d/l", "../a", "", true},
		{"t/l", "..", "leaves the tree", false},
		{"t/l", "../x", "leaves the tree", false},
		{"t/l", "", "empty target", false},
		{"t/l", "/etc", "absolute", true}, // InsideTree takes it as relative: CheckLink refuses it first
		{"t/l", "a/../b", "not clean", true},
		{"t/l", `a\b`, "backslash", true},
		{"l", "t", "not inside a folder", false},
	} {
		err := CheckLink(tc.path, tc.target)
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("CheckLink(%q, %q) = %v, want %q", tc.path, tc.target, err, tc.bad)
		}
		if tc.target != "" && InsideTree(tc.path, tc.target) != tc.inside {
			t.Errorf("InsideTree(%q, %q) = %v", tc.path, tc.target, !tc.inside)
		}
	}
}

// TestNesting checks that only folders hold paths, and that no path is two
// things.
func TestNesting(t *testing.T) {
	for _, tc := range []struct {
		files, links, dirs []string
		bad                string // the error, "" if the tree is valid
	}{
		{[]string{"t/a", "t/b/c"}, []string{"t/l"}, []string{"t/e", "t/b/f"}, ""},
		{[]string{"t/a"}, []string{"t/a"}, nil, `"t/a" is a file and a symbolic link`},
		{[]string{"t/a/b"}, nil, []string{"t/a"}, `"t/a" is a empty folder and a folder of "t/a/b"`},
		{[]string{"t/x"}, []string{"t/l"}, []string{"t/l/e"}, `"t/l" is a symbolic link and a folder of "t/l/e"`},
		{[]string{"t", "t/a"}, nil, nil, `"t" is a file and a folder of "t/a"`},
	} {
		err := CheckNesting(tc.files, tc.links, tc.dirs)
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || err.Error() != tc.bad) {
			t.Errorf("%v %v %v: %v, want %q", tc.files, tc.links, tc.dirs, err, tc.bad)
		}
	}
}
