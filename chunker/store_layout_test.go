package chunker

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fileManifest returns the manifest of one file at path (a manifest path) of size
// random bytes, and the bytes.
func fileManifest(t testing.TB, name string, size int, seed uint64) (*Manifest, []byte) {
	t.Helper()
	data := randBytes(seed, size)
	var hashes [][HashSize]byte
	for off := 0; off < len(data); off += MinBlockSize {
		hashes = append(hashes, HashBlock(data[off:min(off+MinBlockSize, len(data))]))
	}
	m, err := NewManifest([]File{{Path: name, Size: int64(size), Mode: 0o644}}, MinBlockSize, hashes)
	if err != nil {
		t.Fatal(err)
	}
	return m, data
}

// fill puts the blocks of m for which keep is true.
func fill(t testing.TB, s *Store, data []byte, keep func(i int) bool) {
	t.Helper()
	for i := range s.Manifest().BlockCount() {
		if keep(i) {
			if err := s.PutBlock(i, block(s.Manifest(), data, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func all(int) bool          { return true }
func evens(i int) bool      { return i%2 == 0 }
func nothing(int) bool      { return false }
func ctxb() context.Context { return context.Background() }

// TestSharedFolder puts two downloads of different roots in one folder and checks
// that each resumes on its own, that OpenStore asks which one, and that content
// whose file is in the way is refused without touching anything.
func TestSharedFolder(t *testing.T) {
	dir := t.TempDir()
	a, dataA := fileManifest(t, "a.bin", 5*MinBlockSize, 1)
	b, dataB := fileManifest(t, "b.bin", 7*MinBlockSize+3, 2)
	sa, err := OpenOrCreateStore(ctxb(), dir, a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := OpenOrCreateStore(ctxb(), dir, b)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, sa, dataA, all)
	fill(t, sb, dataB, evens)
	if sa.StateDir() == sb.StateDir() || sa.StateDir() != filepath.Join(dir, MetaDir, a.ID().String()) {
		t.Fatalf("state folders %s and %s", sa.StateDir(), sb.StateDir())
	}
	sa.Close()
	sb.Close()

	ids, err := ListStores(dir)
	want := []ID{a.ID(), b.ID()}
	slices.SortFunc(want, func(x, y ID) int { return bytes.Compare(x[:], y[:]) })
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("ListStores: %v, %v; want %v", ids, err, want)
	}
	for _, tc := range []struct {
		name    string
		open    func() (*Store, error)
		want    error
		id      ID
		held    int
		checkOf []byte
	}{
		{"OpenStore without id", func() (*Store, error) { return OpenStore(ctxb(), dir) }, ErrManyStores, ID{}, 0, nil},
		{"OpenStore a", func() (*Store, error) { return OpenStore(ctxb(), dir, WithID(a.ID())) }, nil, a.ID(), a.BlockCount(), dataA},
		{"OpenStore b", func() (*Store, error) { return OpenStore(ctxb(), dir, WithID(b.ID())) }, nil, b.ID(), (b.BlockCount() + 1) / 2, dataB},
		{"OpenStore other id", func() (*Store, error) { return OpenStore(ctxb(), dir, WithID(ID{1})) }, ErrNotFound, ID{}, 0, nil},
		{"OpenOrCreateStore b", func() (*Store, error) { return OpenOrCreateStore(ctxb(), dir, b) }, nil, b.ID(), (b.BlockCount() + 1) / 2, dataB},
		{"CreateStore a again", func() (*Store, error) { return CreateStore(ctxb(), dir, a) }, ErrExists, ID{}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.open()
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Manifest().ID() != tc.id || s.HeldCount() != tc.held {
				t.Fatalf("opened %s holding %d, want %s holding %d", s.Manifest().ID(), s.HeldCount(), tc.id, tc.held)
			}
			checkStore(t, s, tc.checkOf)
		})
	}

	// Other content at a path already taken: refused, nothing touched.
	c, _ := fileManifest(t, "a.bin", 3*MinBlockSize, 3)
	snap := snapshot(t, dir)
	for _, open := range []func() (*Store, error){
		func() (*Store, error) { return OpenOrCreateStore(ctxb(), dir, c) },
		func() (*Store, error) { return CreateStore(ctxb(), dir, c) },
	} {
		if _, err := open(); !errors.Is(err, ErrExists) || !errors.Is(err, ErrManifestMismatch) {
			t.Fatalf("content in the way: err = %v, want ErrExists and ErrManifestMismatch", err)
		}
	}
	if got := snapshot(t, dir); got != snap {
		t.Fatalf("a refused open changed the folder:\n%s\nwas\n%s", got, snap)
	}
	if _, err := os.Stat(filepath.Join(dir, MetaDir, c.ID().String())); err == nil {
		t.Fatal("a refused create left a state folder")
	}
}

// TestOldLayout checks that a store in the layout of earlier versions (state in
// DIR/.reconcile/ itself) is resumed, and that another download can join it.
func TestOldLayout(t *testing.T) {
	dir := t.TempDir()
	a, dataA := fileManifest(t, "a.bin", 6*MinBlockSize, 4)
	s, err := CreateStore(ctxb(), dir, a, WithStateDir(filepath.Join(dir, MetaDir))) // the old layout
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, dataA, evens)
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, MetaDir, "manifest")); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func() (*Store, error){
		func() (*Store, error) { return OpenStore(ctxb(), dir) },
		func() (*Store, error) { return OpenStore(ctxb(), dir, WithID(a.ID())) },
		func() (*Store, error) { return OpenOrCreateStore(ctxb(), dir, a) },
	} {
		s, err := open()
		if err != nil || s.HeldCount() != 3 || s.StateDir() != filepath.Join(dir, MetaDir) {
			t.Fatalf("resume the old layout: %v", err)
		}
		s.Close()
	}
	if _, err := CreateStore(ctxb(), dir, a); !errors.Is(err, ErrExists) {
		t.Fatalf("create over an old-layout store: %v", err)
	}
	b, dataB := fileManifest(t, "b.bin", 2*MinBlockSize, 5)
	sb, err := OpenOrCreateStore(ctxb(), dir, b)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, sb, dataB, all)
	if err := sb.RemoveState(); err != nil {
		t.Fatal(err)
	}
	if ids, err := ListStores(dir); err != nil || len(ids) != 1 || ids[0] != a.ID() {
		t.Fatalf("stores left: %v, %v", ids, err)
	}
	s, err = OpenStore(ctxb(), dir)
	if err != nil || s.HeldCount() != 3 {
		t.Fatalf("the old store after the other's RemoveState: %v", err)
	}
	fill(t, s, dataA, all)
	if err := s.RemoveState(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 { // a.bin and b.bin
		t.Fatalf("left in the folder: %v", entries)
	}
}

