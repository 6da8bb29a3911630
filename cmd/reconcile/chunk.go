package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/urfave/cli/v2"
)

func chunkCommand() *cli.Command {
	return &cli.Command{
		Name:      "chunk",
		Usage:     "cut a file or folder into blocks and print its manifest summary",
		ArgsUsage: "PATH",
		Description: "Reads PATH (a file, or every file of a folder in byte-wise path order), cuts it\n" +
			"into blocks as reconcile seed does (content-defined blocks, each file on its own, so\n" +
			"the id is the root seed announces; --block-size cuts fixed-size blocks of the files\n" +
			"read as one stream), hashes each with BLAKE3 and prints the manifest's root id, files,\n" +
			"size and block count. What the content leaves out (links out of the tree, named\n" +
			"pipes) is named on stderr. Memory stays constant whatever the size.\n" +
			"--manifest FILE also writes the manifest's canonical encoding.\n\n" +
			"Examples:\n" +
			"   reconcile chunk movie.mkv\n" +
			"   reconcile chunk ./photos --block-size 1MiB --json",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "block-size", Usage: "cut fixed-size blocks of this size, 1KiB to 16MiB (e.g. 4096, 64KiB, 4MiB)", DefaultText: "content-defined blocks, as reconcile seed cuts"},
			&cli.StringFlag{Name: "manifest", Usage: "write the manifest's encoding to this file"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document"},
			cliutil.ProgressFlag(),
		},
		Action: runChunk,
	}
}

type fileJSON struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	Mode string `json:"mode"`
}

type chunkReport struct {
	ID            string     `json:"id"`
	Path          string     `json:"path"`
	Files         []fileJSON `json:"files"`
	TotalSize     int64      `json:"total_size"`
	BlockSize     int        `json:"block_size"` // the longest a block may be
	Chunking      string     `json:"chunking,omitempty"`
	AvgBlock      int        `json:"avg_block_size"`
	Blocks        int        `json:"blocks"`
	LastBlock     int        `json:"last_block_size"`
	ManifestBytes int        `json:"manifest_bytes"`
	Hash          string     `json:"hash"`
	Seconds       float64    `json:"seconds"`
	MBPerSecond   float64    `json:"mb_per_s"`
}

func runChunk(c *cli.Context) error {
	if c.NArg() != 1 {
		return cliutil.Usagef("want exactly one PATH, got %d arguments", c.NArg())
	}
	path := c.Args().First()
	var bs int64
	opts := []chunker.ChunkOption{chunker.WithContentDefined(), chunker.WithSkipped(func(path, reason string) {
		fmt.Fprintf(c.App.ErrWriter, "warning: left out of the content: %s: %s\n", path, reason)
	})}
	if c.IsSet("block-size") {
		var err error
		if bs, err = cliutil.FlagSize(c, "block-size", chunker.MinBlockSize, chunker.MaxBlockSize); err != nil {
			return err
		}
		opts = opts[1:]
	}
	pr, err := cliutil.NewProgress(c, "chunking", true)
	if err != nil {
		return err
	}
	ctx, stop := cliutil.SignalContext()
	defer stop()
	start := time.Now()
	m, err := chunker.ChunkPath(ctx, path, int(bs), append(opts, chunker.WithProgress(pr.Bytes))...)
	pr.Finish(false)
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	enc, _ := m.MarshalBinary()
	if f := c.String("manifest"); f != "" {
		if err := os.WriteFile(f, enc, 0o644); err != nil {
			return fmt.Errorf("--manifest: %w", err)
		}
	}
	rep := chunkReport{
		ID: m.ID().String(), Path: path, Files: []fileJSON{}, TotalSize: m.TotalSize(),
		BlockSize: m.BlockSize(), AvgBlock: m.AvgBlockLen(), Blocks: m.BlockCount(),
		ManifestBytes: len(enc), Hash: chunker.HashName, Seconds: secs,
	}
	if m.BlockCount() > 0 {
		rep.LastBlock = m.BlockLen(m.BlockCount() - 1)
	}
	if m.ContentDefined() {
		rep.Chunking = m.Chunking().String()
	}
	if secs > 0 {
		rep.MBPerSecond = float64(m.TotalSize()) / 1e6 / secs
	}
	for _, f := range m.Files() {
		rep.Files = append(rep.Files, fileJSON{f.Path, f.Size, fmt.Sprintf("%#o", f.Mode)})
	}
	if c.Bool("json") {
		return cliutil.WriteJSON(c.App.Writer, rep)
	}
	printChunkReport(c.App.Writer, rep)
	return nil
}

