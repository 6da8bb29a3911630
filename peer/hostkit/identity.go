package hostkit

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// maxKeyFileSize bounds what LoadOrCreateKey reads: a marshalled Ed25519 key is
// under 100 bytes, so anything larger is not a key file.
const maxKeyFileSize = 4 << 10

// ErrKeyPermissions means an identity key file can be read or written by
// users other than its owner.
var ErrKeyPermissions = errors.New("hostkit: identity key file is not private")

// LoadOrCreateKey returns the identity key stored at path, creating a new Ed25519
// key there (mode 0600, written atomically) when the file does not exist.
//
// An existing file that others may read or write is refused with
// ErrKeyPermissions, as ssh refuses a private key with loose permissions: the
// key is this peer's identity.
func LoadOrCreateKey(path string) (crypto.PrivKey, error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		if fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("%w: %s has mode %v; run chmod 600 %s", ErrKeyPermissions, path, fi.Mode().Perm(), path)
		}
		if fi.Size() > maxKeyFileSize {
			return nil, fmt.Errorf("hostkit: key file %s: %d bytes is not a key", path, fi.Size())
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("hostkit: read key: %w", err)
		}
		k, err := crypto.UnmarshalPrivateKey(data)
		if err != nil {
			return nil, fmt.Errorf("hostkit: key file %s: %w", path, err)
		}
		return k, nil
	case errors.Is(err, fs.ErrNotExist):
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("hostkit: generate key: %w", err)
		}
		data, err := crypto.MarshalPrivateKey(k)
		if err != nil {
			return nil, fmt.Errorf("hostkit: marshal key: %w", err)
		}
		if err := writeKeyFile(path, data); err != nil {
			if errors.Is(err, fs.ErrExist) {
				// Another process created the key first: use theirs.
				return LoadOrCreateKey(path)
			}
			return nil, err
		}
		return k, nil
	default:
		return nil, fmt.Errorf("hostkit: key file: %w", err)
	}
}

// writeKeyFile writes data to a fresh 0600 file beside path and renames it into
// place, so a crash leaves either no key or a whole key. If another process
// created path meanwhile, its key wins: the error then wraps fs.ErrExist.
func writeKeyFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("hostkit: key directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return fmt.Errorf("hostkit: create key: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("hostkit: create key: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("hostkit: write key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("hostkit: write key: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("hostkit: write key: %w", err)
	}
	// Link fails if path exists, so two processes racing to create the key
	// agree on one of them.
	if err := os.Link(tmp, path); err != nil {
		return fmt.Errorf("hostkit: install key: %w", err)
	}
	return nil
}
