package labbench

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needRsync skips a test where rsync is not installed.
func needRsync(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Skip("rsync is not installed")
	}
}

// TestParseRsyncStats reads rsync 3.5.0's --stats of this bench's insert
// and folder cases (testdata), the same figures with another locale's
// thousands separators and without, and refuses what is not a count.
func TestParseRsyncStats(t *testing.T) {
	file := string(readAll(t, "testdata/rsync-stats-file.txt"))
	folder := string(readAll(t, "testdata/rsync-stats-folder.txt"))
	for _, tc := range []struct {
		name, out string
		want      rsyncStats
		err       string
	}{
		{"file", file, rsyncStats{Sent: 40601, Received: 30076, Literal: 6816, Matched: 33548640}, ""},
		{"folder", folder, rsyncStats{Sent: 6251, Received: 4195834, Literal: 4194304}, ""},
		{"dots", strings.ReplaceAll(file, ",", "."), rsyncStats{Sent: 40601, Received: 30076, Literal: 6816, Matched: 33548640}, ""},
		{"apostrophes", strings.ReplaceAll(folder, ",", "'"), rsyncStats{Sent: 6251, Received: 4195834, Literal: 4194304}, ""},
		{"no-break spaces", strings.ReplaceAll(folder, ",", "\u202f"), rsyncStats{Sent: 6251, Received: 4195834, Literal: 4194304}, ""},
		{"plain", strings.ReplaceAll(file, ",", ""), rsyncStats{Sent: 40601, Received: 30076, Literal: 6816, Matched: 33548640}, ""},
		{"no received", strings.Replace(file, "Total bytes received", "Total bytes rcvd", 1), rsyncStats{}, `no "Total bytes received" line`},
		{"human-readable", strings.Replace(file, "Total bytes sent: 40,601", "Total bytes sent: 39.65K", 1), rsyncStats{}, `"39.65K" is not a count`},
		{"misgrouped", strings.Replace(file, "Total bytes sent: 40,601", "Total bytes sent: 40,60", 1), rsyncStats{}, `"40,60" is not a count`},
		{"empty", "", rsyncStats{}, `no "Total bytes sent" line`},
	} {
		got, err := parseRsyncStats(tc.out)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %s", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// TestUpdateRsyncHalf updates copies of v1 from a real rsync daemon on
// loopback: a 4 MiB file with 1 MiB overwritten, and a folder of 10 files
// (one renamed, one rewritten, one deleted, one added); each copy must be v2
// afterwards, and the figures those of a delta transfer.
func TestUpdateRsyncHalf(t *testing.T) {
	needRsync(t)
	ctx := context.Background()
	dir := t.TempDir()
	d, err := startRsyncDaemon(ctx, dir, filepath.Join(dir, "v2"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.stop()
	const size, files, fileSize = 4 << 20, 10, 256 << 10
	for _, c := range []updateCase{updateCases[0], updateCases[4]} {
		top := updateFileName
		if c.folder {
			top = updateFolderName
		}
		rel := filepath.Join(c.name, top)
		v1, v2, dest := filepath.Join(dir, "v1", rel), filepath.Join(dir, "v2", rel), filepath.Join(dir, "rsync", rel)
		if err := writeUpdateCase(c, v1, v2, size, files, fileSize, 1); err != nil {
			t.Fatal(err)
		}
		if err := copyTree(v1, dest); err != nil {
			t.Fatal(err)
		}
		if err := sameTree(dest, v2); !errors.Is(err, errNotV2) {
			t.Fatalf("%s: v1 is v2 (%v)", c.name, err)
		}
		st, secs, err := d.rsyncRun(ctx, rel, dest, c.folder)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameTree(dest, v2); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: %+v in %.2f s", c.name, st, secs)
		if secs <= 0 || st.Sent <= 0 || st.Received <= 0 {
			t.Errorf("%s: %+v in %.2f s", c.name, st, secs)
		}
		if c.folder {
			// The renamed file has no basis of its name, the rewritten
			// one no match in its basis, the added one no basis.
			if st.Literal != 3*fileSize || st.Matched != 0 || st.Received < 3*fileSize || st.Received > 3*fileSize+fileSize/8 {
				t.Errorf("folder: %+v, want 3 files' literal data", st)
			}
			continue
		}
		if st.Literal < 1<<20 || st.Literal > 1<<20+64<<10 || st.Matched != size-st.Literal || st.Sent+st.Received > 1<<20+128<<10 {
			t.Errorf("overwrite: %+v, want about 1 MiB literal, the rest matched", st)
		}
	}
}