func printChunkReport(w io.Writer, r chunkReport) {
	fmt.Fprintf(w, "id        %s\n", r.ID)
	fmt.Fprintf(w, "files     %d\n", len(r.Files))
	const show = 10
	for k, f := range r.Files {
		if k == show {
			fmt.Fprintf(w, "          ... and %d more\n", len(r.Files)-show)
			break
		}
		fmt.Fprintf(w, "          %s  %s  %s\n", f.Mode, cliutil.HumanBytes(f.Size), f.Path)
	}
	fmt.Fprintf(w, "size      %s (%d bytes)\n", cliutil.HumanBytes(r.TotalSize), r.TotalSize)
	if r.Chunking != "" {
		fmt.Fprintf(w, "blocks    %d, %s on average (content-defined, %s)\n", r.Blocks, cliutil.HumanBytes(int64(r.AvgBlock)), r.Chunking)
	} else {
		last := ""
		if r.Blocks > 0 && r.LastBlock != r.BlockSize {
			last = fmt.Sprintf(", last one %d bytes", r.LastBlock)
		}
		fmt.Fprintf(w, "blocks    %d of %s%s\n", r.Blocks, cliutil.HumanBytes(int64(r.BlockSize)), last)
	}
	fmt.Fprintf(w, "manifest  %s (%s block hashes)\n", cliutil.HumanBytes(int64(r.ManifestBytes)), r.Hash)
	fmt.Fprintf(w, "time      %.3fs (%.0f MiB/s)\n", r.Seconds, r.MBPerSecond*1e6/(1<<20))
}

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "re-hash a block store's blocks and report held, missing and corrupt ones",
		ArgsUsage: "STORE",
		Description: "STORE is the --out of a fetch: a folder (each content fetched into it is checked),\n" +
			"a content's folder or file in such a folder, or a single file (finished or not). Every block\n" +
			"the store records as held is read back and re-hashed; blocks whose bytes no longer\n" +
			"match are reported as corrupt and dropped from the store, so that a resumed fetch\n" +
			"downloads them again. Exits with status 1 when corrupt blocks were found.\n" +
			"--rebuild re-hashes every block, recorded or not, and rebuilds the store's record\n" +
			"of held blocks from those that match (for a damaged record, or files copied in);\n" +
			"when the old record can still be read, its blocks that fail are reported as corrupt.\n\n" +
			"Examples:\n" +
			"   reconcile verify ~/Downloads/movie\n" +
			"   reconcile verify ./movie.mkv --json\n" +
			"   reconcile verify ./out --rebuild",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "rebuild", Usage: "re-hash every block and rebuild the record of held blocks"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document"},
			cliutil.ProgressFlag(),
		},
		Action: runVerify,
	}
}

type verifyReport struct {
	Store    string  `json:"store"`
	ID       string  `json:"id"`
	Blocks   int     `json:"blocks"`
	Held     int     `json:"held"`
	Missing  int     `json:"missing"`
	Corrupt  []int   `json:"corrupt"`
	Complete bool    `json:"complete"`
	Bytes    int64   `json:"bytes_checked"`
	Seconds  float64 `json:"seconds"`
	checked  int     // blocks re-hashed
}

