// Package outlock is the lock that keeps two writers off one output: a file
// lock (flock(2) on Unix, LockFileEx on Windows, through github.com/gofrs/flock)
// on a file in the output's state folder, which the operating system releases
// when its holder exits, however it exits, so a lock is never left stale; and
// beside it a line naming the holder, for the next taker to read.
package outlock

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
)

// The names of the lock file and of the line naming its holder, in the state
// folder.
const (
	lockFile  = "lock"
	ownerFile = "lock.owner"
)

// HeldError is the error of Take when another process, or another Lock of
// this one, holds the lock.
type HeldError struct {
	// Owner is the holder's line, or "another process" if it wrote none.
	Owner string
}

func (e *HeldError) Error() string { return "lock held by " + e.Owner }

// Lock is a held lock.
type Lock struct {
	fl *flock.Flock
}

// Take takes the lock of the state folder dir (dir/lock), creating dir if
// needed, and writes owner, a line that tells who holds it, beside it. If the
// lock is held, it fails at once with a *HeldError that quotes the holder's
// line.
func Take(dir, owner string) (*Lock, error) {
	for attempt := 0; ; attempt++ {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, lockFile)
		fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR))
		ok, err := fl.TryLock()
		if err != nil {
			return nil, err
		}
		if !ok {
			fl.Close()
			who := "another process"
			if b, err := os.ReadFile(filepath.Join(dir, ownerFile)); err == nil && len(strings.TrimSpace(string(b))) > 0 {
				who = strings.TrimSpace(string(b))
			}
			return nil, &HeldError{Owner: who}
		}
		// The file locked must still be the one at its path: a holder that
		// abandoned the lock (Abandon) may have removed it between this
		// taker's open and its lock, and a taker after that makes another.
		if held, err := fl.Stat(); err == nil {
			if now, err := os.Stat(path); err == nil && os.SameFile(held, now) {
				// Best effort: the lock holds whether or not the line is written.
				os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner+"\n"), 0o644)
				return &Lock{fl: fl}, nil
			}
		}
		fl.Unlock()
		if attempt == 3 {
			return nil, fmt.Errorf("lock file %s keeps being removed", path)
		}
	}
}

// Unlock releases the lock. The lock file stays (removing it could let two
// takers lock two different files).
func (l *Lock) Unlock() error { return l.fl.Unlock() }

// Abandon releases the lock and, when its state folder holds nothing but the
// lock file and the holder's line, removes them and the folder: for a state
// folder Take made beside an output that turned out to live elsewhere (a
// file's, where the output is a folder). A state folder that holds more keeps
// its lock file, as Unlock does.
func (l *Lock) Abandon() error {
	dir := filepath.Dir(l.fl.Path())
	entries, err := os.ReadDir(dir)
	if uerr := l.fl.Unlock(); uerr != nil {
		return uerr
	}
	if err != nil {
		return nil // nothing removed
	}
	for _, e := range entries {
		if n := e.Name(); n != lockFile && n != ownerFile {
			return nil
		}
	}
	for _, n := range []string{ownerFile, lockFile} {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
