package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker"
)

func TestChunkCommand(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "data.bin")
	if err := os.WriteFile(f, make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "chunk", f, "--block-size", "1KiB", "--json", "--manifest", filepath.Join(dir, "m"))
	if err != nil {
		t.Fatal(err)
	}
	var rep chunkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if rep.Blocks != 5 || rep.LastBlock != 904 || rep.TotalSize != 5000 || len(rep.Files) != 1 || rep.Files[0].Path != "data.bin" {
		t.Fatalf("report %+v", rep)
	}
	enc, err := os.ReadFile(filepath.Join(dir, "m"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := chunker.DecodeManifest(enc, 0)
	if err != nil || m.ID().String() != rep.ID {
		t.Fatalf("--manifest file: %v", err)
	}
	out, err = run(t, "", "chunk", f, "--block-size", "256KiB")
	if err != nil || !strings.Contains(out, "blocks    1 of 256 KiB, last one 5000 bytes") {
		t.Fatalf("human output %q, %v", out, err)
	}
	// By default the blocks are seed's: content-defined, the same root.
	out, err = run(t, "", "chunk", f)
	cdc, cerr := chunker.ChunkPath(context.Background(), f, 0, chunker.WithContentDefined())
	if err != nil || cerr != nil || !strings.Contains(out, "content-defined") || !strings.Contains(out, cdc.ID().String()) {
		t.Fatalf("default output %q, %v, %v (want the content-defined root %s)", out, err, cerr, cdc.ID())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"chunk"}, "want exactly one PATH"},
		{[]string{"chunk", filepath.Join(dir, "nope")}, "no such file"},
		{[]string{"chunk", f, "--block-size", "512"}, "1KiB to 16MiB"},
		{[]string{"chunk", f, "--block-size", "32MiB"}, "1KiB to 16MiB"},
		{[]string{"chunk", f, "--block-size", "lots"}, "--block-size"},
		{[]string{"verify", dir}, "not a block store"},
		{[]string{"verify"}, "want exactly one STORE"},
	} {
		if _, err := run(t, "", tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err = %v, want one line containing %q", tc.args, err, tc.want)
		}
	}
}

func TestVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	m, seed := textSeed(t, dir)
	src := filepath.Join(dir, "src")
	out := filepath.Join(dir, "out")
	st, err := chunker.CreateStore(context.Background(), out, m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.BlockCount() - 2 {
		b, _ := seed.ReadBlock(i, nil)
		if err := st.PutBlock(i, b); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	verify := func() (verifyReport, error) {
		s, err := run(t, "", "verify", out, "--json")
		var rep verifyReport
		if jerr := json.Unmarshal([]byte(s), &rep); jerr != nil {
			t.Fatalf("%v in %q", jerr, s)
		}
		return rep, err
	}
	rep, err := verify()
	if err != nil || rep.Held != m.BlockCount()-2 || rep.Missing != 2 || len(rep.Corrupt) != 0 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	// Damage block 1 on disk: reported, dropped, and the command fails.
	fh, _ := os.OpenFile(filepath.Join(out, "src"), os.O_WRONLY, 0)
	fh.WriteAt([]byte("X"), chunker.MinBlockSize+3)
	fh.Close()
	rep, err = verify()
	if err == nil || len(rep.Corrupt) != 1 || rep.Corrupt[0] != 1 || rep.Missing != 3 {
		t.Fatalf("after damage: %+v, %v", rep, err)
	}
	if rep, err = verify(); err != nil || rep.Missing != 3 {
		t.Fatalf("second verify: %+v, %v", rep, err)
	}
	// --rebuild reports a recorded block whose bytes are damaged as corrupt.
	fh, _ = os.OpenFile(filepath.Join(out, "src"), os.O_WRONLY, 0)
	fh.WriteAt([]byte("X"), 5) // block 0
	fh.Close()
	s, err := run(t, "", "verify", out, "--rebuild", "--json")
	rep = verifyReport{}
	if jerr := json.Unmarshal([]byte(s), &rep); jerr != nil || err == nil || fmt.Sprint(rep.Corrupt) != "[0]" || rep.Missing != 4 {
		t.Fatalf("rebuild with a damaged block: %+v, %v, %v", rep, err, jerr)
	}
	orig0, _ := os.ReadFile(src)
	fh, _ = os.OpenFile(filepath.Join(out, "src"), os.O_WRONLY, 0)
	fh.WriteAt(orig0[5:6], 5) // restore block 0
	fh.Close()
	// A damaged record: verify says how to rebuild it, --rebuild does, from the bytes.
	orig, _ := os.ReadFile(src)
	fh, _ = os.OpenFile(filepath.Join(out, "src"), os.O_WRONLY, 0)
	fh.WriteAt(orig[chunker.MinBlockSize+3:][:1], chunker.MinBlockSize+3) // restore the byte
	fh.Close()
	if err := os.WriteFile(filepath.Join(st.StateDir(), "held"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "", "verify", out); err == nil || !strings.Contains(err.Error(), "--rebuild") {
		t.Fatalf("damaged record: %v", err)
	}
	s, err = run(t, "", "verify", out, "--rebuild", "--json")
	if err != nil {
		t.Fatal(err)
	}
	rep = verifyReport{}
	json.Unmarshal([]byte(s), &rep)
	// Blocks 0..7 were written (block 1 restored by hand); the last two never were.
	if rep.Held != m.BlockCount()-2 {
		t.Fatalf("rebuild: %+v", rep)
	}
}

// TestVerifySingleFile: verify checks a single-file download, unfinished
// (its data still staged in FILE.reconcile, nothing at FILE) or finished,
// and reports held, missing and corrupt blocks.
func TestVerifySingleFile(t *testing.T) {
	dir := t.TempDir()
	m, seed := textSeed(t, dir)
	out := filepath.Join(dir, "copy.txt")
	st, err := chunker.CreateFileStore(context.Background(), out, m, chunker.WithStaging())
	if err != nil {
		t.Fatal(err)
	}
	put := func(from, to int) {
		for i := from; i < to; i++ {
			b, _ := seed.ReadBlock(i, nil)
			if err := st.PutBlock(i, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, m.BlockCount()-3)
	verify := func() verifyReport {
		s, err := run(t, "", "verify", out, "--json")
		var rep verifyReport
		if jerr := json.Unmarshal([]byte(s), &rep); jerr != nil {
			t.Fatalf("%v in %q (%v)", jerr, s, err)
		}
		return rep
	}
	if rep := verify(); rep.Held != m.BlockCount()-3 || rep.Missing != 3 || rep.Complete {
		t.Fatalf("verify of an unfinished download: %+v", rep)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("verify put the unfinished download at its final name: %v", err)
	}
	put(m.BlockCount()-3, m.BlockCount())
	if _, err := st.Publish(chunker.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if rep := verify(); rep.Held != m.BlockCount() || !rep.Complete {
		t.Fatalf("verify of a finished download: %+v", rep)
	}
}

// textSeed seeds a small text file in dir in 1 KiB blocks.
func textSeed(t *testing.T, dir string) (*chunker.Manifest, *chunker.Store) {
	t.Helper()
	return textSeedOf(t, dir, "src", strings.Repeat("reconcile ", 1000))
}

// textSeedOf seeds text as the file dir/name in 1 KiB blocks.
func textSeedOf(t *testing.T, dir, name, text string) (*chunker.Manifest, *chunker.Store) {
	t.Helper()
	src := filepath.Join(dir, name)
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := chunker.ChunkPath(context.Background(), src, chunker.MinBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := chunker.SeedStore(context.Background(), src, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seed.Close() })
	return m, seed
}

// TestVerifySeveralContents: verify of a folder that holds two fetched
// contents checks both (a JSON array), and verify of a content's top
// inside the folder checks that one.
func TestVerifySeveralContents(t *testing.T) {
	dir, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	var ids []string
	for k, name := range []string{"a.txt", "b.txt"} {
		m, seed := textSeedOf(t, dir, name, strings.Repeat(name, 2000+k))
		st, err := chunker.CreateStore(context.Background(), out, m)
		if err != nil {
			t.Fatal(err)
		}
		for i := range m.BlockCount() - k { // b.txt lacks a block
			b, _ := seed.ReadBlock(i, nil)
			if err := st.PutBlock(i, b); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
		ids = append(ids, m.ID().String())
	}
	s, err := run(t, "", "verify", out, "--json")
	var reps []verifyReport
	if jerr := json.Unmarshal([]byte(s), &reps); err != nil || jerr != nil || len(reps) != 2 {
		t.Fatalf("verify of two contents: %v, %v in %q", err, jerr, s)
	}
	for _, rep := range reps {
		want := rep.ID == ids[0] // a.txt complete, b.txt a block short
		if rep.Complete != want || rep.Missing != map[bool]int{true: 0, false: 1}[want] {
			t.Errorf("report %+v", rep)
		}
	}
	s, err = run(t, "", "verify", filepath.Join(out, "b.txt"), "--json")
	var rep verifyReport
	if jerr := json.Unmarshal([]byte(s), &rep); err != nil || jerr != nil || rep.ID != ids[1] || rep.Missing != 1 {
		t.Fatalf("verify of out/b.txt: %+v, %v, %v", rep, err, jerr)
	}
}
