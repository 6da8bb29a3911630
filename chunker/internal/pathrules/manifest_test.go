package pathrules

import (
	"strings"
	"testing"
)

// TestManifestPaths checks the rules of manifest paths and link targets, and
// that each refusal says why.
func TestManifestPaths(t *testing.T) {
	for _, tc := range []struct {
		path string
		bad  string // a part of the error, "" if the path is valid
	}{
		{"a", ""},
		{"photos/2024/a.jpg", ""},
		{".reconciled", ""},
		{"", "empty"},
		{strings.Repeat("a", MaxPathLen+1), "bytes long"},
		{"a\xff", "not UTF-8"},
		{`a\b`, "backslash"},
		{"/etc", "absolute"},
		{".reconcile/held", "reserved"},
		{"a//b", "empty element"},
		{"a/./b", `"." element`},
		{"a/../../b", "escapes"},
	} {
		err := CheckPath(tc.path)
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("CheckPath(%.20q) = %v, want %q", tc.path, err, tc.bad)
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
