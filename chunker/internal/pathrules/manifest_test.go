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