func runVerify(c *cli.Context) error {
	if c.NArg() != 1 {
		return cliutil.Usagef("want exactly one STORE folder, got %d arguments", c.NArg())
	}
	targets := verifyTargets(c.Args().First())
	reps := make([]verifyReport, 0, len(targets))
	var corrupt int
	for k, t := range targets {
		rep, err := verifyStore(c, t)
		if err != nil {
			return err
		}
		reps = append(reps, rep)
		corrupt += len(rep.Corrupt)
		if !c.Bool("json") {
			if k > 0 {
				fmt.Fprintln(c.App.Writer)
			}
			printVerify(c.App.Writer, rep, t.label)
		}
	}
	if c.Bool("json") {
		var doc any = reps[0]
		if len(reps) > 1 {
			doc = reps // a folder of several contents: one report each
		}
		if err := cliutil.WriteJSON(c.App.Writer, doc); err != nil {
			return err
		}
	}
	if corrupt > 0 {
		return fmt.Errorf("verify: %s dropped from %s; resume the fetch to download them again", cliutil.Count(corrupt, "corrupt block"), c.Args().First())
	}
	return nil
}

// verifyTarget is one store that verify checks: its path, how the report
// names it, and, for a folder of several stores, the id of the one.
type verifyTarget struct {
	path, label string
	id          chunker.ID // zero: the only store at path (openStoreArg)
}

// open opens the store t names.
func (t verifyTarget) open(opts ...chunker.StoreOption) (*chunker.Store, error) {
	if t.id == (chunker.ID{}) {
		return openStoreArg(t.path, opts...)
	}
	return chunker.OpenStore(context.Background(), t.path, append(opts, chunker.WithID(t.id))...)
}

// verifyTargets lists the stores that path names: a single file's, a
// folder's one store, every store of a folder that holds several (the
// contents fetched into it), or, for a content's top folder or file inside
// an output folder (out/photos), the store of out that holds it.
func verifyTargets(path string) []verifyTarget {
	ids, err := chunker.ListStores(path)
	if err != nil || len(ids) < 2 {
		if !hasState(path) {
			if t, ok := verifyByTop(path); ok {
				return []verifyTarget{t}
			}
		}
		return []verifyTarget{{path: path, label: path}}
	}
	ts := make([]verifyTarget, len(ids))
	for k, id := range ids {
		ts[k] = verifyTarget{path: path, label: path + " (" + id.String() + ")", id: id}
	}
	return ts
}

// hasState reports whether path has a store's state folder: its own
// (path/.reconcile) or a single file's (path.reconcile).
func hasState(path string) bool {
	_, err := os.Stat(filepath.Join(path, chunker.MetaDir))
	_, ferr := os.Stat(path + chunker.MetaDir)
	return err == nil || ferr == nil
}

// verifyByTop finds the store of the output folder that holds path as its
// content's top folder or file (out/photos for a fetch of photos into out).
func verifyByTop(path string) (verifyTarget, bool) {
	out, top := filepath.Dir(filepath.Clean(path)), filepath.Base(filepath.Clean(path))
	ids, err := chunker.ListStores(out)
	if err != nil {
		return verifyTarget{}, false
	}
	for _, id := range ids {
		m, err := chunker.StateManifest(filepath.Join(out, chunker.MetaDir, id.String()), chunker.DefaultMaxManifestBytes)
		if err == nil && m.Top() == top {
			return verifyTarget{path: out, label: path, id: id}, true
		}
	}
	return verifyTarget{}, false
}

