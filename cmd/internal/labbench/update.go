package labbench

// reconcile bench update: the bytes and the time it takes to update an older
// copy of a file or folder to its new version, reconcile fetch against
// rsync's delta transfer, side by side on loopback (issue 35).

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

func updateCommand() *cli.Command {
	return &cli.Command{
		Name:  "update",
		Usage: "update an older copy to its new version: bytes and time, reconcile fetch against rsync",
		Description: "Updates an older copy (v1) of a file or folder to its new version (v2) on loopback,\n" +
			"with reconcile and with rsync's delta transfer, and compares the bytes each moved and\n" +
			"the time each took. The cases (--cases, a comma list):\n" +
			"  overwrite  a --size file of random bytes, 1 MiB overwritten with new bytes in the middle\n" +
			"  insert     the same, 1 KiB inserted in the middle\n" +
			"  delete     the same, 1 KiB deleted in the middle\n" +
			"  append     the same, 64 KiB appended\n" +
			"  folder     a folder of --files files of --file-size: a tenth renamed, a twentieth\n" +
			"             rewritten with new bytes, a twentieth deleted, a twentieth added (at least\n" +
			"             one each); rsync -a --delete, fetch --delete\n" +
			"v1 and v2 are the same for the same --seed. Each repetition updates a fresh copy of v1\n" +
			"both ways, rsync first in even repetitions and reconcile first in odd ones:\n" +
			"  rsync: an rsync daemon on 127.0.0.1 (no chroot, no privileges) serves v2's folder;\n" +
			"     rsync --no-whole-file --stats rsync://127.0.0.1:PORT/v2/CASE/FILE COPY; its bytes\n" +
			"     are Total bytes sent + received of its --stats (the protocol's, not TCP/IP's).\n" +
			"  reconcile: reconcile seed v2 (with --content-defined when the seed has it; its start\n" +
			"     is not timed), then reconcile fetch --out COPY --json; its bytes are the fetch's\n" +
			"     wire_bytes_received + wire_bytes_sent.\n" +
			"The time is the client process's, start to exit, to a v2 it verified (rsync checks a\n" +
			"whole-file checksum, the fetch every block; rsync does not fsync, the fetch does); then\n" +
			"the bench checks every byte of the copy against v2 (and, for the folder, that no other\n" +
			"file is left). Figures are medians over --repeat.\n\n" +
			"Goals (issue 35): reconcile's bytes at most max(1.5 x rsync's, rsync's + 2 average\n" +
			"blocks) for a file, 1.5 x rsync's for the folder; reconcile's time at most rsync's for\n" +
			"a file. Needs rsync, and a reconcile whose fetch updates an older copy at --out and\n" +
			"reports its wire bytes (--ours=false: rsync only).\n\n" +
			"Example:\n" +
			"   reconcile bench update --repeat 5\n" +
			"   reconcile bench update --size 32MiB --repeat 1 --cases overwrite,folder --files 20",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "size", Value: "256MiB", Usage: "the file's size, of the file cases (at least 2MiB)"},
			&cli.IntFlag{Name: "files", Value: 100, Usage: "the folder's files, of the folder case (10 to 100000)"},
			&cli.StringFlag{Name: "file-size", Value: "1MiB", Usage: "the size of each of the folder's files"},
			&cli.StringFlag{Name: "cases", Value: "all", Usage: "the cases to run, a comma list of overwrite, insert, delete, append and folder, or all"},
			&cli.IntFlag{Name: "repeat", Value: 5, Usage: "repetitions of each case (1 to 100); figures are medians over them"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the contents (v1, v2 and the folder's changes)"},
			&cli.BoolFlag{Name: "ours", Value: true, Usage: "run reconcile's updates (--ours=false: rsync's only)"},
			&cli.BoolFlag{Name: "v1-fetched", Usage: "reconcile's v1 is fetched with reconcile first (its manifest kept, as a user's is), not copied; not timed"},
			&cli.StringFlag{Name: "dir", Usage: "work folder (default: a temporary folder, removed afterwards)"},
			&cli.BoolFlag{Name: "keep", Usage: "keep every case's v1, v2 and updated copies, and the rsync daemon's configuration and log, in the work folder (a temporary one too: its path is printed)"},
			&cli.BoolFlag{Name: "json", Usage: "print the figures as one JSON document"},
		},
		Action: runUpdate,
	}
}

