package chunker

import (
	"context"
	"errors"
)

var errTODO = errors.New("chunker: store not implemented yet")

// StoreOption configures OpenStore, CreateStore, OpenOrCreateStore and SeedStore.
type StoreOption func(*storeConfig) error

type storeConfig struct {
	verify           bool
	syncEvery        int
	maxManifestBytes int
}

// WithVerify makes opening re-hash every block and keep exactly those whose bytes
// match (the default trusts the held log, which is cheap).
func WithVerify() StoreOption { return func(c *storeConfig) error { c.verify = true; return nil } }

// WithSyncEvery makes PutBlock group n blocks per data fsync and record fsync (default
// 1: every PutBlock is durable when it returns). With n > 1, a block is readable and
// reported by Has as soon as PutBlock returns, and its record is written, after its
// data is fsynced, once n blocks are pending or on Sync or Close; a crash loses at
// most the unsynced records, never records a block whose bytes are not on disk.
func WithSyncEvery(n int) StoreOption {
	return func(c *storeConfig) error {
		if n < 1 {
			return errors.New("chunker: WithSyncEvery: n must be at least 1")
		}
		c.syncEvery = n
		return nil
	}
}

// WithMaxManifestBytes bounds the size of the manifest read when reopening a store
// (default DefaultMaxManifestBytes).
func WithMaxManifestBytes(n int) StoreOption {
	return func(c *storeConfig) error { c.maxManifestBytes = n; return nil }
}

// Report is the outcome of Store.Verify.
type Report struct {
	Blocks  int   `json:"blocks"`  // blocks in the manifest
	Held    int   `json:"held"`    // held blocks whose bytes match their hash
	Missing int   `json:"missing"` // blocks not held (including the corrupt ones)
	Corrupt []int `json:"corrupt"` // blocks recorded as held whose bytes did not match; no longer held
}

// Store holds the blocks of one manifest in a folder; see the package comment for
// the layout. It is safe for concurrent use.
type Store struct {
	m *Manifest
}

// MetaDir is the name of the metadata folder inside a store folder.
const MetaDir = ".reconcile"

// CreateStore creates a new, empty store for m in dir (created if needed). It fails
// with ErrExists if dir already holds a store or any of m's output files.
func CreateStore(dir string, m *Manifest, opts ...StoreOption) (*Store, error) { return nil, errTODO }

// OpenStore reopens the store in dir after a restart or a crash: the held blocks are
// those whose records are in the held log (or, WithVerify, those whose bytes match).
// It fails with ErrNotFound if dir holds no store.
func OpenStore(dir string, opts ...StoreOption) (*Store, error) { return nil, errTODO }

// OpenOrCreateStore resumes the store for m in dir, or creates it if dir holds no
// store. If dir holds a store of another manifest it fails with ErrManifestMismatch
// and touches nothing.
func OpenOrCreateStore(dir string, m *Manifest, opts ...StoreOption) (*Store, error) {
	return nil, errTODO
}

// SeedStore serves the original file or tree at path (the path given to ChunkPath)
// in place: read-only, every block held, nothing copied. It checks that every file
// exists with the manifest's size (WithVerify also re-hashes every block).
func SeedStore(path string, m *Manifest, opts ...StoreOption) (*Store, error) { return nil, errTODO }

// Manifest returns the store's manifest.
func (s *Store) Manifest() *Manifest { return s.m }

// Dir returns the folder of the store (for a seed store: the folder holding the
// seeded file or tree).
func (s *Store) Dir() string { return "" }

// Has reports whether block i is held.
func (s *Store) Has(i int) bool { return false }

// HeldCount returns the number of held blocks.
func (s *Store) HeldCount() int { return 0 }

// Held returns the indices of the held blocks, in increasing order.
func (s *Store) Held() []int { return nil }

// Missing returns the indices of the blocks not held, in increasing order.
func (s *Store) Missing() []int { return nil }

// Complete reports whether every block is held.
func (s *Store) Complete() bool { return false }

// PutBlock stores block i: it checks data against the manifest (ErrBadIndex,
// ErrBadBlock), writes it in place, fsyncs it and then records it (see WithSyncEvery).
// Putting a held block again is a no-op.
func (s *Store) PutBlock(i int, data []byte) error { return errTODO }

// ReadBlock appends block i to dst[:0] and returns it, without re-hashing it (the
// block was verified when it was put). It fails with ErrBadIndex if i is out of range
// or not held.
func (s *Store) ReadBlock(i int, dst []byte) ([]byte, error) { return nil, errTODO }

// Sync makes every block put so far durable (records included).
func (s *Store) Sync() error { return errTODO }

// Verify re-hashes every held block. Blocks whose bytes no longer match are reported
// as corrupt and dropped from the held set (durably, unless the store is read-only).
func (s *Store) Verify(ctx context.Context) (Report, error) { return Report{}, errTODO }

// Close syncs and closes the store.
func (s *Store) Close() error { return errTODO }
