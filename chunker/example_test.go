package chunker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

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