// updateConfig is what one bench update run does.
type updateConfig struct {
	self, dir      string
	size, fileSize int64
	files          int
	seed           uint64
	ours, keep     bool
	// v1Fetched: reconcile's copy of v1 is a reconcile fetch of it.
	v1Fetched bool
	logf      func(format string, args ...any)
}

// updateReport holds the figures of one bench update run.
type updateReport struct {
	Size     int64  `json:"size"`
	Files    int    `json:"files"`
	FileSize int64  `json:"file_size"`
	Repeat   int    `json:"repeat"`
	Seed     uint64 `json:"seed"`
	Rsync    string `json:"rsync_version"`
	// ContentDefined: the seeds cut content-defined blocks.
	ContentDefined bool `json:"content_defined"`
	// V1Fetched: reconcile's v1 was a reconcile fetch (--v1-fetched).
	V1Fetched bool                `json:"v1_fetched"`
	Cases     []*updateCaseReport `json:"cases"`
}

// updateCaseReport is one case's figures. Ours and the comparisons are
// missing with --ours=false.
type updateCaseReport struct {
	Case    string      `json:"case"`
	Change  string      `json:"change"`
	V1Bytes int64       `json:"v1_bytes"`
	V2Bytes int64       `json:"v2_bytes"`
	Rsync   *updateSide `json:"rsync"`
	Ours    *updateSide `json:"ours,omitempty"`
	// AvgBlock is the average block of v2 as the seed cut it.
	AvgBlock float64 `json:"avg_block_bytes,omitempty"`
	// BytesRatio is ours / rsync's bytes (medians); BytesGoal the most
	// ours may be: max(1.5 x rsync, rsync + 2 x AvgBlock) for a file,
	// 1.5 x rsync for the folder.
	BytesRatio float64 `json:"bytes_ratio,omitempty"`
	BytesGoal  int64   `json:"bytes_goal,omitempty"`
	BytesMet   bool    `json:"bytes_goal_met"`
	// TimeRatio is ours / rsync's median seconds; TimeMet whether ours
	// took at most rsync's time, where that is a goal (TimeGoal: a file).
	TimeRatio float64 `json:"time_ratio,omitempty"`
	TimeGoal  bool    `json:"time_goal"`
	TimeMet   bool    `json:"time_goal_met"`
}

// updateSide is one side's figures of a case: medians over the
// repetitions, and each repetition's.
type updateSide struct {
	Bytes     int64     `json:"bytes"` // sent + received
	Sent      int64     `json:"bytes_sent"`
	Received  int64     `json:"bytes_received"`
	Reused    int64     `json:"reused_bytes"` // rsync: its matched data
	Seconds   float64   `json:"seconds"`
	Each      []float64 `json:"each_seconds"`
	EachBytes []int64   `json:"each_bytes"`
	runs      []updateRun
}

// add records one repetition.
func (s *updateSide) add(r updateRun) {
	s.runs = append(s.runs, r)
	s.Each, s.EachBytes = append(s.Each, r.seconds), append(s.EachBytes, r.bytes())
}

// finish sets the medians.
func (s *updateSide) finish() {
	med := func(f func(updateRun) float64) float64 {
		xs := make([]float64, len(s.runs))
		for j, r := range s.runs {
			xs[j] = f(r)
		}
		return cliutil.Median(xs)
	}
	s.Seconds = cliutil.Median(s.Each)
	s.Bytes = int64(math.Round(med(func(r updateRun) float64 { return float64(r.bytes()) })))
	s.Sent = int64(math.Round(med(func(r updateRun) float64 { return float64(r.sent) })))
	s.Received = int64(math.Round(med(func(r updateRun) float64 { return float64(r.received) })))
	s.Reused = int64(math.Round(med(func(r updateRun) float64 { return float64(r.reused) })))
}