// TestFileStore checks the single-file layout: the file at the chosen path, its
// state beside it (or in WithStateDir), resumption, and RemoveState.
func TestFileStore(t *testing.T) {
	m, data := fileManifest(t, "original-name.bin", 9*MinBlockSize+11, 6)
	for _, tc := range []struct {
		name     string
		stateDir func(dir string) string // "" for the default
	}{
		{"state beside", func(string) string { return "" }},
		{"state elsewhere", func(dir string) string { return filepath.Join(dir, "state", "x") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "movie.bin")
			var opts []StoreOption
			state := file + MetaDir
			if sd := tc.stateDir(dir); sd != "" {
				opts, state = append(opts, WithStateDir(sd)), sd
			}
			s, err := OpenOrCreateFileStore(ctxb(), file, m, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if s.StateDir() != state {
				t.Fatalf("state in %s, want %s", s.StateDir(), state)
			}
			fill(t, s, data, evens)
			if err := s.RemoveState(); !errors.Is(err, ErrIncomplete) {
				t.Fatalf("RemoveState of an incomplete store: %v", err)
			}
			s.Close()
			if _, err := OpenOrCreateFileStore(ctxb(), file, m, append(opts, WithID(ID{2}))...); !errors.Is(err, ErrManifestMismatch) {
				t.Fatalf("wrong id: %v", err)
			}
			other, _ := fileManifest(t, "other.bin", 100, 7)
			if _, err := OpenOrCreateFileStore(ctxb(), file, other, opts...); !errors.Is(err, ErrManifestMismatch) {
				t.Fatalf("other content: %v", err)
			}
			if _, err := CreateFileStore(ctxb(), file, m, opts...); !errors.Is(err, ErrExists) {
				t.Fatalf("create over a store: %v", err)
			}
			s, err = OpenFileStore(ctxb(), file, opts...)
			if err != nil || s.HeldCount() != 5 {
				t.Fatalf("resume: %v", err)
			}
			checkStore(t, s, data)
			fill(t, s, data, all)
			if err := s.RemoveState(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); !errors.Is(err, ErrClosed) {
				t.Fatalf("Close after RemoveState: %v", err)
			}
			if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("the file after RemoveState: %v", err)
			}
			if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("state folder left: %v", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1+btoi(tc.stateDir(dir) != "") {
				t.Fatalf("left in the folder: %v", entries)
			}
			if _, err := OpenFileStore(ctxb(), file, opts...); !errors.Is(err, ErrNotFound) {
				t.Fatalf("open after RemoveState: %v", err)
			}
			if _, err := OpenOrCreateFileStore(ctxb(), file, m, opts...); !errors.Is(err, ErrExists) {
				t.Fatalf("a finished file was not protected: %v", err)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFileStoreRefuses checks what a single-file store will not do.
func TestFileStoreRefuses(t *testing.T) {
	m, _ := fileManifest(t, "f.bin", 3*MinBlockSize, 8)
	tree, _ := testManifest(t, MinBlockSize, 10, 20)
	dir, outside := t.TempDir(), t.TempDir()
	precious := filepath.Join(dir, "precious")
	os.WriteFile(precious, []byte("mine"), 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(outside, "target"), link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file string
		m    *Manifest
		want error
	}{
		{"tree content", filepath.Join(dir, "t"), tree, ErrNotFile},
		{"existing file", precious, m, ErrExists},
		{"symlink out", link, m, ErrExists},
		{"metadata name", filepath.Join(dir, MetaDir), m, ErrBadPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(t, dir)
			for _, open := range []func() (*Store, error){
				func() (*Store, error) { return CreateFileStore(ctxb(), tc.file, tc.m) },
				func() (*Store, error) { return OpenOrCreateFileStore(ctxb(), tc.file, tc.m) },
			} {
				if s, err := open(); !errors.Is(err, tc.want) {
					if s != nil {
						s.Close()
					}
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
			}
			if got := snapshot(t, dir); got != snap {
				t.Fatalf("a refused create changed the folder:\n%s\nwas\n%s", got, snap)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("files appeared outside: %v", entries)
			}
		})
	}
	if b, _ := os.ReadFile(precious); string(b) != "mine" {
		t.Fatal("an existing file was overwritten")
	}
}

// TestRemoveStateTree checks RemoveState on a tree: the state goes, and so does
// .reconcile once empty; a seed store refuses.
func TestRemoveStateTree(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 100, 3000)
	dir := t.TempDir()
	s, err := CreateStore(ctxb(), dir, m)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, data, all)
	if err := s.RemoveState(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, MetaDir)); err == nil {
		t.Fatalf("%s left behind", MetaDir)
	}
	seed, err := SeedStore(ctxb(), filepath.Join(dir, "tree"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer seed.Close()
	if err := seed.RemoveState(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("RemoveState of a seed store: %v", err)
	}
	if _, err := OpenStore(ctxb(), dir); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("open after RemoveState: %v", err)
	}
}

// TestFinalPathSingleFile: a single file's store names its file on disk for
// the manifest's file path and for every folder above it (the top of a
// folder of one file), and leaves a folder store's paths as they are.
func TestFinalPathSingleFile(t *testing.T) {
	dir := t.TempDir()
	src := writeTree(t, dir, "photos", map[string][]byte{"2026/a.jpg": []byte("a photo")})
	m, err := ChunkPath(context.Background(), src, MinBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "copy.jpg")
	st, err := CreateFileStore(context.Background(), out, m)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, name := range []string{"photos/2026/a.jpg", "photos/2026", "photos"} {
		if got := st.FinalPath(name); got != out {
			t.Errorf("FinalPath(%q) = %q, want %q", name, got, out)
		}
	}
	if got, want := st.FinalPath("other"), filepath.Join(dir, "other"); got != want {
		t.Errorf("FinalPath(other) = %q, want %q", got, want)
	}
	folder, err := CreateStore(context.Background(), filepath.Join(dir, "tree"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer folder.Close()
	if got, want := folder.FinalPath("photos"), filepath.Join(dir, "tree", "photos"); got != want {
		t.Errorf("folder store: FinalPath(photos) = %q, want %q", got, want)
	}
}
