package chunker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// linkTree writes a folder "photos" with files, symbolic links inside and
// outside it and empty folders, and returns its path.
func linkTree(t *testing.T) string {
	t.Helper()
	root := writeTree(t, t.TempDir(), "photos", map[string][]byte{
		"a/x.bin":     randBytes(41, 40<<10),
		"b.txt":       randBytes(42, 3000),
		"c.empty":     nil,
		"d/e/f/.keep": nil,
	})
	for _, d := range []string{"empty", "d/e/g", "onlyabs", "deep/er/est"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"link":        "b.txt",       // inside
		"a/up":        "../b.txt",    // inside, through ..
		"a/dir":       "../d/e",      // a folder
		"a/self":      ".",           // its own folder
		"dangling":    "not/there",   // inside, pointing at nothing
		"dot":         "./b.txt",     // recorded as "b.txt"
		"out":         "../../etc",   // leaves the tree
		"onlyabs/abs": "/etc/passwd", // absolute
		"a/zigzag":    "x.bin/../../b.txt",
	} {
		if err := os.Symlink(filepath.FromSlash(target), filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Skipf("cannot make symbolic links here: %v", err)
		}
	}
	return root
}

func TestChunkTreeLinksAndDirs(t *testing.T) {
	root := linkTree(t)
	var skipped []string
	opts := []ChunkOption{WithChunking(smallChunking), WithSkipped(func(p, why string) {
		rel, _ := filepath.Rel(root, p)
		skipped = append(skipped, filepath.ToSlash(rel)+": "+why)
	})}
	m, err := ChunkPath(context.Background(), root, 0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	wantLinks := "[{photos/a/dir ../d/e} {photos/a/self .} {photos/a/up ../b.txt} {photos/dangling not/there} {photos/dot b.txt} {photos/link b.txt}]"
	if got := fmt.Sprint(m.Symlinks()); got != wantLinks {
		t.Errorf("links\n%s\nwant\n%s", got, wantLinks)
	}
	wantDirs := "[photos/d/e/g photos/deep/er/est photos/empty photos/onlyabs]"
	if got := fmt.Sprint(m.Dirs()); got != wantDirs {
		t.Errorf("empty folders %s, want %s", got, wantDirs)
	}
	slices.Sort(skipped)
	wantSkipped := []string{
		"a/zigzag: symbolic link to x.bin/../../b.txt: its target climbs out of a folder it entered",
		"onlyabs/abs: symbolic link to /etc/passwd: its target is absolute",
		"out: symbolic link to ../../etc: its target leaves the tree",
	}
	if !slices.Equal(skipped, wantSkipped) {
		t.Errorf("skipped\n%s\nwant\n%s", strings.Join(skipped, "\n"), strings.Join(wantSkipped, "\n"))
	}
	if m.Version() != Version2 || m.FileCount() != 4 {
		t.Fatalf("version %d, %d files", m.Version(), m.FileCount())
	}
	enc, _ := m.MarshalBinary()
	if got, err := DecodeManifest(enc, 0); err != nil || fmt.Sprint(got.Tree()) != fmt.Sprint(m.Tree()) {
		t.Fatalf("round trip: %v", err)
	}

	// Fixed-size blocks take the files only, as before format 2, unless asked.
	skipped = nil
	mf, err := ChunkPath(context.Background(), root, MinBlockSize, WithSkipped(func(p, why string) { skipped = append(skipped, p) }))
	if err != nil || mf.Version() != Version || len(mf.Symlinks())+len(mf.Dirs()) != 0 || len(skipped) != 9 {
		t.Fatalf("fixed: %v, version %d, links %v, dirs %v, %d skipped", err, mf.Version(), mf.Symlinks(), mf.Dirs(), len(skipped))
	}
	ml, err := ChunkPath(context.Background(), root, MinBlockSize, WithLinksAndDirs())
	if err != nil || ml.Version() != Version2 || ml.ContentDefined() || fmt.Sprint(ml.Symlinks()) != wantLinks || fmt.Sprint(ml.Dirs()) != wantDirs {
		t.Fatalf("fixed with links: %v, version %d", err, ml.Version())
	}
	if ml.BlockCount() != mf.BlockCount() || ml.BlockHash(3) != mf.BlockHash(3) {
		t.Fatal("fixed blocks differ with links and folders recorded")
	}
	enc, _ = ml.MarshalBinary()
	if got, err := DecodeManifest(enc, 0); err != nil || got.ID() != ml.ID() {
		t.Fatalf("fixed v2 round trip: %v", err)
	}

	// An empty folder alone is content too.
	empty := filepath.Join(t.TempDir(), "nothing")
	os.Mkdir(empty, 0o755)
	me, err := ChunkPath(context.Background(), empty, 0, WithContentDefined())
	if err != nil || fmt.Sprint(me.Dirs()) != "[nothing]" || me.BlockCount() != 0 {
		t.Fatalf("empty folder: %v, %v", err, me.Dirs())
	}
}

// storeTree checks that the tree at out/photos has root's files, links and
// empty folders.
func checkTreeOut(t *testing.T, m *Manifest, out, root string) {
	t.Helper()
	top := filepath.Dir(root)
	for _, f := range m.Files() {
		got, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(f.Path)))
		want, _ := os.ReadFile(filepath.Join(top, filepath.FromSlash(f.Path)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("file %s: %v, same %v", f.Path, err, bytes.Equal(got, want))
		}
	}
	for _, l := range m.Symlinks() {
		got, err := os.Readlink(filepath.Join(out, filepath.FromSlash(l.Path)))
		if err != nil || filepath.ToSlash(got) != l.Target {
			t.Fatalf("link %s: %q, %v; want %q", l.Path, got, err, l.Target)
		}
	}
	for _, d := range m.Dirs() {
		info, err := os.Lstat(filepath.Join(out, filepath.FromSlash(d)))
		if err != nil || !info.IsDir() {
			t.Fatalf("empty folder %s: %v", d, err)
		}
	}
}

