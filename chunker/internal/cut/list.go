package cut

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/reconcile-p2p/reconcile/chunker/internal/pathrules"
)

// What Path reads from disk: the tree under the chunked path as a Tree of
// manifest paths (list).

// File is a regular file of a tree (chunker.File).
type File struct {
	Path string // manifest path: slash-separated, starting with the tree's name
	Size int64  // length in bytes
	Mode uint32 // Unix permission bits
}

// Symlink is a symbolic link of a tree (chunker.Symlink): its manifest path
// and its target, relative to the folder holding it and staying in the tree.
type Symlink struct {
	Path, Target string
}

// Tree is a file, or the files of a folder, as Path lists them (chunker.Tree):
// the regular files, and with Config.LinksAndDirs the symbolic links and the
// empty folders, each sorted by path.
type Tree struct {
	Files    []File
	Symlinks []Symlink // nil if there are none
	Dirs     []string  // nil if there are none
}

// RootName returns the manifest name of the chunked path abs (absolute): its
// base name. An error wraps ErrBadPath.
func RootName(abs string) (string, error) {
	name := filepath.Base(abs)
	if name == string(filepath.Separator) || name == "." || name == ".." {
		return "", fmt.Errorf("%w: %s has no base name", ErrBadPath, abs)
	}
	name = filepath.ToSlash(name)
	if err := checkPath(name); err != nil || strings.Contains(name, "/") {
		return "", fmt.Errorf("%w: base name %q", ErrBadPath, name)
	}
	return name, nil
}

// checkPath validates one manifest path (pathrules.CheckPath).
func checkPath(p string) error {
	if err := pathrules.CheckPath(p); err != nil {
		return fmt.Errorf("%w: %w", ErrBadPath, err)
	}
	return nil
}

// list lists the regular files of a file or tree as manifest files (sorted) and
// their paths on disk, and with cfg.LinksAndDirs the tree's symbolic links that
// stay inside it and its empty folders. It reports what it leaves out to
// cfg.Skipped.
func list(p string, cfg Config) (Tree, []string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return Tree{}, nil, err
	}
	name, err := RootName(abs)
	if err != nil {
		return Tree{}, nil, err
	}
	// A symbolic link given as the path itself is followed; the manifest keeps the
	// link's name.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Tree{}, nil, err
	}
	info, err := os.Stat(real)
	if err != nil {
		return Tree{}, nil, err
	}
	if info.Mode().IsRegular() {
		return Tree{Files: []File{{Path: name, Size: info.Size(), Mode: uint32(info.Mode().Perm())}}}, []string{real}, nil
	}
	if !info.IsDir() {
		return Tree{}, nil, fmt.Errorf("not a regular file or directory (%v)", info.Mode().Type())
	}
	skip := func(p, why string) {
		if cfg.Skipped != nil {
			cfg.Skipped(p, why)
		}
	}
	type entry struct {
		f   File
		src string
	}
	var (
		list  []entry
		links []Symlink
		dirs  []string
	)
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == pathrules.MetaDir && p != real {
			return filepath.SkipDir // a block store's metadata
		}
		mp := name
		if p != real {
			rel, err := filepath.Rel(real, p)
			if err != nil {
				return err
			}
			mp = name + "/" + filepath.ToSlash(rel)
		}
		switch t := d.Type(); {
		case t.IsDir():
			if cfg.LinksAndDirs {
				if err := checkPath(mp); err != nil {
					return fmt.Errorf("folder %s: %w", p, err)
				}
				dirs = append(dirs, mp)
			}
			return nil
		case t&fs.ModeSymlink != 0:
			if !cfg.LinksAndDirs {
				skip(p, "symbolic link: not recorded with fixed-size blocks (see WithLinksAndDirs)")
				return nil
			}
			l, why, err := readLink(p, mp)
			if err != nil {
				return err
			}
			if why != "" {
				skip(p, why)
				return nil
			}
			links = append(links, l)
			return nil
		case !t.IsRegular():
			skip(p, fmt.Sprintf("not a regular file, folder or symbolic link (%v)", t))
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := checkPath(mp); err != nil {
			return fmt.Errorf("file %s: %w", p, err)
		}
		list = append(list, entry{File{Path: mp, Size: info.Size(), Mode: uint32(info.Mode().Perm())}, p})
		return nil
	})
	if err != nil {
		return Tree{}, nil, err
	}
	sort.Slice(list, func(i, j int) bool { return list[i].f.Path < list[j].f.Path })
	t := Tree{Files: make([]File, len(list))}
	srcs := make([]string, len(list))
	for i, e := range list {
		t.Files[i], srcs[i] = e.f, e.src
	}
	if cfg.LinksAndDirs {
		sort.Slice(links, func(i, j int) bool { return links[i].Path < links[j].Path })
		t.Symlinks = links
		t.Dirs = emptyDirs(t, dirs)
	}
	if len(t.Symlinks) == 0 {
		t.Symlinks = nil
	}
	return t, srcs, nil
}

// readLink reads the symbolic link at p (manifest path mp) as a Symlink, or says
// why it is not recorded.
func readLink(p, mp string) (Symlink, string, error) {
	target, err := os.Readlink(p)
	if err != nil {
		return Symlink{}, "", err
	}
	if filepath.IsAbs(target) || filepath.VolumeName(target) != "" || strings.HasPrefix(filepath.ToSlash(target), "/") {
		return Symlink{}, fmt.Sprintf("symbolic link to %s: its target is absolute", target), nil
	}
	tg := filepath.ToSlash(target)
	// ".." after a folder name means different things lexically and on disk
	// when that folder is a link: such targets are not recorded.
	down := false
	for _, el := range strings.Split(tg, "/") {
		switch el {
		case "", ".":
		case "..":
			if down {
				return Symlink{}, fmt.Sprintf("symbolic link to %s: its target climbs out of a folder it entered", target), nil
			}
		default:
			down = true
		}
	}
	l := Symlink{Path: mp, Target: path.Clean(tg)}
	if err := checkPath(mp); err != nil {
		return Symlink{}, "", fmt.Errorf("symbolic link %s: %w", p, err)
	}
	if err := pathrules.CheckLink(l.Path, l.Target); err != nil {
		if !pathrules.InsideTree(l.Path, l.Target) {
			return Symlink{}, fmt.Sprintf("symbolic link to %s: its target leaves the tree", target), nil
		}
		return Symlink{}, fmt.Sprintf("symbolic link to %s: %v", target, err), nil
	}
	return l, "", nil
}

// emptyDirs returns the folders of dirs that hold no file, link or other folder
// of t, sorted.
func emptyDirs(t Tree, dirs []string) []string {
	full := make(map[string]bool, len(dirs))
	mark := func(p string) {
		for d := path.Dir(p); d != "." && !full[d]; d = path.Dir(d) {
			full[d] = true
		}
	}
	for _, f := range t.Files {
		mark(f.Path)
	}
	for _, l := range t.Symlinks {
		mark(l.Path)
	}
	for _, d := range dirs {
		mark(d)
	}
	var out []string
	for _, d := range dirs {
		if !full[d] {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}
