package chunker

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/reconcile-p2p/reconcile/chunker/internal/pathrules"
)

// What ChunkPath reads from disk: the tree under the chunked path as a Tree of
// manifest paths (listTree), and its files' bytes as one stream (treeReader).

// rootName returns the manifest name of the chunked path: its base name.
func rootName(abs string) (string, error) {
	name := filepath.Base(abs)
	if name == string(filepath.Separator) || name == "." || name == ".." {
		return "", fmt.Errorf("%w: cannot chunk %s: it has no base name", ErrBadPath, abs)
	}
	name = filepath.ToSlash(name)
	if err := checkPath(name); err != nil || strings.Contains(name, "/") {
		return "", fmt.Errorf("%w: base name %q", ErrBadPath, name)
	}
	return name, nil
}

// listTree lists the regular files of a file or tree as manifest files (sorted) and
// their paths on disk, and with cfg.linksAndDirs the tree's symbolic links that
// stay inside it and its empty folders. It reports what it leaves out to
// cfg.skipped.
func listTree(p string, cfg *chunkConfig) (Tree, []string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return Tree{}, nil, fmt.Errorf("chunker: chunk %s: %w", p, err)
	}
	name, err := rootName(abs)
	if err != nil {
		return Tree{}, nil, err
	}
	// A symbolic link given as the path itself is followed; the manifest keeps the
	// link's name.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Tree{}, nil, fmt.Errorf("chunker: %w", err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return Tree{}, nil, fmt.Errorf("chunker: %w", err)
	}
	if info.Mode().IsRegular() {
		return Tree{Files: []File{{Path: name, Size: info.Size(), Mode: uint32(info.Mode().Perm())}}}, []string{real}, nil
	}
	if !info.IsDir() {
		return Tree{}, nil, fmt.Errorf("chunker: chunk %s: not a regular file or directory", p)
	}
	skip := func(p, why string) {
		if cfg.skipped != nil {
			cfg.skipped(p, why)
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
		if d.IsDir() && d.Name() == MetaDir && p != real {
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
			if cfg.linksAndDirs {
				if err := checkPath(mp); err != nil {
					return fmt.Errorf("folder %s: %w", p, err)
				}
				dirs = append(dirs, mp)
			}
			return nil
		case t&fs.ModeSymlink != 0:
			if !cfg.linksAndDirs {
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
		return Tree{}, nil, fmt.Errorf("chunker: chunk %s: %w", p, err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].f.Path < list[j].f.Path })
	t := Tree{Files: make([]File, len(list))}
	srcs := make([]string, len(list))
	for i, e := range list {
		t.Files[i], srcs[i] = e.f, e.src
	}
	if cfg.linksAndDirs {
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
	if err := checkTarget(l); err != nil {
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

// treeReader reads the files of a tree as one stream, exactly Size bytes from each.
type treeReader struct {
	files []File
	srcs  []string
	i     int
	cur   *os.File
	left  int64
}

func (t *treeReader) Read(p []byte) (int, error) {
	for {
		if t.cur == nil {
			if t.i >= len(t.files) {
				return 0, io.EOF
			}
			if t.files[t.i].Size == 0 {
				t.i++
				continue
			}
			f, err := os.Open(t.srcs[t.i])
			if err != nil {
				return 0, err
			}
			t.cur, t.left = f, t.files[t.i].Size
		}
		if t.left == 0 {
			if info, err := t.cur.Stat(); err == nil && info.Size() != t.files[t.i].Size {
				return 0, fmt.Errorf("%s: size changed from %d to %d while chunking", t.srcs[t.i], t.files[t.i].Size, info.Size())
			}
			t.cur.Close()
			t.cur = nil
			t.i++
			continue
		}
		if int64(len(p)) > t.left {
			p = p[:t.left]
		}
		n, err := t.cur.Read(p)
		t.left -= int64(n)
		if err == io.EOF && t.left > 0 {
			return n, fmt.Errorf("%s: file shrank while chunking", t.srcs[t.i])
		}
		if n > 0 || err != nil && err != io.EOF {
			return n, err
		}
	}
}

// Close closes the open file, if any.
func (t *treeReader) Close() error {
	if t.cur != nil {
		err := t.cur.Close()
		t.cur = nil
		return err
	}
	return nil
}
