// Package update holds the pieces of package testnet's update scenario
// (testnet.Config.Update): every fetching peer holds version 1 of the run's
// file, one seed has version 2, and the peers fetch version 2 from the
// swarm, each taking the blocks version 1 shares with it from its own copy
// (chunker.Store.Reuse) rather than from the network.
//
// Edit makes version 2 from version 1 (a share of the bytes overwritten in
// a few places spread evenly); Compare finds the blocks of version 2 that
// version 1 lacks, whose bytes (B_new) are all the swarm has to move; Older
// gives a peer's folder version 1, as a fetch of it left it, and version
// 2's store staged beside it with the shared blocks taken; Figures is what
// a run reports.
package update

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// Edit returns version 2 of v1: a copy with n = fraction × len(v1) of its
// bytes (rounded) changed, in places runs of n/places bytes each (the first
// n mod places one byte longer), run k centred in the k-th of places equal
// spans of the file. Every byte of a run is XORed with a non-zero byte drawn
// from seed, so each one changes, and the same arguments give the same
// bytes. fraction is clamped to [0, 1]; places below 1 counts as 1, and
// above n as n (a run holds a byte at least). v1 is not modified.
func Edit(v1 []byte, fraction float64, places int, seed uint64) []byte {
	v2 := append([]byte(nil), v1...)
	if !(fraction > 0) {
		return v2
	}
	size := len(v1)
	n := int(math.Round(min(fraction, 1) * float64(size)))
	if n == 0 {
		return v2
	}
	places = min(max(places, 1), n)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	copy(key[8:], "testnet/update: version 2")
	rng := rand.NewChaCha8(key)
	var x [1]byte
	for k := range places {
		lo, hi := k*size/places, (k+1)*size/places
		run := min(n/places, hi-lo)
		if k < n%places {
			run = min(run+1, hi-lo)
		}
		at := lo + (hi-lo-run)/2
		for i := at; i < at+run; i++ {
			if _, err := rng.Read(x[:]); err != nil || x[0] == 0 {
				x[0] = 0xa5
			}
			v2[i] ^= x[0]
		}
	}
	return v2
}

// Delta is what the blocks of version 2 share with those of version 1.
type Delta struct {
	// New tells, for each block of version 2, whether version 1 lacks it:
	// no block of version 1 has its hash.
	New []bool
	// SharedBlocks counts the blocks of version 2 that version 1 holds
	// (each a block a peer holding version 1 takes from its own copy),
	// NewBlocks the others and NewBytes their bytes (B_new).
	SharedBlocks, NewBlocks int
	NewBytes                int64
}

// Compare finds the blocks of v2 that v1 lacks, by hash (a block is named
// by its hash, wherever it lies in either version). The two manifests must
// cut by the same rule (the same fixed block size, or the same chunking),
// as Store.Reuse cuts an older version by the new one's.
func Compare(v1, v2 *chunker.Manifest) Delta {
	old := make(map[[chunker.HashSize]byte]struct{}, v1.BlockCount())
	for i := range v1.BlockCount() {
		old[v1.BlockHash(i)] = struct{}{}
	}
	d := Delta{New: make([]bool, v2.BlockCount())}
	for i := range v2.BlockCount() {
		if _, ok := old[v2.BlockHash(i)]; ok {
			d.SharedBlocks++
			continue
		}
		d.New[i] = true
		d.NewBlocks++
		d.NewBytes += int64(v2.BlockLen(i))
	}
	return d
}

// Older makes dir the folder of a peer that holds version 1 and is to
// fetch version 2: a complete store of v1, whose blocks are cut from data
// (v1's bytes), with its file at its final name as a fetch of it leaves
// it, and beside it a new store of v2, staged (chunker.WithStaging: its
// file stays under its state folder until Store.Publish replaces version
// 1's), that has taken every block version 1 shares with it from version
// 1's file (Store.Reuse), as package peer's Fetch into a folder holding an
// older version does. opts are more options of v2's store. It returns v2's
// store, open, and what Reuse took.
func Older(ctx context.Context, dir string, v1 *chunker.Manifest, data []byte, v2 *chunker.Manifest, opts ...chunker.StoreOption) (*chunker.Store, chunker.ReuseStats, error) {
	var st chunker.ReuseStats
	if int64(len(data)) != v1.TotalSize() {
		return nil, st, fmt.Errorf("update: %d bytes for version 1, whose manifest has %d", len(data), v1.TotalSize())
	}
	old, err := chunker.CreateStore(ctx, dir, v1, chunker.WithSyncEvery(1<<30))
	if err != nil {
		return nil, st, fmt.Errorf("update: version 1: %w", err)
	}
	for i := range v1.BlockCount() {
		off, n := v1.BlockSpan(i)
		if err := old.PutBlock(i, data[off:off+int64(n)]); err != nil {
			old.Close()
			return nil, st, fmt.Errorf("update: version 1: %w", err)
		}
	}
	if err := old.Close(); err != nil {
		return nil, st, fmt.Errorf("update: version 1: %w", err)
	}
	s, err := chunker.CreateStore(ctx, dir, v2, append(opts, chunker.WithStaging())...)
	if err != nil {
		return nil, st, fmt.Errorf("update: version 2: %w", err)
	}
	if st, err = s.Reuse(ctx, []string{s.FinalPath(v2.Top())}, nil); err != nil {
		s.Close()
		return nil, st, fmt.Errorf("update: version 2: %w", err)
	}
	return s, st, nil
}
