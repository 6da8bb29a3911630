// Package durable writes through an os.Root so that what it wrote survives a
// crash: a whole file replaced at once (WriteFile), or a folder's new entries
// made lasting (SyncDir). A block store's manifest and held log are written
// with it.
package durable

import (
	"os"
	"path"
	"runtime"
)

// WriteFile writes a file through a temporary file (name + ".tmp"), fsync and
// rename, then fsyncs the folder, so that after a crash name holds either its old
// bytes or data, never a part of data.
func WriteFile(root *os.Root, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		return err
	}
	return SyncDir(root, path.Dir(name))
}

// SyncDir fsyncs a folder so that the entries created in it are durable (a no-op on
// Windows, which cannot fsync a folder).
func SyncDir(root *os.Root, name string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := root.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