// TestStoreTreeLinksAndDirs fetches a content-defined tree with symbolic links
// and empty folders from a seed store into a new one.
func TestStoreTreeLinksAndDirs(t *testing.T) {
	ctx := context.Background()
	root := linkTree(t)
	m, err := ChunkPath(ctx, root, 0, WithChunking(smallChunking))
	if err != nil {
		t.Fatal(err)
	}
	seed, err := SeedStore(ctx, root, m, WithVerify())
	if err != nil {
		t.Fatal(err)
	}
	defer seed.Close()
	out := t.TempDir()
	st, err := CreateStore(ctx, out, m, WithSyncBytes(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	// The empty folders are made with the store, the links once it is complete.
	if info, err := os.Stat(filepath.Join(out, "photos", "deep", "er", "est")); err != nil || !info.IsDir() {
		t.Fatalf("empty folder on creation: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(out, "photos", "link")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("link before completion: %v", err)
	}
	order := rand.New(rand.NewPCG(1, 1)).Perm(m.BlockCount())
	var buf []byte
	for _, i := range order {
		if buf, err = seed.ReadBlock(i, buf); err != nil {
			t.Fatal(err)
		}
		if err := st.PutBlock(i, buf); err != nil {
			t.Fatal(err)
		}
	}
	if !st.Complete() {
		t.Fatal("not complete")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	checkTreeOut(t, m, out, root)

	// A link found missing is made again on reopening; a file in its place is
	// left alone and reported.
	os.Remove(filepath.Join(out, "photos", "dot"))
	os.RemoveAll(filepath.Join(out, "photos", "empty"))
	st, err = OpenStore(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	checkTreeOut(t, m, out, root)
	os.Remove(filepath.Join(out, "photos", "link"))
	os.WriteFile(filepath.Join(out, "photos", "link"), []byte("mine"), 0o644)
	if _, err := OpenStore(ctx, out); !errors.Is(err, ErrExists) {
		t.Fatalf("a file where a link goes: err = %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "photos", "link")); string(b) != "mine" {
		t.Fatal("the file in the link's place was touched")
	}

	// A single-file store cannot hold a tree.
	if _, err := CreateFileStore(ctx, filepath.Join(t.TempDir(), "f"), m); !errors.Is(err, ErrNotFile) {
		t.Fatalf("CreateFileStore: err = %v, want ErrNotFile", err)
	}
	// A store refuses to be made over a link's path.
	out2 := t.TempDir()
	os.MkdirAll(filepath.Join(out2, "photos"), 0o755)
	os.Symlink("elsewhere", filepath.Join(out2, "photos", "a"))
	if _, err := CreateStore(ctx, out2, m); err == nil {
		t.Fatal("CreateStore over a planted link succeeded")
	}
	// A seed whose link changed is not the manifest's content.
	os.Remove(filepath.Join(root, "link"))
	os.Symlink("a/x.bin", filepath.Join(root, "link"))
	if _, err := SeedStore(ctx, root, m); !errors.Is(err, ErrManifestMismatch) {
		t.Fatalf("seed with a changed link: err = %v, want ErrManifestMismatch", err)
	}
}

// TestStoreContentDefined runs the store's paths over content-defined blocks:
// creation, puts in random order with grouped syncs, reopening, Verify and its
// corruption report, WithVerify, and a seed store noticing a changed file.
func TestStoreContentDefined(t *testing.T) {
	ctx := context.Background()
	root := writeTree(t, t.TempDir(), "set", map[string][]byte{
		"a.bin": randBytes(51, 90<<10),
		"b.bin": randBytes(52, 1),
		"c.bin": nil,
		"d.bin": bytes.Repeat([]byte{0}, 3*smallChunking.Max+5),
		"e.bin": randBytes(53, 33<<10),
	})
	m, err := ChunkPath(ctx, root, 0, WithChunking(smallChunking))
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, f := range m.Files() {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(root), filepath.FromSlash(f.Path)))
		data = append(data, b...)
	}
	checkCDC(t, m, data, smallChunking)
	out := t.TempDir()
	st, err := CreateStore(ctx, out, m, WithSyncEvery(3))
	if err != nil {
		t.Fatal(err)
	}
	order := rand.New(rand.NewPCG(2, 2)).Perm(m.BlockCount())
	half := order[:len(order)/2]
	for _, i := range half {
		if err := st.PutBlock(i, block(m, data, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutBlock(half[0], block(m, data, half[0]+1)); !errors.Is(err, ErrBadBlock) {
		t.Fatalf("wrong bytes: err = %v", err)
	}
	checkStore(t, st, data)
	st.Close()
	st, err = OpenStore(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if st.HeldCount() != len(half) {
		t.Fatalf("reopened with %d held, want %d", st.HeldCount(), len(half))
	}
	for _, i := range order[len(half):] {
		if err := st.PutBlock(i, block(m, data, i)); err != nil {
			t.Fatal(err)
		}
	}
	checkStore(t, st, data)
	st.Close()
	checkTreeOut(t, m, out, root)

	// Corrupt one block of e.bin on disk: Verify finds exactly it.
	first, end := m.FileBlocks(4)
	victim := first + (end-first)/2
	off, _ := m.BlockSpan(victim)
	name := filepath.Join(out, "set", "e.bin")
	os.Chmod(name, 0o644)
	f, _ := os.OpenFile(name, os.O_RDWR, 0)
	f.WriteAt([]byte{0xff ^ data[off]}, off-m.starts[4])
	f.Close()
	st, err = OpenStore(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := st.Verify(ctx)
	if err != nil || fmt.Sprint(rep.Corrupt) != fmt.Sprint([]int{victim}) {
		t.Fatalf("Verify: %+v, %v; want block %d corrupt", rep, err, victim)
	}
	st.Close()
	st, err = OpenStore(ctx, out, WithVerify())
	if err != nil || st.HeldCount() != m.BlockCount()-1 || st.Has(victim) {
		t.Fatalf("WithVerify: %v, %d held", err, st.HeldCount())
	}
	st.Close()

	// A seed store drops exactly the blocks of a file that changed.
	seed, err := SeedStore(ctx, root, m)
	if err != nil {
		t.Fatal(err)
	}
	defer seed.Close()
	first, end = m.FileBlocks(0)
	off, _ = m.BlockSpan(first + 1)
	changeFile(t, filepath.Join(root, "a.bin"), off, []byte{^data[off]}, time.Now().Add(time.Hour))
	ch, err := seed.CheckSources(ctx)
	if err != nil || fmt.Sprint(ch.Dropped) != fmt.Sprint([]int{first + 1}) {
		t.Fatalf("CheckSources: %+v, %v; want block %d dropped (file blocks [%d, %d))", ch, err, first+1, first, end)
	}
}

// TestFileStoreContentDefined downloads single-file content-defined content
// into a file of one's choosing, resuming once, then leaves just the file.
func TestFileStoreContentDefined(t *testing.T) {
	ctx := context.Background()
	data := randBytes(71, 200<<10)
	m := chunkBytes(t, "movie.mkv", data, smallChunking)
	out := filepath.Join(t.TempDir(), "film.mkv")
	st, err := CreateFileStore(ctx, out, m)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, st, data, evens)
	st.Close()
	if st, err = OpenOrCreateFileStore(ctx, out, m); err != nil {
		t.Fatal(err)
	}
	fill(t, st, data, func(i int) bool { return i%2 == 1 })
	checkStore(t, st, data)
	if err := st.RemoveState(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("output file: %v", err)
	}
}
