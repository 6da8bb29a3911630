package prealloc

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Reserve reserves the disk space of f's first size bytes (fallocate(2),
// keeping the size and any bytes written): a disk too small fails now, with a
// *NoSpaceError. A file system that cannot (EOPNOTSUPP) leaves the file
// sparse.
func Reserve(f *os.File, size int64) error {
	if size <= 0 {
		return nil
	}
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	switch {
	case err == nil, errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		return nil
	case errors.Is(err, unix.ENOSPC):
		var st unix.Statfs_t
		if unix.Fstatfs(int(f.Fd()), &st) == nil {
			return &NoSpaceError{Need: size, Free: int64(st.Bavail) * st.Bsize}
		}
		return &NoSpaceError{Need: size, Free: -1}
	}
	return fmt.Errorf("reserve %d bytes: %w", size, err)
}
