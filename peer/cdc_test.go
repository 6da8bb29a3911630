package peer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/byers"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestContentDefinedFetch: a folder seeded with content-defined blocks
// (files of several sizes, one empty, an empty folder and a relative
// symbolic link inside the tree) is fetched whole: every file
// byte-identical, the folder and the link made, blocks of varying
// lengths none of which spans two files.
func TestContentDefinedFetch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(filepath.Join(tree, "sub", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeRandomFile(t, tree, "big.bin", 3<<20+12345, 1)
	writeRandomFile(t, filepath.Join(tree, "sub"), "small.bin", 70<<10, 2)
	if err := os.WriteFile(filepath.Join(tree, "none.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/small.bin", filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}
	seed := newTestPeer(t)
	tk, err := seed.Seed(ctx, tree, WithContentDefined(chunker.Chunking{}))
	if err != nil {
		t.Fatal(err)
	}
	m := seed.lib.Lookup(tk.Root[:]).Man
	if !m.ContentDefined() || m.BlockCount() < 4 {
		t.Fatalf("manifest: content-defined %v, %d blocks", m.ContentDefined(), m.BlockCount())
	}
	out := filepath.Join(dir, "out")
	sum, err := newTestPeer(t).Fetch(ctx, tk, out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Fetched != m.BlockCount() {
		t.Errorf("fetched %d of %d blocks", sum.Fetched, m.BlockCount())
	}
	for _, f := range []string{"big.bin", "sub/small.bin", "none.txt"} {
		sameFile(t, filepath.Join(tree, f), filepath.Join(out, "tree", f))
	}
	if fi, err := os.Stat(filepath.Join(out, "tree", "sub", "empty")); err != nil || !fi.IsDir() {
		t.Errorf("the empty folder: %v", err)
	}
	if target, err := os.Readlink(filepath.Join(out, "tree", "link")); err != nil || target != "sub/small.bin" {
		t.Errorf("the link: %q, %v", target, err)
	}
}

// TestContentDefinedNoByers: the Byers baseline codes fixed-size blocks
// only: seeding content-defined blocks with it, and a Byers fetch of such
// content, are refused with byers.ErrContentDefined.
func TestContentDefinedNoByers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	src := writeRandomFile(t, dir, "data.bin", 1<<20, 3)
	seed := newTestPeer(t)
	if _, err := seed.Seed(ctx, src, WithContentDefined(chunker.Chunking{}), WithByers(ByersParams{})); !errors.Is(err, byers.ErrContentDefined) {
		t.Fatalf("seed with WithByers: %v, want ErrContentDefined", err)
	}
	if _, err := seed.Seed(ctx, src, WithContentDefined(chunker.Chunking{}), WithBlockSize(64<<10)); err == nil {
		t.Fatal("WithBlockSize beside WithContentDefined: no error")
	}
	tk, err := seed.Seed(ctx, src, WithContentDefined(chunker.Chunking{}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = newTestPeer(t).Fetch(ctx, tk, filepath.Join(dir, "out"), WithMethod(reconcile.Byers))
	if !errors.Is(err, byers.ErrContentDefined) {
		t.Fatalf("Byers fetch: %v, want ErrContentDefined", err)
	}
}
