package chunker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker/internal/durable"
)

// smallCDC cuts small blocks, so that a few MiB make many.
var smallCDC = Chunking{Min: 4 << 10, Normal: 8 << 10, Max: 32 << 10}

// insertAt returns data with ins inserted at off.
func insertAt(data []byte, off int, ins []byte) []byte {
	return slices.Concat(data[:off], ins, data[off:])
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStagedFileNotFinalUntilPublished: a staged single-file store writes under
// its state folder; the older file at the final name stays byte for byte until
// Publish replaces it in one rename; the published store reopens complete and
// serves its blocks from the final name.
func TestStagedFileNotFinalUntilPublished(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "big.bin")
	old := randBytes(1, 300<<10)
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	data := randBytes(2, 300<<10)
	m := chunkBytes(t, "big.bin", data, smallCDC)
	s, err := CreateFileStore(ctxb(), out, m, WithStaging())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Staged() {
		t.Fatal("store not staged")
	}
	fill(t, s, data, evens)
	if _, err := s.Publish(PublishOptions{}); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("Publish of an incomplete store: %v, want ErrIncomplete", err)
	}
	if !bytes.Equal(readFile(t, out), old) {
		t.Fatal("the older file changed before the new one was complete")
	}
	fill(t, s, data, all)
	if !bytes.Equal(readFile(t, out), old) {
		t.Fatal("the older file changed before Publish")
	}
	rep, err := s.Publish(PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 1 || rep.Replaced != 1 || s.Staged() {
		t.Fatalf("report %+v, staged %v: want one file moved over one", rep, s.Staged())
	}
	if !bytes.Equal(readFile(t, out), data) {
		t.Fatal("published file differs from the content")
	}
	if _, err := os.Stat(filepath.Join(out+MetaDir, stageDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("staging folder still there: %v", err)
	}
	got, err := s.ReadBlock(m.BlockCount()-1, nil)
	if err != nil || !bytes.Equal(got, block(m, data, m.BlockCount()-1)) {
		t.Fatalf("read after publish: %v", err)
	}
	s.Close()
	s, err = OpenFileStore(ctxb(), out, WithVerify())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Complete() || s.Staged() {
		t.Fatalf("reopened: complete %v, staged %v", s.Complete(), s.Staged())
	}
}

// TestPublishResumesAfterCrash: a publish cut short after its first move (the
// marker written, one file moved) is finished by the next opening.
func TestPublishResumesAfterCrash(t *testing.T) {
	dir := t.TempDir()
	src := writeTree(t, t.TempDir(), "top", map[string][]byte{
		"a": randBytes(3, 50<<10), "b/c": randBytes(4, 70<<10), "d": randBytes(5, 10<<10)})
	m, err := ChunkPath(ctxb(), src, 0, WithChunking(smallCDC))
	if err != nil {
		t.Fatal(err)
	}
	s, err := CreateStore(ctxb(), dir, m, WithStaging())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reuse(ctxb(), []string{src}, nil); err != nil {
		t.Fatal(err)
	}
	if !s.Complete() {
		t.Fatalf("reuse of the source itself left %d blocks missing", len(s.Missing()))
	}
	// The crash: the marker is written, the first file moved, nothing more.
	if err := durable.WriteFile(s.meta, publishingFile, []byte("move\n")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "top"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, filepath.FromSlash(s.stage), "top", "a"), filepath.Join(dir, "top", "a")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenStore(ctxb(), dir, WithID(m.ID()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Staged() || !s.Complete() {
		t.Fatalf("reopened: staged %v, complete %v", s.Staged(), s.Complete())
	}
	for _, name := range []string{"a", "b/c", "d"} {
		if !bytes.Equal(readFile(t, filepath.Join(dir, "top", name)), readFile(t, filepath.Join(src, name))) {
			t.Fatalf("%s differs after the resumed publish", name)
		}
	}
	rep, err := s.Verify(ctxb())
	if err != nil || rep.Held != m.BlockCount() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// TestUpdateFolderReuseAndDelete: v2 of a folder is built from v1 in place: the
// blocks v1 shares with v2 come from v1's files (renamed files included), v1
// stays intact until Publish, which replaces it; Delete removes what v2 lacks,
// and v1's state goes.
func TestUpdateFolderReuseAndDelete(t *testing.T) {
	v1files := map[string][]byte{
		"keep":      randBytes(10, 200<<10),
		"old-name":  randBytes(11, 150<<10),
		"edited":    randBytes(12, 300<<10),
		"gone":      randBytes(13, 40<<10),
		"sub/gone2": randBytes(14, 20<<10),
	}
	v2files := map[string][]byte{
		"keep":     v1files["keep"],
		"new-name": v1files["old-name"],
		"edited":   insertAt(v1files["edited"], 100<<10, randBytes(15, 1<<10)),
		"added":    randBytes(16, 30<<10),
	}
	out := t.TempDir()
	src1 := writeTree(t, t.TempDir(), "top", v1files)
	src2 := writeTree(t, t.TempDir(), "top", v2files)
	m1, err := ChunkPath(ctxb(), src1, 0, WithChunking(smallCDC))
	if err != nil {
		t.Fatal(err)
	}
	m2, err := ChunkPath(ctxb(), src2, 0, WithChunking(smallCDC))
	if err != nil {
		t.Fatal(err)
	}
	// v1, fetched and published into out.
	s1, err := CreateStore(ctxb(), out, m1, WithStaging())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Reuse(ctxb(), []string{src1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Publish(PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	s1.Close()

	s2, err := CreateStore(ctxb(), out, m2, WithStaging())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var calls int
	st, err := s2.Reuse(ctxb(), []string{filepath.Join(out, "top")}, func(done, total int64) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	missing := s2.Missing()
	var missBytes int64
	for _, i := range missing {
		missBytes += int64(m2.BlockLen(i))
	}
	t.Logf("reused %d blocks (%d bytes) of %d from %d files; %d missing (%d bytes)", st.Blocks, st.Bytes, m2.BlockCount(), st.Files, len(missing), missBytes)
	if calls == 0 || st.Files != len(v1files) {
		t.Fatalf("progress calls %d, files %d", calls, st.Files)
	}
	// What v2 needs beyond v1: "added" and the blocks around the insertion.
	if limit := int64(30<<10 + 3*smallCDC.Max); missBytes > limit {
		t.Fatalf("%d bytes still missing after reuse, want at most %d", missBytes, limit)
	}
	for name, b := range v1files {
		if !bytes.Equal(readFile(t, filepath.Join(out, "top", filepath.FromSlash(name))), b) {
			t.Fatalf("v1's %s changed before v2 was complete", name)
		}
	}
	fill(t, s2, concatTree(v2files, m2), all)
	rep, err := s2.Publish(PublishOptions{Delete: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"top/gone", "top/old-name", "top/sub"}; !slices.Equal(rep.Deleted, want) {
		t.Fatalf("deleted %q, want %q", rep.Deleted, want)
	}
	if !slices.Equal(rep.Stale, []ID{m1.ID()}) {
		t.Fatalf("stale states removed %v, want v1's", rep.Stale)
	}
	for name, b := range v2files {
		if !bytes.Equal(readFile(t, filepath.Join(out, "top", filepath.FromSlash(name))), b) {
			t.Fatalf("v2's %s differs", name)
		}
	}
	ids, err := ListStores(out)
	if err != nil || !slices.Equal(ids, []ID{m2.ID()}) {
		t.Fatalf("stores left: %v, %v", ids, err)
	}
}

// concatTree returns the files of m's stream, in m's order, from files.
func concatTree(files map[string][]byte, m *Manifest) []byte {
	var b []byte
	for _, f := range m.Files() {
		_, rel, _ := cutTop(f.Path)
		b = append(b, files[rel]...)
	}
	return b
}

func cutTop(p string) (string, string, bool) {
	for i := range p {
		if p[i] == '/' {
			return p[:i], p[i+1:], true
		}
	}
	return p, "", false
}

// TestReuseInsertLocality: after 1 KiB is inserted in the middle of a file, the
// content-defined blocks of the new version are all found in the old one but
// those around the insertion, by either rule (Reuse cuts the old file by the
// manifest's); with fixed-size blocks, about half are lost.
func TestReuseInsertLocality(t *testing.T) {
	old := randBytes(20, 4<<20)
	data := insertAt(old, 2<<20, randBytes(21, 1<<10))
	oldFile := filepath.Join(t.TempDir(), "old.bin")
	if err := os.WriteFile(oldFile, old, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		m       *Manifest
		maxMiss int
		minMiss int
	}{
		{"content-defined", chunkBytes(t, "f", data, smallCDC), 3, 1},
		{"content-defined without normalization", chunkBytes(t, "f", data, Chunking{Algorithm: CDCAlgorithmNC0, Min: 4 << 10, Normal: 8 << 10, Max: 32 << 10}), 3, 1},
		{"fixed", mustChunkFixed(t, data, 16<<10), 1 << 30, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := CreateFileStore(ctxb(), filepath.Join(t.TempDir(), "new.bin"), tc.m, WithStaging())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st, err := s.Reuse(ctxb(), []string{oldFile, filepath.Join(t.TempDir(), "absent")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			miss := len(s.Missing())
			t.Logf("%d of %d blocks reused, %d missing", st.Blocks, tc.m.BlockCount(), miss)
			if miss > tc.maxMiss || miss < tc.minMiss || st.Scanned != int64(len(old)) {
				t.Fatalf("%d blocks missing (want %d to %d), %d bytes scanned", miss, tc.minMiss, tc.maxMiss, st.Scanned)
			}
		})
	}
}

func mustChunkFixed(t *testing.T, data []byte, bs int) *Manifest {
	t.Helper()
	m, err := ChunkReader(ctxb(), "f", 0o644, bytes.NewReader(data), bs)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLockOutput: a second lock of the same output fails at once and names the
// first holder; once released, the output can be locked again.
func TestLockOutput(t *testing.T) {
	dir := t.TempDir()
	for _, file := range []bool{false, true} {
		out := filepath.Join(dir, "out")
		l, err := LockOutput(out, file, "fetch one, pid 1")
		if err != nil {
			t.Fatal(err)
		}
		_, err = LockOutput(out, file, "fetch two, pid 2")
		if !errors.Is(err, ErrLocked) || !bytes.Contains([]byte(err.Error()), []byte("fetch one, pid 1")) {
			t.Fatalf("second lock: %v, want ErrLocked naming the first", err)
		}
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
		l, err = LockOutput(out, file, "fetch three")
		if err != nil {
			t.Fatalf("lock after unlock: %v", err)
		}
		l.Unlock()
	}
}
