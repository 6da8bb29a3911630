package labbench

// The content of reconcile bench update: each case's v1 and v2 (a file and
// an edit of it, or a folder and a reshuffle of it), deterministic for the
// seed; fresh copies of v1 to update; and the check that an updated copy is
// v2, byte for byte.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/reconcile-p2p/reconcile/cmd/internal/samplefile"
)

// updateCase is one kind of update the bench measures.
type updateCase struct {
	name   string
	change string // what v2 changes, for the table's legend
	folder bool
}

// updateCases are the cases, in the order --cases lists by default.
var updateCases = []updateCase{
	{name: "overwrite", change: "1 MiB overwritten in the middle"},
	{name: "insert", change: "1 KiB inserted in the middle"},
	{name: "delete", change: "1 KiB deleted in the middle"},
	{name: "append", change: "64 KiB appended"},
	{name: "folder", change: "files renamed, rewritten, deleted and added", folder: true},
}

// The names of v1 and v2 in their case's folder: a file, or a folder.
const (
	updateFileName   = "update.bin"
	updateFolderName = "data"
)

// The modification times of the content: v1's, and v2's where v2 changed a
// file. They are set, not left to the clock, so that rsync's quick check
// (same size and time: skip the file) sees what a user's would: unchanged
// files of the folder skipped, changed ones compared.
var (
	updateTimeV1 = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	updateTimeV2 = updateTimeV1.Add(time.Hour)
)

// fileEdit makes v2 of a file from v1: v1[:off], then ins, then v1[off+cut:].
type fileEdit struct {
	off, cut int64
	ins      []byte
}

// editFor returns case name's edit of a file of size bytes (at least 2 MiB),
// its new bytes drawn from seed.
func editFor(name string, size int64, seed uint64) (fileEdit, error) {
	mid := size / 2
	switch name {
	case "overwrite":
		return fileEdit{off: mid - 512<<10, cut: 1 << 20, ins: randBytes(seed, 1<<20)}, nil
	case "insert":
		return fileEdit{off: mid, ins: randBytes(seed, 1<<10)}, nil
	case "delete":
		return fileEdit{off: mid, cut: 1 << 10}, nil
	case "append":
		return fileEdit{off: size, ins: randBytes(seed, 64<<10)}, nil
	}
	return fileEdit{}, fmt.Errorf("bench update: no file case %q", name)
}

