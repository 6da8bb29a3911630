package labbench

// The reconcile half of reconcile bench update: a seed process of v2 and a
// fetch process into a copy of v1, and the figures of the fetch's JSON.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/reconcile-p2p/reconcile/peer"
)

// errOldFetch marks what a reconcile build lacks whose fetch cannot yet
// update an older version of the content in place.
var errOldFetch = errors.New("build one with fetch-into-older-version, or leave it out with --ours=false")

// updateFetchSummary is what reconcile fetch --json prints, with the
// figures of an update. They are pointers: a build that does not report
// them is told apart from one that reports zero.
type updateFetchSummary struct {
	peer.Summary
	// WireReceived and WireSent are the bytes the fetch received and sent
	// on its connections, everything counted (filters, requests, blocks,
	// framing).
	WireReceived *int64 `json:"wire_bytes_received"`
	WireSent     *int64 `json:"wire_bytes_sent"`
	// Reused is the bytes of the content the fetch took from the older
	// version at --out rather than from peers.
	Reused *int64 `json:"reused_bytes"`
}

// missing returns the update figures s lacks, by their JSON names.
func (s *updateFetchSummary) missing() []string {
	var names []string
	for _, f := range []struct {
		name string
		v    *int64
	}{{"wire_bytes_received", s.WireReceived}, {"wire_bytes_sent", s.WireSent}, {"reused_bytes", s.Reused}} {
		if f.v == nil {
			names = append(names, f.name)
		}
	}
	return names
}

// updateRun is one update's figures, either side's.
type updateRun struct {
	sent, received int64
	seconds        float64
	// reused is the v1 bytes the update kept: reconcile's reused_bytes,
	// rsync's matched data.
	reused int64
	// avgBlock is the content's average block (reconcile only).
	avgBlock float64
}

// bytes is the update's traffic, both ways.
func (r updateRun) bytes() int64 { return r.sent + r.received }

// oursRun updates out to v2 with reconcile: a seed process of v2 (its
// start, chunking v2, is not timed), then a timed fetch process into out
// (a copy of v1: out is the file, or the folder that holds v1's folder
// under v2's name; with the folder, fetch --delete).
// It checks that out then holds v2, byte for byte, and that the fetch
// reported the update's figures (errOldFetch if not).
func (uc *updateConfig) oursRun(ctx context.Context, v2, out string, folder bool) (updateRun, error) {
	tks, _, stopSeed, err := benchSeedsAll(ctx, uc.self, uc.dir, []string{v2}, 0, nil)
	if err != nil {
		return updateRun{}, err
	}
	defer stopSeed()
	more := []string{"--progress", "none"}
	if folder {
		more = append(more, "--delete")
	}
	var sum updateFetchSummary
	secs, _, _, err := runFetch(ctx, uc.self, tks[0], nil, out, more, &sum)
	if err != nil {
		if strings.Contains(err.Error(), "already exists") {
			// "create OUT: file already exists": the fetch of a build
			// that writes only new files.
			return updateRun{}, fmt.Errorf("this reconcile build's fetch refuses an existing --out, so it cannot update an older copy: %w", errOldFetch)
		}
		return updateRun{}, err
	}
	got := out
	if folder {
		got = filepath.Join(out, filepath.Base(v2))
	}
	if err := sameTree(got, v2); err != nil {
		return updateRun{}, err
	}
	if m := sum.missing(); len(m) > 0 {
		return updateRun{}, fmt.Errorf("this reconcile build reports no %s: %w", strings.Join(m, ", "), errOldFetch)
	}
	r := updateRun{sent: *sum.WireSent, received: *sum.WireReceived, reused: *sum.Reused, seconds: secs}
	if sum.Blocks > 0 {
		r.avgBlock = float64(sum.Bytes) / float64(sum.Blocks)
	}
	return r, nil
}

// fetchV1 makes out (a fresh copy of v1) what a reconcile user holds of v1:
// a reconcile fetch of it, its manifest kept (the copy is replaced, and its
// blocks reused). It is not timed.
func (uc *updateConfig) fetchV1(ctx context.Context, v1, out string) error {
	tks, _, stopSeed, err := benchSeedsAll(ctx, uc.self, uc.dir, []string{v1}, 0, nil)
	if err != nil {
		return err
	}
	defer stopSeed()
	var sum updateFetchSummary
	if _, _, _, err := runFetch(ctx, uc.self, tks[0], nil, out, []string{"--progress", "none"}, &sum); err != nil {
		return fmt.Errorf("fetch v1: %w", err)
	}
	return nil
}
