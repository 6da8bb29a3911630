package chunker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
)

// The names of an output's lock file and of the line naming its holder, in its
// state folder.
const (
	lockFile  = "lock"
	ownerFile = "lock.owner"
)

// OutputLock is the lock of one output, taken by LockOutput so that two fetches
// never write the same output at once. The operating system releases it when
// its owner exits, however it exits, so a lock is never left stale.
type OutputLock struct {
	fl *flock.Flock
}

// LockOutput takes the lock of an output: the folder out (file false; the lock
// is out/.reconcile/lock) or the single file out (file true;
// out.reconcile/lock), creating the state folder if needed. owner is a line
// that tells who holds it (such as "reconcile fetch, pid 4242, since 10:02:11");
// it is written beside the lock file for the next taker to read. If another
// process, or another OutputLock of this one, holds the lock, LockOutput fails
// at once with an error wrapping ErrLocked that quotes the holder's line.
func LockOutput(out string, file bool, owner string) (*OutputLock, error) {
	dir := filepath.Join(out, MetaDir)
	if file {
		dir = filepath.Clean(out) + MetaDir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chunker: lock %s: %w", out, err)
	}
	name := filepath.Join(dir, lockFile)
	fl := flock.New(name, flock.SetFlag(os.O_CREATE|os.O_RDWR))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("chunker: lock %s: %w", out, err)
	}
	if !ok {
		who := "another process"
		if b, err := os.ReadFile(filepath.Join(dir, ownerFile)); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			who = strings.TrimSpace(string(b))
		}
		return nil, fmt.Errorf("%w: %s is being written by %s", ErrLocked, out, who)
	}
	// Best effort: the lock holds whether or not the line is written.
	os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner+"\n"), 0o644)
	return &OutputLock{fl: fl}, nil
}

// Unlock releases the lock. The lock file stays (removing it could let two
// takers lock two different files).
func (l *OutputLock) Unlock() error {
	if l == nil || l.fl == nil {
		return errors.New("chunker: unlock: no lock")
	}
	return l.fl.Unlock()
}
