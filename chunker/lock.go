package chunker

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/reconcile-p2p/reconcile/chunker/internal/outlock"
)

// OutputLock is the lock of one output, taken by LockOutput so that two fetches
// never write the same output at once. The operating system releases it when
// its owner exits, however it exits, so a lock is never left stale.
type OutputLock struct {
	l *outlock.Lock
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
	l, err := outlock.Take(dir, owner)
	var held *outlock.HeldError
	if errors.As(err, &held) {
		return nil, fmt.Errorf("%w: %s is being written by %s", ErrLocked, out, held.Owner)
	}
	if err != nil {
		return nil, fmt.Errorf("chunker: output %s: %w", out, err)
	}
	return &OutputLock{l: l}, nil
}

// Unlock releases the lock. The lock file stays (removing it could let two
// takers lock two different files).
func (l *OutputLock) Unlock() error {
	if l == nil || l.l == nil {
		return errors.New("chunker: unlock: no lock")
	}
	return l.l.Unlock()
}

// Abandon releases the lock of an output that turned out to live elsewhere,
// such as a single file's lock (OUT.reconcile) where the content is a folder
// (OUT/), and removes the state folder LockOutput made for it if it holds
// nothing but the lock.
func (l *OutputLock) Abandon() error {
	if l == nil || l.l == nil {
		return errors.New("chunker: abandon: no lock")
	}
	return l.l.Abandon()
}