// compare sets the case's comparisons of ours against rsync.
func (cr *updateCaseReport) compare(folder bool) {
	if cr.Ours == nil || cr.Rsync.Bytes == 0 || cr.Rsync.Seconds == 0 {
		return
	}
	rs := float64(cr.Rsync.Bytes)
	goal := 1.5 * rs
	if !folder {
		goal = max(goal, rs+2*cr.AvgBlock)
	}
	cr.BytesGoal = int64(math.Floor(goal))
	cr.BytesRatio = float64(cr.Ours.Bytes) / rs
	cr.BytesMet = cr.Ours.Bytes <= cr.BytesGoal
	cr.TimeRatio = cr.Ours.Seconds / cr.Rsync.Seconds
	cr.TimeGoal = !folder
	cr.TimeMet = cr.Ours.Seconds <= cr.Rsync.Seconds
}

// parseCases reads --cases: a comma list of case names, or all.
func parseCases(s string) ([]updateCase, error) {
	if strings.TrimSpace(s) == "all" {
		return updateCases, nil
	}
	var out []updateCase
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		k := slices.IndexFunc(updateCases, func(c updateCase) bool { return c.name == name })
		if k < 0 {
			return nil, cliutil.Usagef("--cases: no case %q: want overwrite, insert, delete, append, folder or all", name)
		}
		if !slices.ContainsFunc(out, func(c updateCase) bool { return c.name == name }) {
			out = append(out, updateCases[k])
		}
	}
	return out, nil
}

func runUpdate(c *cli.Context) error {
	size, err := cliutil.FlagSize(c, "size", 2<<20, 0)
	if err != nil {
		return err
	}
	fileSize, err := cliutil.FlagSize(c, "file-size", 1, 0)
	if err != nil {
		return err
	}
	files, repeat := c.Int("files"), c.Int("repeat")
	if files < 10 || files > 100000 {
		return cliutil.Usagef("--files %d: want 10 to 100000", files)
	}
	if repeat < 1 || repeat > 100 {
		return cliutil.Usagef("--repeat %d: want 1 to 100", repeat)
	}
	cases, err := parseCases(c.String("cases"))
	if err != nil {
		return err
	}
	uc := &updateConfig{size: size, fileSize: fileSize, files: files, seed: c.Uint64("seed"),
		ours: c.Bool("ours"), keep: c.Bool("keep"), v1Fetched: c.Bool("v1-fetched"), logf: cliutil.StepLog(c)}
	rep := updateReport{Size: size, Files: files, FileSize: fileSize, Repeat: repeat, Seed: uc.seed, V1Fetched: uc.v1Fetched}
	if rep.Rsync, err = rsyncVersion(); err != nil {
		return err
	}
	ctx, stop := cliutil.SignalContext()
	defer stop()
	if uc.self, err = os.Executable(); err != nil {
		return err
	}
	// The seed cuts content-defined blocks by default (this same build).
	rep.ContentDefined = uc.ours
	dir, done, err := cliutil.WorkFolder(c, "bench-update")
	if err != nil {
		return err
	}
	if uc.keep && c.String("dir") == "" {
		done = func() {}
		fmt.Fprintf(c.App.ErrWriter, "work folder (kept): %s\n", dir)
	}
	defer done()
	uc.dir = dir
	if err := os.MkdirAll(filepath.Join(dir, "v2"), 0o755); err != nil {
		return err
	}
	daemon, err := startRsyncDaemon(ctx, dir, filepath.Join(dir, "v2"))
	if err != nil {
		return err
	}
	defer daemon.stop()
	for _, cs := range cases {
		cr, err := uc.runCase(ctx, daemon, cs, repeat)
		if err != nil {
			return err
		}
		rep.Cases = append(rep.Cases, cr)
	}
	if c.Bool("json") {
		return cliutil.WriteJSON(c.App.Writer, rep)
	}
	printUpdate(c.App.Writer, &rep)
	return nil
}

