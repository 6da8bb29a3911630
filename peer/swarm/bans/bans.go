// Package bans keeps the bans of a fetch in its store's state folder
// (File), so that a fetch resumed on the store bans the same peers again
// for the rest of their time.
package bans

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/serve"
)

// File is the name of the file in a fetch store's state folder
// (chunker.Store.StateDir) where a fetch keeps the peers it dropped and banned
// for misbehaving (corrupt blocks, malformed messages, offers it never
// sends) and until when. A fetch resumed on that store (after a crash, an
// interruption, or a peer that left and came back with a new service) bans
// them again for the rest of their time, so that it does not take a liar's
// corrupt blocks twice. The file is removed once the store is complete.
const File = "bans.json"

// maxBanFileBytes bounds how much of a ban file is read: maxBanned entries
// of a peer id (at most about 100 characters in base58) and a time.
const maxBanFileBytes = serve.MaxBanned * 200

// A savedBan is one entry of a ban file.
type savedBan struct {
	Peer  string    `json:"peer"`
	Until time.Time `json:"until"`
}

// readBans returns the bans in the ban file at path that are still running
// at now, none if there is no such file. A ban is cut to end at most banFor
// after now (a file from a wrong clock bans no one for ever); entries with
// an unknown peer id are skipped. A file that is not a ban file is an error
// (the caller goes on without it: the bans only spare it corrupt blocks).
func readBans(path string, now time.Time) (map[lpeer.ID]time.Time, error) {
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxBanFileBytes+1))
	if err != nil {
		return nil, err
	}
	return parseBans(b, now)
}

// parseBans decodes a ban file's bytes (see readBans).
func parseBans(b []byte, now time.Time) (map[lpeer.ID]time.Time, error) {
	if len(b) > maxBanFileBytes {
		return nil, fmt.Errorf("peer: ban file over %d bytes", maxBanFileBytes)
	}
	var saved []savedBan
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("peer: ban file: %w", err)
	}
	bans := make(map[lpeer.ID]time.Time, min(len(saved), serve.MaxBanned))
	for _, s := range saved {
		id, err := lpeer.Decode(s.Peer)
		if err != nil || !s.Until.After(now) {
			continue
		}
		bans[id] = minTime(s.Until, now.Add(serve.BanFor))
		if len(bans) == serve.MaxBanned {
			break
		}
	}
	return bans, nil
}

// writeBans replaces the ban file at path with bans (those still running at
// now), earliest end first. It writes a new file and renames it over the
// old, so that a crash leaves one or the other whole.
func writeBans(path string, bans map[lpeer.ID]time.Time, now time.Time) error {
	saved := make([]savedBan, 0, len(bans))
	for id, until := range bans {
		if until.After(now) {
			saved = append(saved, savedBan{Peer: id.String(), Until: until.UTC()})
		}
	}
	sort.Slice(saved, func(i, j int) bool {
		if !saved[i].Until.Equal(saved[j].Until) {
			return saved[i].Until.Before(saved[j].Until)
		}
		return saved[i].Peer < saved[j].Peer
	})
	b, err := json.MarshalIndent(saved, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), File+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// banFilePath is the ban file of a store, "" for a store without a state
// folder (a seed's).
func banFilePath(st *chunker.Store) string {
	dir := st.StateDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, File)
}

// Remove removes the ban file of a complete store: no fetch will
// read it, and the store's state folder goes with its last file
// (chunker.Store.RemoveState).
func Remove(st *chunker.Store, log *slog.Logger) {
	path := banFilePath(st)
	if path == "" || !st.Complete() {
		return
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("could not remove the saved bans", "file", path, "err", err)
	}
}

// Saved is the ban file of a fetch's store: the bans of this fetch and
// of earlier ones on the same store, so that a resumed fetch does not ask
// again a peer that sent it corrupt blocks. Safe for concurrent use.
type Saved struct {
	path string // "" for a store without a state folder: nothing is kept
	clk  clock.Clock
	log  *slog.Logger

	mu    sync.Mutex
	saved map[lpeer.ID]time.Time
}

// Open returns the ban file of st.
func Open(st *chunker.Store, clk clock.Clock, log *slog.Logger) *Saved {
	return &Saved{path: banFilePath(st), clk: clk, log: log}
}

// Load reads the bans an earlier fetch on the same store saved, those
// still running, soonest to end first.
func (b *Saved) Load() (ids []lpeer.ID, until map[lpeer.ID]time.Time) {
	if b.path == "" {
		return nil, nil
	}
	bans, err := readBans(b.path, b.clk.Now())
	if err != nil {
		b.log.Warn("ignoring the saved bans", "file", b.path, "err", err)
		return nil, nil
	}
	b.mu.Lock()
	b.saved = maps.Clone(bans)
	b.mu.Unlock()
	ids = make([]lpeer.ID, 0, len(bans))
	for id := range bans {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return bans[ids[i]].Before(bans[ids[j]]) })
	return ids, bans
}

// Save records that the fetch banned id until then.
func (b *Saved) Save(id lpeer.ID, until time.Time) {
	if b.path == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.saved == nil {
		b.saved = make(map[lpeer.ID]time.Time)
	}
	now := b.clk.Now()
	for k, u := range b.saved {
		if !u.After(now) {
			delete(b.saved, k)
		}
	}
	if len(b.saved) >= serve.MaxBanned {
		return
	}
	b.saved[id] = until
	if err := writeBans(b.path, b.saved, now); err != nil {
		b.log.Warn("could not save a ban", "file", b.path, "peer", id, "err", err)
	}
}

// Hint adds to err, the fetch's wire.ErrNoPeers, how many peers this fetch and
// earlier ones on its store banned that stay banned, and where those bans
// are kept: a user whose seed sent corrupt blocks (a disk error) learns why
// it is not asked again.
func (b *Saved) Hint(err error) error {
	if b.path == "" {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n, last := 0, time.Time{}
	now := b.clk.Now()
	for _, u := range b.saved {
		if u.After(now) {
			n++
			if u.After(last) {
				last = u
			}
		}
	}
	if n == 0 {
		return err
	}
	peers := "1 peer"
	if n > 1 {
		peers = fmt.Sprintf("%d peers", n)
	}
	return fmt.Errorf("%w; %s banned for misbehaving until %s at the latest (remove %s to trust them again)",
		err, peers, last.Local().Format("15:04:05"), b.path)
}
