package peer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// TestFetchLockedOutput: a fetch into an output another fetch is writing
// fails at once, names the other and touches nothing.
func TestFetchLockedOutput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, tk, _ := seedFile(t, dir, 256<<10, 16<<10)
	out := filepath.Join(dir, "copy.bin")
	lock, err := chunker.LockOutput(out, true, "the other fetch (pid 7)")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	_, err = newTestPeer(t).Fetch(ctx, tk, out, WithOutFile())
	if !errors.Is(err, chunker.ErrLocked) || !strings.Contains(err.Error(), "the other fetch (pid 7)") {
		t.Fatalf("fetch into a locked output: %v, want ErrLocked naming the holder", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the locked output was written: %v", err)
	}
}

// TestFetchOutputUnderFile: an output whose folder would be inside a file
// fails with the file system's reason, not the hint of a held lock.
func TestFetchOutputUnderFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, tk, _ := seedFile(t, dir, 32<<10, 16<<10)
	file := writeRandomFile(t, dir, "afile", 10, 5)
	_, err := newTestPeer(t).Fetch(ctx, tk, filepath.Join(file, "sub"), WithOutFile())
	if err == nil || errors.Is(err, chunker.ErrLocked) || strings.Contains(err.Error(), "wait for") || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("fetch into a path under a file: %v, want its not-a-directory error alone", err)
	}
}

// TestUnfinishedNotAtFinalName: an interrupted download leaves nothing at
// its final name, and the same fetch resumes and puts the file there, whole.
func TestUnfinishedNotAtFinalName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, tk, src := seedFile(t, dir, 1<<20, 16<<10, WithServeRate(512<<10))
	out := filepath.Join(dir, "copy.bin")
	cut, stop := context.WithCancel(ctx)
	_, err := newTestPeer(t).Fetch(cut, tk, out, WithOutFile(), WithProgress(func(p Progress) {
		if p.Blocks >= 8 {
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("an unfinished download is at its final name (%v)", err)
			}
			stop()
		}
	}))
	if err == nil {
		t.Fatal("the interrupted fetch returned no error")
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the interruption the output is at its final name (%v)", err)
	}
	sum, err := newTestPeer(t).Fetch(ctx, tk, out, WithOutFile())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Resumed < 8 || sum.Resumed+sum.Fetched != sum.Blocks {
		t.Errorf("resumed %d, fetched %d of %d", sum.Resumed, sum.Fetched, sum.Blocks)
	}
	sameFile(t, src, out)
}

