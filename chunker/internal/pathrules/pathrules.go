// Package pathrules holds the rules of names: which paths and symbolic link
// targets a manifest may hold on any system (CheckPath, CheckLink, InsideTree),
// and which names an operating system's file systems can hold (Rules): given the
// paths a store is about to write, Rules finds the first one that the system
// cannot hold, or that would be the same file there as another.
//
// Every manifest path is valid on every system (the manifest refuses "\", NUL,
// "..", absolute paths), but a seed on one system can hold names that another
// cannot: Windows reserves device names (CON, NUL, COM1.txt, ...), forbids
// characters such as ":" and "?" that Unix file names may hold, silently drops
// trailing dots and spaces, and Windows' and macOS's usual file systems take
// "A.txt" and "a.txt" for one file.
//
// Long paths need no rule: the store opens every file through an os.Root,
// which on Windows walks the path one element at a time relative to its
// parent folder's handle, and Go gives long absolute paths the \\?\ prefix,
// so Windows' 260-character MAX_PATH does not bind a fetch. What binds is
// the file system's 255 UTF-16 units per element (NTFS), checked here on
// Windows; other programs on that machine may still need long paths enabled
// to open such files.
package pathrules

import (
	"fmt"
	"strings"
	"unicode/utf16"
)

// Rules are the naming rules of one operating system's file systems.
type Rules struct {
	goos     string // named in errors
	windows  bool   // Win32 names: reserved devices, forbidden characters, trailing dots and spaces, 255 UTF-16 units per element
	foldCase bool   // names that differ only in case are one file
}

// For returns the naming rules of GOOS goos.
func For(goos string) Rules {
	switch goos {
	case "windows":
		return Rules{goos: goos, windows: true, foldCase: true}
	case "darwin", "ios":
		return Rules{goos: goos, foldCase: true}
	}
	return Rules{goos: goos}
}

// maxElemUTF16 bounds one path element in UTF-16 code units (NTFS, and the
// 255 bytes of most Unix file systems, whose own error names the file).
const maxElemUTF16 = 255

// Check returns an error naming the path, and the system, for the first of paths
// (slash-separated, relative, valid manifest paths) that r's system cannot hold,
// or that is the same file there as an earlier one.
func (r Rules) Check(paths []string) error {
	var seen map[string]string
	if r.foldCase {
		seen = make(map[string]string, len(paths))
	}
	for _, p := range paths {
		if r.windows {
			for el := range strings.SplitSeq(p, "/") {
				if why := windowsNameProblem(el); why != "" {
					return fmt.Errorf("%q cannot be written on %s: %q %s", p, r.goos, el, why)
				}
			}
		}
		if r.foldCase {
			key := strings.ToLower(p)
			if q, ok := seen[key]; ok {
				return fmt.Errorf("%q and %q would be one file on %s (names differ only in case)", q, p, r.goos)
			}
			seen[key] = p
		}
	}
	return nil
}

// CheckTarget returns an error if r's system cannot hold the target of the
// symbolic link at path (a valid manifest link): on Windows, if an element of
// target is no valid name there ("C:x" would even name another drive); the ".."
// that lead a target are not names.
func (r Rules) CheckTarget(path, target string) error {
	if !r.windows {
		return nil
	}
	for el := range strings.SplitSeq(target, "/") {
		if el == ".." || el == "." {
			continue
		}
		if why := windowsNameProblem(el); why != "" {
			return fmt.Errorf("symbolic link %q to %q cannot be made on %s: %q %s", path, target, r.goos, el, why)
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