// verifyStore re-hashes the blocks of the store t names (every block with
// --rebuild) and reports them.
func verifyStore(c *cli.Context, t verifyTarget) (verifyReport, error) {
	dir := t.path
	opts := []chunker.StoreOption{chunker.WithoutRepair()} // a missing file is reported, not made again
	if c.Bool("rebuild") {
		opts = []chunker.StoreOption{chunker.WithVerify()}
	}
	start := time.Now()
	// For --rebuild, the blocks recorded as held before (when the record can
	// be read) tell which of them the rebuild found corrupt.
	var before []int
	if c.Bool("rebuild") {
		if old, err := t.open(); err == nil {
			before = old.Held()
			old.Close()
		}
	}
	st, err := t.open(opts...)
	if err != nil {
		if errors.Is(err, chunker.ErrNotFound) {
			return verifyReport{}, fmt.Errorf("verify: %s is not a block store (no %s/manifest in it, nor in %s%s)", dir, chunker.MetaDir, dir, chunker.MetaDir)
		}
		if errors.Is(err, chunker.ErrDamaged) {
			return verifyReport{}, fmt.Errorf("verify: %v (run the fetch again to download it, or reconcile verify --rebuild %s to keep what is left)", err, t.label)
		}
		if errors.Is(err, chunker.ErrCorrupt) {
			return verifyReport{}, fmt.Errorf("%v; run reconcile verify --rebuild %s", err, t.label)
		}
		return verifyReport{}, err
	}
	defer st.Close()
	pr, err := cliutil.NewProgress(c, "verifying blocks", false)
	if err != nil {
		return verifyReport{}, err
	}
	ctx, stop := cliutil.SignalContext()
	defer stop()
	m := st.Manifest()
	checked := st.HeldCount()
	var r chunker.Report
	if c.Bool("rebuild") { // opening re-hashed every block already
		checked = m.BlockCount()
		r = chunker.Report{Blocks: m.BlockCount(), Held: st.HeldCount(), Missing: m.BlockCount() - st.HeldCount(), Corrupt: []int{}}
		for _, i := range before {
			if !st.Has(i) {
				r.Corrupt = append(r.Corrupt, i)
			}
		}
	} else if r, err = st.VerifyProgress(ctx, pr.Counts); err != nil {
		pr.Finish(false)
		return verifyReport{}, fmt.Errorf("verify: %w", err)
	}
	pr.Finish(false)
	rep := verifyReport{
		Store: dir, ID: m.ID().String(), Blocks: r.Blocks, Held: r.Held, Missing: r.Missing,
		Corrupt: r.Corrupt, Complete: r.Held == r.Blocks, Seconds: time.Since(start).Seconds(), checked: checked,
	}
	if c.Bool("rebuild") {
		rep.Bytes = m.TotalSize()
	} else {
		for _, i := range st.Held() {
			rep.Bytes += int64(m.BlockLen(i))
		}
		for _, i := range r.Corrupt {
			rep.Bytes += int64(m.BlockLen(i))
		}
	}
	return rep, nil
}

// printVerify writes rep as lines, the store named label.
func printVerify(w io.Writer, rep verifyReport, label string) {
	fmt.Fprintf(w, "store     %s\n", label)
	fmt.Fprintf(w, "id        %s\n", rep.ID)
	fmt.Fprintf(w, "checked   %d blocks, %s in %.3fs\n", rep.checked, cliutil.HumanBytes(rep.Bytes), rep.Seconds)
	fmt.Fprintf(w, "held      %d of %d\n", rep.Held, rep.Blocks)
	fmt.Fprintf(w, "missing   %d\n", rep.Missing)
	fmt.Fprintf(w, "corrupt   %d%s\n", len(rep.Corrupt), listInts(rep.Corrupt, 20))
	if rep.Complete {
		fmt.Fprintln(w, "complete  yes")
	}
}

// openStoreArg opens the store a command names: a single file fetched with
// --out FILE (its state in FILE.reconcile, the file itself there or not yet),
// or a folder.
func openStoreArg(path string, opts ...chunker.StoreOption) (*chunker.Store, error) {
	fi, err := os.Stat(path)
	_, serr := os.Stat(path + chunker.MetaDir)
	if err == nil && !fi.IsDir() || err != nil && serr == nil {
		return chunker.OpenFileStore(context.Background(), path, opts...)
	}
	return chunker.OpenStore(context.Background(), path, opts...)
}

// listInts formats up to max indices as " (1, 5, 9, ...)".
func listInts(v []int, max int) string {
	if len(v) == 0 {
		return ""
	}
	s := " ("
	for k, i := range v {
		if k == max {
			s += ", ..."
			break
		}
		if k > 0 {
			s += ", "
		}
		s += fmt.Sprint(i)
	}
	return s + ")"
}
