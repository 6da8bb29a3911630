package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

// TestPlotPathChecked: --plot is checked before the work starts: a name that
// is not .png or .svg, a folder that does not exist and a path that is a
// folder fail at once with one line (exit 2), and leave no file behind.
func TestPlotPathChecked(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "f.png")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"experiment", "table1", "--plot", filepath.Join(dir, "t1.pdf")}, "want a file name ending in .png or .svg"},
		{[]string{"experiment", "table1", "--plot", filepath.Join(dir, "t1")}, "want a file name ending in .png or .svg"},
		{[]string{"experiment", "table3", "--plot", filepath.Join(dir, "no", "such", "t3.png")}, "cannot write in " + filepath.Join(dir, "no", "such") + ": no such file or directory"},
		{[]string{"experiment", "methods", "--plot", folder}, "is a folder"},
		{[]string{"sim", "table4", "--plot", filepath.Join(dir, "t4.jpg")}, "want a file name ending in .png or .svg"},
		{[]string{"sim", "topology", "--plot", filepath.Join(dir, "t.gif")}, "want a file name ending in .png or .svg"},
		{[]string{"testnet", "--plot", filepath.Join(dir, "tn.pdf")}, "want a file name ending in .png or .svg"},
	} {
		code, stdout, stderr := runCLI(t, append(tc.args, "--trials", "1")...)
		if tc.args[0] == "testnet" || tc.args[1] == "topology" {
			code, stdout, stderr = runCLI(t, tc.args...)
		}
		if code != cliutil.ExitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "--plot") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, one line containing %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("files left behind: %v", ents)
	}
}

// TestPlotFormats: a .png and a .svg plot are written, and the table is
// printed as well.
func TestPlotFormats(t *testing.T) {
	dir := t.TempDir()
	for ext, magic := range map[string]string{".png": "\x89PNG", ".svg": "<?xml"} {
		file := filepath.Join(dir, "t3"+ext)
		code, stdout, stderr := runCLI(t, "experiment", "table3", "--trials", "1", "--plot", file, "--progress", "none")
		if code != cliutil.ExitOK || stderr != "" || !strings.Contains(stdout, "Byers time / complete time") {
			t.Fatalf("%s: exit %d, stderr %q, stdout %q", ext, code, stderr, stdout)
		}
		b, err := os.ReadFile(file)
		if err != nil || !bytes.HasPrefix(b, []byte(magic)) {
			t.Errorf("%s: %v, starts %q", ext, err, b[:min(len(b), 8)])
		}
	}
}