// runCase writes case cs's v1 and v2 and updates fresh copies of v1 to v2
// repeat times with rsync and (unless --ours=false) with reconcile, in turn.
func (uc *updateConfig) runCase(ctx context.Context, daemon *rsyncDaemon, cs updateCase, repeat int) (*updateCaseReport, error) {
	top := updateFileName
	what := cliutil.HumanBytes(uc.size) + " file"
	if cs.folder {
		top = updateFolderName
		what = fmt.Sprintf("folder of %d files of %s", uc.files, cliutil.HumanBytes(uc.fileSize))
	}
	rel := filepath.Join(cs.name, top)
	v1, v2 := filepath.Join(uc.dir, "v1", rel), filepath.Join(uc.dir, "v2", rel)
	uc.logf("%s: writing v1 and v2, a %s...\n", cs.name, what)
	if err := writeUpdateCase(cs, v1, v2, uc.size, uc.files, uc.fileSize, uc.seed); err != nil {
		return nil, fmt.Errorf("bench update: %s: %w", cs.name, err)
	}
	cr := &updateCaseReport{Case: cs.name, Change: cs.change, Rsync: &updateSide{}}
	if cs.folder {
		p := planFolder(uc.files, uc.seed)
		cr.Change = fmt.Sprintf("%d renamed, %d rewritten with new bytes, %d deleted, %d added",
			len(p.renamed), len(p.changed), len(p.deleted), p.added)
	}
	var err error
	if cr.V1Bytes, err = treeBytes(v1); err != nil {
		return nil, err
	}
	if cr.V2Bytes, err = treeBytes(v2); err != nil {
		return nil, err
	}
	if uc.ours {
		cr.Ours = &updateSide{}
	}
	// A fresh copy of v1 in folder side of the case's work folder: out is
	// where the update goes (the copy, or the folder that holds it).
	fresh := func(side string) (copyPath, out string, err error) {
		base := filepath.Join(uc.dir, side, cs.name)
		if err := os.RemoveAll(base); err != nil {
			return "", "", err
		}
		if err := os.MkdirAll(base, 0o755); err != nil {
			return "", "", err
		}
		copyPath = filepath.Join(base, top)
		if err := copyTree(v1, copyPath); err != nil {
			return "", "", err
		}
		if cs.folder {
			return copyPath, base, nil
		}
		return copyPath, copyPath, nil
	}
	rsyncOne := func() error {
		dest, _, err := fresh("rsync")
		if err != nil {
			return err
		}
		st, secs, err := daemon.rsyncRun(ctx, rel, dest, cs.folder)
		if err != nil {
			return err
		}
		if err := sameTree(dest, v2); err != nil {
			return fmt.Errorf("bench update: rsync: %w", err)
		}
		cr.Rsync.add(updateRun{sent: st.Sent, received: st.Received, reused: st.Matched, seconds: secs})
		uc.logf("    rsync      %10s in %.2f s\n", cliutil.HumanBytes(st.Sent+st.Received), secs)
		return nil
	}
	oursOne := func() error {
		_, out, err := fresh("ours")
		if err == nil && uc.v1Fetched {
			err = uc.fetchV1(ctx, v1, out)
		}
		if err != nil {
			return err
		}
		r, err := uc.oursRun(ctx, v2, out, cs.folder)
		if err != nil {
			return fmt.Errorf("bench update: %s: %w", cs.name, err)
		}
		cr.Ours.add(r)
		cr.AvgBlock = r.avgBlock
		uc.logf("    reconcile  %10s in %.2f s\n", cliutil.HumanBytes(r.bytes()), r.seconds)
		return nil
	}
	for k := range repeat {
		uc.logf("  repetition %d of %d\n", k+1, repeat)
		order := []func() error{rsyncOne}
		if uc.ours {
			order = append(order, oursOne)
			if compareFirst(k) { // reconcile first in odd repetitions
				slices.Reverse(order)
			}
		}
		for _, run := range order {
			if err := run(); err != nil {
				return nil, err
			}
		}
	}
	cr.Rsync.finish()
	if cr.Ours != nil {
		cr.Ours.finish()
	}
	cr.compare(cs.folder)
	if !uc.keep {
		for _, side := range []string{"v1", "v2", "rsync", "ours"} {
			os.RemoveAll(filepath.Join(uc.dir, side, cs.name))
		}
	}
	return cr, nil
}

// treeBytes is the bytes of the files under root (root itself if a file).
func treeBytes(root string) (int64, error) {
	files, err := treeFiles(root)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(root, f))
		if err != nil {
			return 0, err
		}
		n += fi.Size()
	}
	return n, nil
}

