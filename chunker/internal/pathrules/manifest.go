package pathrules

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// Manifest paths: what every path and symbolic link target of a manifest
// keeps, on every system. The errors say why, without a sentinel: package
// chunker wraps them in its ErrBadPath.

// MaxPathLen bounds a manifest path, and a link's target, in bytes: the value
// of chunker.MaxPathLen.
const MaxPathLen = 4096

// MetaDir is the folder that holds a store's metadata, which no manifest path
// is in: the value of chunker.MetaDir.
const MetaDir = ".reconcile"

// CheckPath returns an error if p is no valid manifest path: slash-separated
// and relative, no empty, "." or ".." element, no backslash or NUL, valid
// UTF-8, at most MaxPathLen bytes, and not in MetaDir.
func CheckPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty")
	case len(p) > MaxPathLen:
		return fmt.Errorf("%d bytes long", len(p))
	case !utf8.ValidString(p):
		return fmt.Errorf("%q is not UTF-8", p)
	case strings.ContainsAny(p, "\\\x00"):
		return fmt.Errorf("%q has a backslash or NUL", p)
	case p[0] == '/':
		return fmt.Errorf("%q is absolute", p)
	case p == MetaDir || strings.HasPrefix(p, MetaDir+"/"):
		return fmt.Errorf("%q is in %s, reserved for a store's metadata", p, MetaDir)
	}
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "":
			return fmt.Errorf("%q has an empty element", p)
		case ".":
			return fmt.Errorf("%q has a \".\" element", p)
		case "..":
			return fmt.Errorf("%q escapes its root", p)
		}
	}
	return nil
}

// CheckLink returns an error if target is no valid target of the symbolic link
// at the manifest path p: not empty, at most MaxPathLen bytes, valid UTF-8, no
// backslash or NUL, relative, clean (path.Clean leaves it as it is), and
// resolving inside the tree (InsideTree), p being inside a folder.
func CheckLink(p, target string) error {
	switch {
	case target == "":
		return fmt.Errorf("symbolic link %q has an empty target", p)
	case len(target) > MaxPathLen:
		return fmt.Errorf("symbolic link %q: target of %d bytes", p, len(target))
	case !utf8.ValidString(target):
		return fmt.Errorf("symbolic link %q: target is not UTF-8", p)
	case strings.ContainsAny(target, "\\\x00"):
		return fmt.Errorf("symbolic link %q: target %q has a backslash or NUL", p, target)
	case target[0] == '/':
		return fmt.Errorf("symbolic link %q: target %q is absolute", p, target)
	case path.Clean(target) != target:
		return fmt.Errorf("symbolic link %q: target %q is not clean (%q)", p, target, path.Clean(target))
	}
	top, _, ok := strings.Cut(p, "/")
	if !ok {
		return fmt.Errorf("symbolic link %q is not inside a folder", p)
	}
	if !InsideTree(p, target) {
		return fmt.Errorf("symbolic link %q: target %q leaves the tree %q", p, target, top)
	}
	return nil
}

// InsideTree reports whether target, from the folder holding the symbolic link
// at p, resolves to the top folder of p (its first element) or inside it. For a
// clean target, whose ".." elements all lead, this is where it leads on disk as
// long as no link is a folder of another path.
func InsideTree(p, target string) bool {
	top, _, _ := strings.Cut(p, "/")
	res := path.Join(path.Dir(p), target)
	return res == top || strings.HasPrefix(res, top+"/")
}

// CheckNesting returns an error if, in a tree whose files, symbolic links and
// empty folders have the given paths (valid, and unique within each list), a
// path is two of them, or one of them is a folder of another path: only
// folders hold paths.
func CheckNesting(files, links, dirs []string) error {
	kinds := make(map[string]string, len(files)+len(links)+len(dirs))
	for _, list := range [...]struct {
		kind  string
		paths []string
	}{{"file", files}, {"symbolic link", links}, {"empty folder", dirs}} {
		for _, p := range list.paths {
			if k, ok := kinds[p]; ok {
				return fmt.Errorf("%q is a %s and a %s", p, k, list.kind)
			}
			kinds[p] = list.kind
		}
	}
	for p := range kinds {
		for j := strings.IndexByte(p, '/'); j >= 0; {
			if k, ok := kinds[p[:j]]; ok {
				return fmt.Errorf("%q is a %s and a folder of %q", p[:j], k, p)
			}
			k := strings.IndexByte(p[j+1:], '/')
			if k < 0 {
				break
			}
			j += 1 + k
		}
	}
	return nil
}
