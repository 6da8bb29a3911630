package chunker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// Chunk a file, then copy its blocks from a seed store into a new store, as a peer
// fetching from another would.
func Example() {
	tmp, err := os.MkdirTemp("", "chunker-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "hello.txt")
	if err := os.WriteFile(src, bytes.Repeat([]byte("hello, blocks\n"), 300), 0o644); err != nil {
		log.Fatal(err)
	}

	m, err := chunker.ChunkPath(context.Background(), src, chunker.MinBlockSize)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Files()[0].Path, m.TotalSize(), "bytes in", m.BlockCount(), "blocks")

	seed, err := chunker.SeedStore(context.Background(), src, m)
	if err != nil {
		log.Fatal(err)
	}
	defer seed.Close()

	out := filepath.Join(tmp, "download")
	st, err := chunker.OpenOrCreateStore(context.Background(), out, m)
	if err != nil {
		log.Fatal(err)
	}
	var buf []byte
	for _, i := range st.Missing() {
		if buf, err = seed.ReadBlock(i, buf); err != nil {
			log.Fatal(err)
		}
		if err := st.PutBlock(i, buf); err != nil { // verified against the manifest
			log.Fatal(err)
		}
	}
	fmt.Println("complete:", st.Complete())
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(out, "hello.txt"))
	fmt.Println("same bytes:", len(got) == int(m.TotalSize()))
	// Output:
	// hello.txt 4200 bytes in 5 blocks
	// complete: true
	// same bytes: true
}

// A manifest travels as its canonical encoding; the receiver checks it against the
// id it was given (from a ticket, say).
func ExampleDecodeManifestID() {
	m, err := chunker.ChunkReader(context.Background(), "notes.txt", 0o644, bytes.NewReader(make([]byte, 3000)), chunker.MinBlockSize)
	if err != nil {
		log.Fatal(err)
	}
	wire, _ := m.MarshalBinary()
	id, _ := chunker.ParseID(m.ID().String())

	got, err := chunker.DecodeManifestID(wire, id, 1<<20)
	fmt.Println(got.BlockCount(), err)
	wire[len(wire)-1] ^= 1
	_, err = chunker.DecodeManifestID(wire, id, 1<<20)
	fmt.Println(errors.Is(err, chunker.ErrManifestMismatch))
	// Output:
	// 3 <nil>
	// true
}

// Download single-file content to a file of one's choosing ("fetch --out FILE"):
// the state lives beside it until the download completes, then RemoveState leaves
// just the file. Resuming an interrupted download is the same call.
func ExampleOpenOrCreateFileStore() {
	tmp, err := os.MkdirTemp("", "chunker-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "hello.txt")
	if err := os.WriteFile(src, bytes.Repeat([]byte("hello, blocks\n"), 300), 0o644); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	m, err := chunker.ChunkPath(ctx, src, chunker.MinBlockSize)
	if err != nil {
		log.Fatal(err)
	}
	seed, err := chunker.SeedStore(ctx, src, m)
	if err != nil {
		log.Fatal(err)
	}
	defer seed.Close()

	out := filepath.Join(tmp, "greeting.txt")
	st, err := chunker.OpenOrCreateFileStore(ctx, out, m)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("state in", filepath.Base(st.StateDir()))
	var buf []byte
	for _, i := range st.Missing() {
		if buf, err = seed.ReadBlock(i, buf); err != nil {
			log.Fatal(err)
		}
		if err := st.PutBlock(i, buf); err != nil {
			log.Fatal(err)
		}
	}
	if err := st.RemoveState(); err != nil { // also closes the store
		log.Fatal(err)
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	// Output:
	// state in greeting.txt.reconcile
	// greeting.txt
	// hello.txt
}

// Content-defined blocks follow the bytes: a version of a file with bytes
// inserted in the middle shares all its blocks with the old one but those
// around the insertion, where fixed-size blocks would all shift.
func ExampleWithContentDefined() {
	ctx := context.Background()
	v1 := make([]byte, 8<<20)
	rand.NewChaCha8([32]byte{1}).Read(v1)
	v2 := slices.Concat(v1[:4<<20], []byte("a few bytes inserted"), v1[4<<20:])

	shared := func(opts ...chunker.ChunkOption) string {
		m1, err := chunker.ChunkReader(ctx, "data.bin", 0o644, bytes.NewReader(v1), 0, opts...)
		if err != nil {
			log.Fatal(err)
		}
		m2, err := chunker.ChunkReader(ctx, "data.bin", 0o644, bytes.NewReader(v2), 0, opts...)
		if err != nil {
			log.Fatal(err)
		}
		have := map[[chunker.HashSize]byte]bool{}
		for i := range m1.BlockCount() {
			have[m1.BlockHash(i)] = true
		}
		n := 0
		for i := range m2.BlockCount() {
			if have[m2.BlockHash(i)] {
				n++
			}
		}
		return fmt.Sprintf("%d of %d blocks of v2 are in v1", n, m2.BlockCount())
	}
	fmt.Println("fixed-size:      ", shared())
	fmt.Println("content-defined: ", shared(chunker.WithContentDefined()))
	// Output:
	// fixed-size:       16 of 33 blocks of v2 are in v1
	// content-defined:  62 of 63 blocks of v2 are in v1
}

// A folder's symbolic links (those that stay inside it) and empty folders are
// part of its content: a store makes the folders as it is created and the
// links once every block is there.
func ExampleWithLinksAndDirs() {
	tmp, err := os.MkdirTemp("", "chunker-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "site")
	os.MkdirAll(filepath.Join(src, "cache"), 0o755)
	os.WriteFile(filepath.Join(src, "index.html"), []byte("<h1>hello</h1>\n"), 0o644)
	os.Symlink("index.html", filepath.Join(src, "home.html"))
	os.Symlink("/etc/hostname", filepath.Join(src, "host"))

	ctx := context.Background()
	m, err := chunker.ChunkPath(ctx, src, 0, chunker.WithContentDefined(),
		chunker.WithSkipped(func(path, reason string) { fmt.Println("skipped", filepath.Base(path)+":", reason) }))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Files()[0].Path, m.Symlinks(), m.Dirs())

	seed, err := chunker.SeedStore(ctx, src, m)
	if err != nil {
		log.Fatal(err)
	}
	defer seed.Close()
	out := filepath.Join(tmp, "copy")
	st, err := chunker.CreateStore(ctx, out, m)
	if err != nil {
		log.Fatal(err)
	}
	var buf []byte
	for _, i := range st.Missing() {
		if buf, err = seed.ReadBlock(i, buf); err != nil {
			log.Fatal(err)
		}
		if err := st.PutBlock(i, buf); err != nil {
			log.Fatal(err)
		}
	}
	st.Close()
	target, _ := os.Readlink(filepath.Join(out, "site", "home.html"))
	info, _ := os.Stat(filepath.Join(out, "site", "cache"))
	fmt.Println("home.html ->", target, "; cache is a folder:", info.IsDir())
	// Output:
	// skipped host: symbolic link to /etc/hostname: its target is absolute
	// site/index.html [{site/home.html index.html}] [site/cache]
	// home.html -> index.html ; cache is a folder: true
}
