package chunker

import (
	"fmt"
	"runtime"
	"strings"
	"unicode/utf16"
)

// Which names an output folder can hold. Every manifest path is valid on every
// system (checkPath refuses "\", NUL, "..", absolute paths), but a seed on one
// system can hold names that another cannot: Windows reserves device names
// (CON, NUL, COM1.txt, ...), forbids characters such as ":" and "?" that Unix
// file names may hold, silently drops trailing dots and spaces, and Windows'
// and macOS's usual file systems take "A.txt" and "a.txt" for one file.
//
// A store being created checks the paths it is about to write against the
// rules of the system it runs on and refuses content it cannot hold, with
// ErrBadPath naming the file and the reason, before it writes anything.
// Names are refused, never mapped: a mapped name would make the fetched
// folder a different content from the one seeded (its manifest and root id
// differ), and two mapped names could meet. The seed's owner can rename.
//
// Long paths need no rule: the store opens every file through an os.Root,
// which on Windows walks the path one element at a time relative to its
// parent folder's handle, and Go gives long absolute paths the \\?\ prefix,
// so Windows' 260-character MAX_PATH does not bind a fetch. What binds is
// the file system's 255 UTF-16 units per element (NTFS), checked here on
// Windows; other programs on that machine may still need long paths enabled
// to open such files.

// pathRules are the naming rules of one operating system's file systems.
type pathRules struct {
	goos     string // named in errors
	windows  bool   // Win32 names: reserved devices, forbidden characters, trailing dots and spaces, 255 UTF-16 units per element
	foldCase bool   // names that differ only in case are one file
}

// rulesFor returns the naming rules of GOOS goos.
func rulesFor(goos string) pathRules {
	switch goos {
	case "windows":
		return pathRules{goos: goos, windows: true, foldCase: true}
	case "darwin", "ios":
		return pathRules{goos: goos, foldCase: true}
	}
	return pathRules{goos: goos}
}

// hostRules are the rules a store being created checks its paths against: the
// running system's. Tests set them to another system's to check its rules on
// any machine.
var hostRules = rulesFor(runtime.GOOS)

// maxElemUTF16 bounds one path element in UTF-16 code units (NTFS, and the
// 255 bytes of most Unix file systems, whose own error names the file).
const maxElemUTF16 = 255

// check returns an error wrapping ErrBadPath, naming the path, for the first
// of paths (slash-separated, relative, valid manifest paths) that r's system
// cannot hold, or that is the same file there as an earlier one.
func (r pathRules) check(paths []string) error {
	var seen map[string]string
	if r.foldCase {
		seen = make(map[string]string, len(paths))
	}
	for _, p := range paths {
		if r.windows {
			for el := range strings.SplitSeq(p, "/") {
				if why := windowsNameProblem(el); why != "" {
					return fmt.Errorf("%w: %q cannot be written on %s: %q %s", ErrBadPath, p, r.goos, el, why)
				}
			}
		}
		if r.foldCase {
			key := strings.ToLower(p)
			if q, ok := seen[key]; ok {
				return fmt.Errorf("%w: %q and %q would be one file on %s (names differ only in case)", ErrBadPath, q, p, r.goos)
			}
			seen[key] = p
		}
	}
	return nil
}

// windowsNameProblem says why Windows cannot hold a file or folder named el,
// or returns "" if it can.
func windowsNameProblem(el string) string {
	for _, c := range el {
		switch {
		case c < 0x20:
			return fmt.Sprintf("holds the control character %#x", c)
		case strings.ContainsRune(`<>:"/\|?*`, c):
			return fmt.Sprintf("holds %q, which Windows does not allow in names", c)
		}
	}
	if n := len(utf16.Encode([]rune(el))); n > maxElemUTF16 {
		return fmt.Sprintf("is %d UTF-16 units long, over Windows' %d", n, maxElemUTF16)
	}
	if last := el[len(el)-1]; last == '.' || last == ' ' {
		return "ends in a dot or space, which Windows drops"
	}
	if isWindowsDevice(el) {
		return "is a reserved device name"
	}
	return ""
}

// isWindowsDevice reports whether el names a DOS device: CON, PRN, AUX, NUL,
// COM0-9, LPT0-9 (and the superscript digits ¹²³), CONIN$, CONOUT$, in any
// case, alone or with an extension ("nul.txt", "COM1.tar.gz"), which names the
// device too on Windows before 11.
func isWindowsDevice(el string) bool {
	base, _, _ := strings.Cut(el, ".")
	base = strings.TrimRight(base, " ")
	switch strings.ToUpper(base) {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(base) < 4 {
		return false
	}
	switch strings.ToUpper(base[:3]) {
	case "COM", "LPT":
	default:
		return false
	}
	switch base[3:] {
	case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
		return true
	}
	return false
}

// checkTargets returns an error wrapping ErrBadPath for the first symbolic link
// whose target r's system cannot hold: on Windows, a target element that is no
// valid name there ("C:x" would even name another drive); the ".." that lead a
// target are not names.
func (r pathRules) checkTargets(links []Symlink) error {
	if !r.windows {
		return nil
	}
	for _, l := range links {
		for el := range strings.SplitSeq(l.Target, "/") {
			if el == ".." || el == "." {
				continue
			}
			if why := windowsNameProblem(el); why != "" {
				return fmt.Errorf("%w: symbolic link %q to %q cannot be made on %s: %q %s", ErrBadPath, l.Path, l.Target, r.goos, el, why)
			}
		}
	}
	return nil
}
