package labbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseCases: a comma list in the order given, once each, or all.
func TestParseCases(t *testing.T) {
	names := func(cs []updateCase) (s []string) {
		for _, c := range cs {
			s = append(s, c.name)
		}
		return s
	}
	if cs, err := parseCases("all"); err != nil || len(cs) != 5 {
		t.Errorf("all: %v, %v", names(cs), err)
	}
	if cs, err := parseCases("folder, insert,folder"); err != nil || !slices.Equal(names(cs), []string{"folder", "insert"}) {
		t.Errorf("folder, insert,folder: %v, %v", names(cs), err)
	}
	if _, err := parseCases("overwrite,rename"); err == nil || !strings.Contains(err.Error(), `no case "rename"`) {
		t.Errorf("rename: %v", err)
	}
}

// TestUpdateGoals: the bytes goal is max(1.5 x rsync, rsync + 2 blocks)
// for a file and 1.5 x rsync for the folder; the time goal is a file's
// only; the table says which goals a run met.
func TestUpdateGoals(t *testing.T) {
	side := func(b int64, s float64) *updateSide { return &updateSide{Bytes: b, Seconds: s} }
	small := &updateCaseReport{Case: "insert", Rsync: side(40000, 0.5), Ours: side(300000, 0.4), AvgBlock: 128 << 10}
	small.compare(false)
	if small.BytesGoal != 40000+256<<10 || !small.BytesMet || !small.TimeGoal || !small.TimeMet {
		t.Errorf("insert: %+v", small)
	}
	large := &updateCaseReport{Case: "overwrite", Rsync: side(1100000, 0.5), Ours: side(1700000, 0.6), AvgBlock: 128 << 10}
	large.compare(false)
	if large.BytesGoal != 1650000 || large.BytesMet || large.TimeMet {
		t.Errorf("overwrite: %+v", large)
	}
	folder := &updateCaseReport{Case: "folder", Rsync: side(4200000, 0.2), Ours: side(5000000, 0.3), AvgBlock: 128 << 10}
	folder.compare(true)
	if folder.BytesGoal != 6300000 || !folder.BytesMet || folder.TimeGoal {
		t.Errorf("folder: %+v", folder)
	}
	var b bytes.Buffer
	printUpdate(&b, &updateReport{Size: 32 << 20, Files: 20, FileSize: 1 << 20, Repeat: 5, Rsync: "rsync version 3.2.7 protocol version 31",
		ContentDefined: true, Cases: []*updateCaseReport{small, large, folder}})
	out := b.String()
	for _, want := range []string{"content-defined blocks) against rsync 3.2.7, medians of 5 repetitions",
		"insert      39.1 KiB   293 KiB  7.50x 295.1 KiB  yes     0.50s     0.40s  0.80x  yes",
		"overwrite      1 MiB   1.6 MiB  1.55x   1.6 MiB   NO     0.50s     0.60s  1.20x   NO",
		"folder         4 MiB   4.8 MiB  1.19x     6 MiB  yes     0.20s     0.30s  1.50x    -"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

// TestUpdateOursHalf runs reconcile's half of the insert and folder cases:
// a seed of v2 and a fetch into a copy of v1, which must end as v2 having
// taken most bytes from v1 and received little more than the new ones.
func TestUpdateOursHalf(t *testing.T) {
	bin := e2eBinary(t)
	ctx := context.Background()
	dir := t.TempDir()
	uc := &updateConfig{self: bin, dir: dir, logf: t.Logf}
	const size, files, fileSize = 2 << 20, 10, 256 << 10
	for _, c := range []updateCase{updateCases[1], updateCases[4]} {
		top := updateFileName
		if c.folder {
			top = updateFolderName
		}
		rel := filepath.Join(c.name, top)
		v1, v2 := filepath.Join(dir, "v1", rel), filepath.Join(dir, "v2", rel)
		if err := writeUpdateCase(c, v1, v2, size, files, fileSize, 1); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "copy", rel)
		copyOld := copyFile
		if c.folder {
			copyOld = copyTree
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyOld(v1, out); err != nil {
			t.Fatal(err)
		}
		if c.folder {
			out = filepath.Dir(out)
		}
		r, err := uc.oursRun(ctx, v2, out, c.folder)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: received %d, sent %d, reused %d bytes", c.name, r.received, r.sent, r.reused)
		if r.reused < size/2 || r.received > size/2 || r.sent <= 0 || r.avgBlock <= 0 || r.seconds <= 0 {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
}

// TestUpdateCommand runs bench update in a short form, rsync only (which
// every build runs), and checks the report; then reconcile too, which
// must compare the two.
func TestUpdateCommand(t *testing.T) {
	needRsync(t)
	bin := e2eBinary(t)
	args := []string{"bench", "update", "--size", "2MiB", "--files", "10", "--file-size", "64KiB", "--json"}
	out, err := exec.Command(bin, append(args, "--repeat", "2", "--ours=false")...).Output()
	if err != nil {
		t.Fatalf("bench update: %v\n%s", err, stderrOf(err))
	}
	var rep updateReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if len(rep.Cases) != 5 || rep.Repeat != 2 || rep.Size != 2<<20 || !strings.HasPrefix(rep.Rsync, "rsync version") {
		t.Fatalf("report of another run: %s", out)
	}
	for _, cr := range rep.Cases {
		r := cr.Rsync
		if r == nil || len(r.Each) != 2 || len(r.EachBytes) != 2 || r.Bytes <= 0 || r.Seconds <= 0 || cr.Ours != nil || cr.V2Bytes <= 0 {
			t.Errorf("%s: %+v, rsync %+v", cr.Case, cr, r)
		}
	}
	cmd := exec.Command(bin, append(args, "--repeat", "1", "--cases", "insert,folder")...)
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("bench update: %v\n%s", err, stderrOf(err))
	}
	rep = updateReport{}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	for _, cr := range rep.Cases {
		if cr.Ours == nil || cr.Ours.Bytes <= 0 || cr.BytesRatio <= 0 || cr.BytesGoal <= 0 || cr.TimeRatio <= 0 {
			t.Errorf("%s: %+v, reconcile %+v", cr.Case, cr, cr.Ours)
		}
	}
	// From a v1 fetched with reconcile: the manifest may come as a delta,
	// so the update costs no more than from a copy.
	copied := rep.Cases[0].Ours.Bytes
	if out, err = exec.Command(bin, append(args, "--repeat", "1", "--cases", "insert", "--v1-fetched")...).Output(); err != nil {
		t.Fatalf("bench update --v1-fetched: %v\n%s", err, stderrOf(err))
	}
	rep = updateReport{}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if !rep.V1Fetched || len(rep.Cases) != 1 || rep.Cases[0].Ours == nil || rep.Cases[0].Ours.Bytes > copied {
		t.Errorf("--v1-fetched: %s (from a copy: %d bytes)", out, copied)
	}
}

// stderrOf returns the standard error of a failed command, if it kept it.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