// randBytes returns n pseudo-random bytes, the same for the same seed (and
// not samplefile.Write's bytes for that seed).
func randBytes(seed uint64, n int) []byte {
	var key [32]byte
	for j := range 8 {
		key[j] = byte(seed >> (8 * j))
	}
	copy(key[8:], "bench update")
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

// writeEdited writes at v2 the file v1 with edit e applied.
func writeEdited(v1, v2 string, e fileEdit) error {
	in, err := os.Open(v1)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(v2)
	if err != nil {
		return err
	}
	if _, err = io.CopyN(out, in, e.off); err == nil {
		if _, err = out.Write(e.ins); err == nil {
			if _, err = in.Seek(e.off+e.cut, io.SeekStart); err == nil {
				_, err = io.Copy(out, in)
			}
		}
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// folderPlan is what v2 of the folder case does to v1's files (indices
// into v1's names), and how many it adds.
type folderPlan struct {
	renamed, changed, deleted []int
	added                     int
}

// planFolder picks, for a folder of files files, a tenth to rename and a
// twentieth each to rewrite, delete and add (at least one each; files is at
// least 10), drawn from seed.
func planFolder(files int, seed uint64) folderPlan {
	ren, other := max(1, files/10), max(1, files/20)
	perm := rand.New(rand.NewPCG(seed, 5)).Perm(files)
	return folderPlan{renamed: perm[:ren], changed: perm[ren : ren+other], deleted: perm[ren+other : ren+2*other], added: other}
}

// The names of the folder case's files: v1's, v1's renamed, v2's new ones.
func folderName(i int) string  { return fmt.Sprintf("f%04d.bin", i) }
func renamedName(i int) string { return fmt.Sprintf("renamed-%04d.bin", i) }
func addedName(i int) string   { return fmt.Sprintf("new-%04d.bin", i) }

// writeUpdateFolders writes v1, a folder of files files of fileSize bytes,
// and v2, the same after plan p; file contents come from seed.
func writeUpdateFolders(v1, v2 string, files int, fileSize int64, p folderPlan, seed uint64) error {
	for _, d := range []string{v1, v2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	seeds := rand.New(rand.NewPCG(seed, 6))
	// A file's bytes: v1's come first in the stream of seeds, then the
	// rewritten and the added ones.
	write := func(path string, at time.Time) error {
		if err := samplefile.Write(path, fileSize, seeds.Uint64()); err != nil {
			return err
		}
		return os.Chtimes(path, at, at)
	}
	for i := range files {
		if err := write(filepath.Join(v1, folderName(i)), updateTimeV1); err != nil {
			return err
		}
	}
	for i := range files {
		src, dst := filepath.Join(v1, folderName(i)), filepath.Join(v2, folderName(i))
		switch {
		case slices.Contains(p.deleted, i):
			continue
		case slices.Contains(p.changed, i):
			if err := write(dst, updateTimeV2); err != nil {
				return err
			}
			continue
		case slices.Contains(p.renamed, i):
			dst = filepath.Join(v2, renamedName(i)) // renamed as mv does: its time kept
		}
		if err := copyFile(src, dst); err != nil {
			return err
		}
	}
	for i := range p.added {
		if err := write(filepath.Join(v2, addedName(i)), updateTimeV2); err != nil {
			return err
		}
	}
	return nil
}

// writeUpdateCase writes case c's v1 and v2 at v1 and v2 (files, or
// folders), deterministic for seed: a file of size bytes, or a folder of
// files files of fileSize bytes.
func writeUpdateCase(c updateCase, v1, v2 string, size int64, files int, fileSize int64, seed uint64) error {
	for _, p := range []string{v1, v2} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
	}
	if c.folder {
		return writeUpdateFolders(v1, v2, files, fileSize, planFolder(files, seed), seed)
	}
	e, err := editFor(c.name, size, seed)
	if err != nil {
		return err
	}
	if err := samplefile.Write(v1, size, seed); err != nil {
		return err
	}
	if err := writeEdited(v1, v2, e); err != nil {
		return err
	}
	if err := os.Chtimes(v1, updateTimeV1, updateTimeV1); err != nil {
		return err
	}
	return os.Chtimes(v2, updateTimeV2, updateTimeV2)
}

// copyFile copies the file src to dst, its modification time too.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in) // copy_file_range(2) on Linux
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// copyTree copies src (a file, or a folder of files and folders) to dst,
// which must not exist (its parent is made if missing), with the files'
// modification times.
func copyTree(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		return copyFile(p, to)
	})
}

// treeFiles lists the files under root (root itself if it is a file) by
// their paths relative to root.
func treeFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files = append(files, rel)
		return err
	})
	slices.Sort(files) // a walk's order is not the strings' ("a/b" before "a.b")
	return files, err
}

// errNotV2 means an updated copy is not v2.
var errNotV2 = errors.New("bench update: the updated copy is not v2")

// sameTree checks that got holds what want holds (a file, or a folder):
// the same files, no more, with the same bytes.
func sameTree(got, want string) error {
	g, err := treeFiles(got)
	if err != nil {
		return err
	}
	w, err := treeFiles(want)
	if err != nil {
		return err
	}
	for _, f := range w {
		if _, ok := slices.BinarySearch(g, f); !ok {
			return fmt.Errorf("%w: %s lacks %s", errNotV2, got, f)
		}
	}
	for _, f := range g {
		if _, ok := slices.BinarySearch(w, f); !ok {
			return fmt.Errorf("%w: %s has %s, which v2 has not", errNotV2, got, f)
		}
	}
	for _, f := range w {
		if err := sameFile(filepath.Join(got, f), filepath.Join(want, f)); err != nil {
			return err
		}
	}
	return nil
}

// sameFile checks that files a and b hold the same bytes.
func sameFile(a, b string) error {
	fa, err := os.Open(a)
	if err != nil {
		return err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return err
	}
	defer fb.Close()
	if sa, sb, err := fileSizes(fa, fb); err != nil {
		return err
	} else if sa != sb {
		return fmt.Errorf("%w: %s has %d bytes, v2 %d", errNotV2, a, sa, sb)
	}
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for off := int64(0); ; {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return fmt.Errorf("%w: %s differs from v2 in the MiB from byte %d", errNotV2, a, off)
		}
		off += int64(na)
		if ea != nil || eb != nil {
			if ea == io.EOF || ea == io.ErrUnexpectedEOF {
				return nil
			}
			return errors.Join(ea, eb)
		}
	}
}

// fileSizes returns the sizes of two open files.
func fileSizes(a, b *os.File) (int64, int64, error) {
	sa, err := a.Stat()
	if err != nil {
		return 0, 0, err
	}
	sb, err := b.Stat()
	if err != nil {
		return 0, 0, err
	}
	return sa.Size(), sb.Size(), nil
}
