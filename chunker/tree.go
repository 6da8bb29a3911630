package chunker

import (
	"fmt"

	"github.com/reconcile-p2p/reconcile/chunker/internal/pathrules"
)

// Tree is what a manifest holds besides its blocks: the files, and the symbolic
// links and empty folders of a chunked folder.
type Tree struct {
	// Files are the regular files, sorted by path (byte-wise); their bytes, in
	// this order, are the manifest's stream of blocks.
	Files []File
	// Symlinks are the symbolic links, sorted by path.
	Symlinks []Symlink
	// Dirs are the empty folders (folders holding no file, link or other folder
	// of the tree), sorted by path, paths as for File.Path.
	Dirs []string
}

// Symlink is a symbolic link of a manifest. Only links that stay inside their
// tree are recorded, so that a store recreating them never points outside it.
type Symlink struct {
	// Path is the link's manifest path, as for File.Path; a link is always
	// inside a folder (the chunked one).
	Path string
	// Target is where it points, relative to the folder holding the link,
	// slash-separated and clean (path.Clean leaves it as it is, so ".." can only
	// lead it), no backslash or NUL, valid UTF-8, and resolving inside the tree:
	// path.Join(path.Dir(Path), Target) is the tree's top folder (the first
	// element of Path) or inside it.
	Target string
}

// clone returns a copy of t whose slices the caller may keep.
func (t Tree) clone() Tree {
	c := Tree{Files: append([]File(nil), t.Files...)}
	if len(t.Symlinks) > 0 {
		c.Symlinks = append([]Symlink(nil), t.Symlinks...)
	}
	if len(t.Dirs) > 0 {
		c.Dirs = append([]string(nil), t.Dirs...)
	}
	return c
}

// checkTree validates the files (checkFiles), the links and the empty folders:
// their paths are valid, sorted and unique, every target stays inside its tree,
// no path is two things, and only folders hold other paths (a file, link or empty
// folder is no folder of another path: pathrules.CheckNesting).
func checkTree(t Tree) error {
	if err := checkFiles(t.Files); err != nil {
		return err
	}
	if len(t.Symlinks) == 0 && len(t.Dirs) == 0 {
		return nil
	}
	links := make([]string, len(t.Symlinks))
	for i, l := range t.Symlinks {
		links[i] = l.Path
		if err := checkPath(l.Path); err != nil {
			return fmt.Errorf("symbolic link: %w", err)
		}
		if i > 0 && t.Symlinks[i-1].Path >= l.Path {
			return fmt.Errorf("%w: symbolic link %q after %q: paths must be sorted and unique", ErrBadPath, l.Path, t.Symlinks[i-1].Path)
		}
		if err := checkTarget(l); err != nil {
			return err
		}
	}
	for i, d := range t.Dirs {
		if err := checkPath(d); err != nil {
			return fmt.Errorf("empty folder: %w", err)
		}
		if i > 0 && t.Dirs[i-1] >= d {
			return fmt.Errorf("%w: empty folder %q after %q: paths must be sorted and unique", ErrBadPath, d, t.Dirs[i-1])
		}
	}
	files := make([]string, len(t.Files))
	for i, f := range t.Files {
		files[i] = f.Path
	}
	if err := pathrules.CheckNesting(files, links, t.Dirs); err != nil {
		return fmt.Errorf("%w: %w", ErrBadPath, err)
	}
	return nil
}

// checkTarget validates a symbolic link's target (see Symlink.Target).
func checkTarget(l Symlink) error {
	if err := pathrules.CheckLink(l.Path, l.Target); err != nil {
		return fmt.Errorf("%w: %w", ErrBadPath, err)
	}
	return nil
}
