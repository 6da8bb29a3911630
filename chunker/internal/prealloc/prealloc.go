// Package prealloc reserves the disk space of a file before its bytes are
// written, where the system can (fallocate(2) on Linux), so that a disk too
// small for a download fails as its files are created rather than partway
// through. Elsewhere, or on a file system that cannot, files stay sparse and a
// full disk shows when a block is written.
package prealloc

import "fmt"

// NoSpaceError is the error of Reserve when the disk is too small for the file.
type NoSpaceError struct {
	Need int64 // the bytes asked for
	Free int64 // the bytes free, -1 if unknown
}

func (e *NoSpaceError) Error() string {
	if e.Free < 0 {
		return fmt.Sprintf("%d bytes needed", e.Need)
	}
	return fmt.Sprintf("%d bytes needed, %d free", e.Need, e.Free)
}