// printUpdate prints the report as a table, a case a line, and what the
// cases and the goals are.
func printUpdate(w io.Writer, rep *updateReport) {
	reps := "1 repetition"
	if rep.Repeat > 1 {
		reps = fmt.Sprintf("medians of %d repetitions", rep.Repeat)
	}
	ours := len(rep.Cases) > 0 && rep.Cases[0].Ours != nil
	who := "reconcile"
	if ours && rep.ContentDefined {
		who += " (content-defined blocks)"
	} else if ours {
		who += " (fixed-size blocks)"
	}
	if ours && rep.V1Fetched {
		who += ", v1 fetched with reconcile"
	}
	fmt.Fprintf(w, "update of an older copy to v2 on loopback: %s against %s, %s\n", who, shortRsyncVersion(rep.Rsync), reps)
	const row = "%-10s %9s %9s %6s %9s %4s   %7s %9s %6s %4s\n"
	fmt.Fprintf(w, "%-10s %s   %s\n", "", ruler("bytes sent + received", 41), ruler("time to v2", 29))
	fmt.Fprintf(w, row, "case", "rsync", "reconcile", "ratio", "goal", "met", "rsync", "reconcile", "ratio", "met")
	met := func(goal, ok bool) string {
		switch {
		case !goal:
			return "-"
		case ok:
			return "yes"
		}
		return "NO"
	}
	for _, cr := range rep.Cases {
		rsyncSecs := fmt.Sprintf("%.2fs", cr.Rsync.Seconds)
		if cr.Ours == nil {
			fmt.Fprintf(w, row, cr.Case, cliutil.HumanBytes(cr.Rsync.Bytes), "-", "-", "-", "-", rsyncSecs, "-", "-", "-")
			continue
		}
		fmt.Fprintf(w, row, cr.Case, cliutil.HumanBytes(cr.Rsync.Bytes), cliutil.HumanBytes(cr.Ours.Bytes),
			fmt.Sprintf("%.2fx", cr.BytesRatio), cliutil.HumanBytes(cr.BytesGoal), met(true, cr.BytesMet),
			rsyncSecs, fmt.Sprintf("%.2fs", cr.Ours.Seconds), fmt.Sprintf("%.2fx", cr.TimeRatio), met(cr.TimeGoal, cr.TimeMet))
	}
	fmt.Fprintln(w, "cases:")
	for _, cr := range rep.Cases {
		what := fmt.Sprintf("a %s file", cliutil.HumanBytes(rep.Size))
		if cr.Case == "folder" {
			what = fmt.Sprintf("a folder of %d files of %s", rep.Files, cliutil.HumanBytes(rep.FileSize))
		}
		fmt.Fprintf(w, "  %-10s %s, %s\n", cr.Case, what, cr.Change)
		if cr.Ours != nil {
			fmt.Fprintf(w, "  %-10s kept from v1: rsync %s, reconcile %s; reconcile's average block %s\n", "",
				cliutil.HumanBytes(cr.Rsync.Reused), cliutil.HumanBytes(cr.Ours.Reused), cliutil.HumanBytes(int64(cr.AvgBlock)))
		}
	}
	fmt.Fprintln(w, "bytes: the client's, sent + received (rsync --stats; the fetch's wire bytes); ratio: reconcile / rsync")
	fmt.Fprintln(w, "goals: bytes at most max(1.5 x rsync, rsync + 2 average blocks), for the folder 1.5 x rsync;")
	fmt.Fprintln(w, "       time (the client process's, to a verified v2) at most rsync's, for a file")
	if !ours {
		fmt.Fprintln(w, "reconcile: not run (--ours=false)")
	}
}

// shortRsyncVersion makes "rsync version 3.2.7 protocol version 31" into
// "rsync 3.2.7".
func shortRsyncVersion(v string) string {
	f := strings.Fields(v)
	if len(f) >= 3 && f[0] == "rsync" && f[1] == "version" {
		return "rsync " + f[2]
	}
	return v
}

// ruler centres label in a line of dashes width wide: "--- label ---".
func ruler(label string, width int) string {
	d := max(width-len(label)-2, 2)
	return strings.Repeat("-", d/2) + " " + label + " " + strings.Repeat("-", d-d/2)
}