// TestUpdateFolder: a folder fetched as v1 is updated to v2 in place: the
// blocks of kept, renamed and edited files come from the old copy, only
// new bytes are fetched, and with WithDelete the files v2 dropped go.
func TestUpdateFolder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1", "data"), filepath.Join(dir, "v2", "data")
	for _, d := range []string{v1, v2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"a.bin", "b.bin", "c.bin", "d.bin"} {
		writeRandomFile(t, v1, name, 600<<10, uint64(i+1))
	}
	copyFile(t, filepath.Join(v1, "a.bin"), filepath.Join(v2, "a.bin"))       // kept
	copyFile(t, filepath.Join(v1, "b.bin"), filepath.Join(v2, "renamed.bin")) // renamed
	edited, err := os.ReadFile(filepath.Join(v1, "c.bin"))
	if err != nil {
		t.Fatal(err)
	}
	edited = append(edited[:300<<10:300<<10], append([]byte("an insertion"), edited[300<<10:]...)...)
	if err := os.WriteFile(filepath.Join(v2, "c.bin"), edited, 0o644); err != nil {
		t.Fatal(err)
	}
	writeRandomFile(t, v2, "new.bin", 100<<10, 9) // added; d.bin deleted
	seed := newTestPeer(t)
	var tks [2]Ticket
	for i, src := range []string{v1, v2} {
		if tks[i], err = seed.Seed(ctx, src, WithContentDefined(chunker.Chunking{})); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	if _, err := newTestPeer(t).Fetch(ctx, tks[0], out); err != nil {
		t.Fatal(err)
	}
	sum, err := newTestPeer(t).Fetch(ctx, tks[1], out, WithDelete())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("v2: %d blocks, %d reused (%d bytes), %d rebuilt from deltas, %d fetched, %d bytes received on the wire", sum.Blocks, sum.ReusedBlocks, sum.ReusedBytes, sum.DeltaBlocks, sum.Fetched, sum.WireBytesReceived)
	// New bytes: new.bin, and the block around the insertion as a delta
	// (a few KiB); the manifest and filters are a few KiB more.
	if sum.ReusedBlocks+sum.DeltaBlocks+sum.Fetched != sum.Blocks || sum.DeltaBlocks == 0 || sum.WireBytesReceived > 100<<10+64<<10 {
		t.Errorf("reused %d + rebuilt %d + fetched %d of %d blocks, %d bytes on the wire", sum.ReusedBlocks, sum.DeltaBlocks, sum.Fetched, sum.Blocks, sum.WireBytesReceived)
	}
	for _, name := range []string{"a.bin", "renamed.bin", "c.bin", "new.bin"} {
		sameFile(t, filepath.Join(v2, name), filepath.Join(out, "data", name))
	}
	for _, name := range []string{"b.bin", "d.bin"} {
		if _, err := os.Stat(filepath.Join(out, "data", name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, which v2 dropped, is still there with WithDelete (%v)", name, err)
		}
	}
	ids, err := chunker.ListStores(out)
	if err != nil || len(ids) != 1 || ids[0] != tks[1].Root {
		t.Errorf("stores left in out: %v, %v (want v2's alone)", ids, err)
	}
}

// copyFile copies a to b.
func copyFile(t *testing.T, a, b string) {
	t.Helper()
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, bytes.Clone(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOfferOlderVersion: a peer that holds only v1 of a file serves the
// blocks v1 shares with v2 to a fetcher of v2 that offers it v2's manifest
// (ProtoOffer): the fetcher, starting from nothing, takes most blocks from
// it while the seed of v2, capped, sends little more than the new ones.
func TestOfferOlderVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	v1 := writeRandomFile(t, dir, "v1.bin", 2<<20, 11)
	data, err := os.ReadFile(v1)
	if err != nil {
		t.Fatal(err)
	}
	copy(data[1<<20:], bytes.Repeat([]byte{1}, 64<<10)) // v2: 64 KiB overwritten
	v2 := filepath.Join(dir, "v2.bin")
	if err := os.WriteFile(v2, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cdc := WithContentDefined(chunker.Chunking{Min: 16 << 10, Normal: 32 << 10, Max: 128 << 10})
	old := newTestPeer(t)
	if _, err := old.Seed(ctx, v1, cdc); err != nil {
		t.Fatal(err)
	}
	seed := newTestPeer(t, WithServeRate(256<<10))
	tk, err := seed.Seed(ctx, v2, cdc)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	sum, err := newTestPeer(t).Fetch(ctx, tk, out, WithPeers(old.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, v2, filepath.Join(out, "v2.bin"))
	var fromOld, fromSeed int64
	for _, ps := range sum.Peers {
		switch ps.Peer {
		case old.ID().String():
			fromOld = ps.Bytes
		case seed.ID().String():
			fromSeed = ps.Bytes
		}
	}
	t.Logf("from the v1 peer %d bytes, from the v2 seed %d bytes", fromOld, fromSeed)
	if fromOld < 1<<20 || fromSeed > 1<<20 {
		t.Errorf("the v1 peer sent %d bytes, the seed %d: want most from the v1 peer", fromOld, fromSeed)
	}
}

// TestFetchAfterOutputRemoved: a finished download whose file was removed
// (or a folder's, one of its files) does not block the next fetch into the
// same place: the file of another content is fetched, staged, and a folder
// missing a file is fetched again, taking from the files left what they hold.
func TestFetchAfterOutputRemoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	for _, d := range []string{"s1", "s2"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, tk1, _ := seedFile(t, filepath.Join(dir, "s1"), 300<<10, 16<<10)
	_, tk2, src2 := seedFile(t, filepath.Join(dir, "s2"), 400<<10, 16<<10)
	out := filepath.Join(dir, "copy.bin")
	if _, err := newTestPeer(t).Fetch(ctx, tk1, out, WithOutFile()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	if _, err := newTestPeer(t).Fetch(ctx, tk2, out, WithOutFile()); err != nil {
		t.Fatalf("fetch of another content where a removed download was: %v", err)
	}
	sameFile(t, src2, out)

	// A folder: one of its two files removed, the same fetch again.
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRandomFile(t, tree, "a.bin", 200<<10, 5)
	writeRandomFile(t, tree, "b.bin", 200<<10, 6)
	seed := newTestPeer(t)
	tk, err := seed.Seed(ctx, tree, WithContentDefined(chunker.Chunking{Min: 16 << 10, Normal: 32 << 10, Max: 128 << 10}))
	if err != nil {
		t.Fatal(err)
	}
	outDir := filepath.Join(dir, "outdir")
	if _, err := newTestPeer(t).Fetch(ctx, tk, outDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(outDir, "tree", "b.bin")); err != nil {
		t.Fatal(err)
	}
	sum, err := newTestPeer(t).Fetch(ctx, tk, outDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.bin", "b.bin"} {
		sameFile(t, filepath.Join(tree, name), filepath.Join(outDir, "tree", name))
	}
	if sum.ReusedBytes < 200<<10 || sum.Fetched == 0 {
		t.Errorf("after a file was removed: reused %d bytes, fetched %d blocks", sum.ReusedBytes, sum.Fetched)
	}
}

// TestUpdateRenamedTop: an output folder that holds v1 under the name
// data-1.0 gives a fetch of v2, named data-1.1, every block they share,
// and a content fetched there that shares none is not read.
func TestUpdateRenamedTop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	v1, v2, other := filepath.Join(dir, "v1", "data-1.0"), filepath.Join(dir, "v2", "data-1.1"), filepath.Join(dir, "other", "other")
	for _, d := range []string{v1, v2, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"a.bin", "b.bin", "c.bin"} {
		writeRandomFile(t, v1, name, 400<<10, uint64(i+1))
		copyFile(t, filepath.Join(v1, name), filepath.Join(v2, name))
	}
	writeRandomFile(t, v2, "new.bin", 100<<10, 9)
	writeRandomFile(t, other, "x.bin", 1<<20, 10)
	seed := newTestPeer(t)
	var tks [3]Ticket
	for i, src := range []string{v1, other, v2} {
		var err error
		if tks[i], err = seed.Seed(ctx, src, WithContentDefined(chunker.Chunking{})); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	for _, tk := range tks[:2] {
		if _, err := newTestPeer(t).Fetch(ctx, tk, out); err != nil {
			t.Fatal(err)
		}
	}
	var read int64
	sum, err := newTestPeer(t).Fetch(ctx, tks[2], out, WithReuseProgress(func(_, total int64) { read = total }))
	if err != nil {
		t.Fatal(err)
	}
	if sum.ReusedBytes != 3*400<<10 || sum.Fetched == 0 {
		t.Errorf("reused %d bytes (want the 3 files v1 shares, %d), fetched %d blocks", sum.ReusedBytes, 3*400<<10, sum.Fetched)
	}
	if read != 3*400<<10 {
		t.Errorf("read %d bytes of local files, want v1's %d (not the unrelated content's)", read, 3*400<<10)
	}
	for _, name := range []string{"a.bin", "b.bin", "c.bin", "new.bin"} {
		sameFile(t, filepath.Join(v2, name), filepath.Join(out, "data-1.1", name))
	}
	sameFile(t, filepath.Join(v1, "a.bin"), filepath.Join(out, "data-1.0", "a.bin")) // v1 stays
}

// TestFetchFolderAtFileName: with WithOutFile, a folder of one file is
// that file at out (this panicked when the folder and file names
// differed); a folder of more fetched into a name that does not exist yet
// lands in that folder, under the folder's lock, and leaves no single
// file's state (NAME.reconcile) beside it; a fetch that fails before it
// stores anything leaves neither.
func TestFetchFolderAtFileName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src", "photos")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRandomFile(t, src, "a.jpg", 300<<10, 1)
	seed := newTestPeer(t)
	// A folder of one file is that file at out (as curl -o), however its
	// top folder is named.
	one, err := seed.Seed(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTestPeer(t).Fetch(ctx, one, filepath.Join(dir, "one.jpg"), WithOutFile()); err != nil {
		t.Fatal(err)
	}
	sameFile(t, filepath.Join(src, "a.jpg"), filepath.Join(dir, "one.jpg"))
	writeRandomFile(t, src, "b.jpg", 100<<10, 2)
	tk, err := seed.Seed(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "new")
	if _, err := newTestPeer(t).Fetch(ctx, tk, out, WithOutFile()); err != nil {
		t.Fatal(err)
	}
	sameFile(t, filepath.Join(src, "b.jpg"), filepath.Join(out, "photos", "b.jpg"))
	if _, err := os.Stat(out + chunker.MetaDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s%s left beside the folder (%v)", out, chunker.MetaDir, err)
	}
	seed.Close()
	short, cancel2 := context.WithTimeout(ctx, time.Second)
	defer cancel2()
	failed := filepath.Join(dir, "failed")
	if _, err := newTestPeer(t).Fetch(short, tk, failed, WithOutFile()); err == nil {
		t.Fatal("a fetch from a closed seed succeeded")
	}
	if _, err := os.Stat(failed + chunker.MetaDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed fetch left %s%s (%v)", failed, chunker.MetaDir, err)
	}
}
