// Command modproxy puts one version of a module into a module proxy directory,
// in the layout `go mod download` reads (GOPROXY=file://DIR):
// DIR/MODULE/@v/{list, VERSION.info, VERSION.mod, VERSION.zip}. CI uses it to
// prove that `go install github.com/reconcile-p2p/reconcile/cmd/reconcile@VERSION`
// works against the library at the commit being tested, with no replace
// directive and no published tag (see .ci/goinstall and docs/releasing.md).
//
//	go run ./cmd/internal/modproxy -dir DIR -module PATH -version VERSION -src MODDIR [-gomod FILE] [-gosum FILE]
//
// The module's files are the files git tracks under MODDIR, read from the work
// tree (nested modules, such as cmd/ under the root, are left out as the go
// command does); -gomod and -gosum take go.mod and go.sum from other files.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the proxy directory (created if missing)")
	mod := flag.String("module", "", "the module path")
	version := flag.String("version", "", "the version to file the module under")
	src := flag.String("src", ".", "the module's root folder, in a git work tree")
	gomod := flag.String("gomod", "", "take go.mod from this file")
	gosum := flag.String("gosum", "", "take go.sum from this file")
	flag.Parse()
	if *dir == "" || *mod == "" || *version == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -dir DIR -module PATH -version VERSION -src MODDIR [-gomod FILE] [-gosum FILE]")
		os.Exit(2)
	}
	if err := add(*dir, module.Version{Path: *mod, Version: *version}, *src, map[string]string{"go.mod": *gomod, "go.sum": *gosum}); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

// add files module version m, made of the tracked files of src (with the
// files named in override taken from elsewhere), in the proxy directory dir.
func add(dir string, m module.Version, src string, override map[string]string) error {
	if err := module.Check(m.Path, m.Version); err != nil {
		return err
	}
	files, err := trackedFiles(src, override)
	if err != nil {
		return err
	}
	var gomod []byte
	for _, f := range files {
		if f.Path() == "go.mod" {
			if gomod, err = os.ReadFile(f.(file).disk); err != nil {
				return err
			}
		}
	}
	if gomod == nil {
		return fmt.Errorf("%s has no go.mod", src)
	}
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVer, err := module.EscapeVersion(m.Version)
	if err != nil {
		return err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	var zbuf bytes.Buffer
	if err := modzip.Create(&zbuf, m, files); err != nil {
		return fmt.Errorf("zip %s: %w", m, err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, pseudoTime(m.Version)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{".info": info, ".mod": gomod, ".zip": zbuf.Bytes()} {
		if err := os.WriteFile(filepath.Join(vdir, escVer+name), data, 0o644); err != nil {
			return err
		}
	}
	return addToList(filepath.Join(vdir, "list"), m.Version)
}

// pseudoTime returns the time a pseudo-version names, or the zero time.
func pseudoTime(v string) time.Time {
	if t, err := module.PseudoVersionTime(v); err == nil {
		return t
	}
	return time.Time{}
}

// addToList adds version to the list file of a module's versions.
func addToList(list, version string) error {
	b, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	vs := strings.Fields(string(b))
	if !slices.Contains(vs, version) {
		vs = append(vs, version)
	}
	return os.WriteFile(list, []byte(strings.Join(vs, "\n")+"\n"), 0o644)
}

// file is one file of the module: its path in the module and on disk.
type file struct {
	path, disk string
}

func (f file) Path() string                 { return f.path }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(f.disk) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.disk) }

// trackedFiles lists the files git tracks under src that are in the work
// tree, with those named in override read from other files (added if git does
// not track them).
func trackedFiles(src string, override map[string]string) ([]modzip.File, error) {
	out, err := exec.Command("git", "-C", src, "ls-files", "-z", "--cached", "--", ".").Output()
	if err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", src, err)
	}
	var files []modzip.File
	seen := map[string]bool{}
	for p := range strings.SplitSeq(strings.TrimRight(string(out), "\x00"), "\x00") {
		if p == "" {
			continue
		}
		disk := filepath.Join(src, filepath.FromSlash(p))
		if o := override[p]; o != "" {
			disk = o
		} else if _, err := os.Lstat(disk); errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree
		}
		seen[p] = true
		files = append(files, file{path: path.Clean(p), disk: disk})
	}
	for p, o := range override {
		if o != "" && !seen[p] {
			files = append(files, file{path: p, disk: o})
		}
	}
	return files, nil
}
