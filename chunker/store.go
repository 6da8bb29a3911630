package chunker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/reconcile-p2p/reconcile/chunker/internal/heldlog"
)

// The store's code is split by concern:
//
//	store.go         the Store type, its options, its lock order, accessors and Close
//	store_open.go    creating and reopening a store, the output files' creation
//	store_layout.go  where a store's files and state live; single-file stores, RemoveState
//	store_files.go   the cache of open output files
//	store_write.go   PutBlock, ReadBlock, Sync and the flush that records blocks
//	store_verify.go  re-hashing: Verify, WithVerify on opening, SeedStore
//	store_sources.go a seed store noticing that its source files changed
//	store_stage.go   staged stores (WithStaging) and Publish
//	store_reuse.go   Reuse: blocks taken from local files
//	store_view.go    views: one manifest's blocks read from other stores
//	lock.go          LockOutput: one writer per output
//	internal/heldlog the held log's format and Log, the only writer of it
//	internal/cut     the reading, cutting and hashing of files behind Reuse (and ChunkPath)
//	internal/outlock the file lock behind LockOutput and the line naming its holder
//	internal/prealloc the reserving of an output file's disk space (ErrNoSpace)
//	internal/durable the atomic writes of the manifest and the held log
//	internal/pathrules valid manifest paths, and which names a system can hold (createStore)

// MetaDir is the name of the metadata folder inside a store folder.
const MetaDir = ".reconcile"

// The files of a state folder.
const (
	manifestFile = "manifest"
	heldFile     = "held"
)

// stateFiles are the files that make a state folder's store, the manifest (the
// commit point) first: RemoveState and DropState remove them in this order,
// so that a crash midway leaves no manifest, and so no store.
var stateFiles = []string{manifestFile, manifestFile + ".tmp", heldFile, heldFile + ".tmp", publishingFile}

// StoreOption configures CreateStore, OpenStore, OpenOrCreateStore and SeedStore.
type StoreOption func(*storeConfig) error

type storeConfig struct {
	verify           bool
	syncEvery        int   // WithSyncEvery; 0 with syncBytes
	syncBytes        int64 // WithSyncBytes; resolved into syncEvery by newStore
	maxManifestBytes int
	checkProgress    func(done, total int)
	stateDir         string // WithStateDir
	id               *ID    // WithID
	staging          bool   // WithStaging
	noRepair         bool   // WithoutRepair
}

// newConfig applies opts; it fails if one does or if ctx is already done, so that
// a cancelled constructor touches nothing.
func newConfig(ctx context.Context, opts []StoreOption) (storeConfig, error) {
	c := storeConfig{syncEvery: 1, maxManifestBytes: DefaultMaxManifestBytes}
	if err := ctx.Err(); err != nil {
		return c, fmt.Errorf("chunker: store: %w", err)
	}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// WithVerify makes opening re-hash every block and keep exactly those whose bytes
// match, rewriting the held log (the default trusts the held log, which is cheap).
// For SeedStore it checks that every block of the original matches.
func WithVerify() StoreOption { return func(c *storeConfig) error { c.verify = true; return nil } }

// WithCheckProgress makes the re-hashing of WithVerify, when opening a store or
// seeding, call fn with the number of blocks checked so far and their total: once
// with done == 0 before the first block, then after each block (from several
// goroutines, one call at a time). A CLI draws "checking N blocks on disk" with it.
// Default: no calls.
func WithCheckProgress(fn func(done, total int)) StoreOption {
	return func(c *storeConfig) error { c.checkProgress = fn; return nil }
}

// WithSyncEvery makes PutBlock group n blocks per data fsync and record fsync (default
// 1: every PutBlock is durable when it returns). With n > 1, a block is readable and
// reported by Has as soon as PutBlock returns, and its record is written, after its
// data is fsynced, once n blocks are pending or on Sync or Close; a crash loses at
// most the unsynced records, never records a block whose bytes are not on disk.
func WithSyncEvery(n int) StoreOption {
	return func(c *storeConfig) error {
		if n < 1 {
			return fmt.Errorf("chunker: WithSyncEvery(%d): n must be at least 1", n)
		}
		c.syncEvery, c.syncBytes = n, 0
		return nil
	}
}

// WithSyncBytes is WithSyncEvery with the group given in bytes: n bytes' worth of
// blocks (at least one block) per fsync, whatever the block size. The fsync groups
// of a fetch are best measured in bytes: each fsync costs a journal commit, and the
// kernel writes back the same bytes either way. The last of WithSyncEvery and
// WithSyncBytes given wins.
func WithSyncBytes(n int64) StoreOption {
	return func(c *storeConfig) error {
		if n < 1 {
			return fmt.Errorf("chunker: WithSyncBytes(%d): n must be at least 1", n)
		}
		c.syncEvery, c.syncBytes = 0, n
		return nil
	}
}

// WithMaxManifestBytes bounds the size of the manifest read when reopening a store
// (default DefaultMaxManifestBytes).
func WithMaxManifestBytes(n int) StoreOption {
	return func(c *storeConfig) error {
		if n < 1 {
			return fmt.Errorf("chunker: WithMaxManifestBytes(%d): n must be positive", n)
		}
		c.maxManifestBytes = n
		return nil
	}
}

// Report is the outcome of Store.Verify.
type Report struct {
	Blocks  int   `json:"blocks"`  // blocks in the manifest
	Held    int   `json:"held"`    // held blocks, all of which matched their hash
	Missing int   `json:"missing"` // blocks not held (including the corrupt ones)
	Corrupt []int `json:"corrupt"` // blocks recorded as held whose bytes did not match; no longer held
}

// Store holds the blocks of one manifest in a folder; see the package comment for
// the layout. It is safe for concurrent use.
//
// Locking: two mutexes, always taken in this order:
//
//  1. flushMu serializes whatever writes the held log (flush, Verify's drops,
//     Close) together with the data fsyncs that must precede the records; it is
//     held across fsyncs and guards log.
//  2. mu guards the in-memory state: the held set, pending and dirty, closed, and
//     the output-file cache. It is never held across an fsync or a block's IO.
//
// writeMu[k] is taken alone, around one write to output file k, with neither
// of the two held.
//
// The cache's reference counts are atomic: a cache hit takes mu for reading only,
// and eviction, which takes mu for writing, sees every reference taken before it.
type Store struct {
	place    // where the output files and the state are
	m        *Manifest
	readOnly bool
	cfg      storeConfig

	mu      sync.RWMutex // guards the fields below; see the lock order above
	held    heldlog.Bitset
	nheld   int
	closed  bool
	pending []int            // held blocks whose records are not written yet
	dirty   map[int]struct{} // files written since the last data fsync

	// The output-file cache (store_files.go), guarded by mu.
	files   []*os.File     // lazily opened output files, at most about maxOpen at once
	rdonly  []bool         // files[k] was opened read-only (a complete store's read-only mode)
	refs    []atomic.Int32 // users of files[k] between openFile and release
	nopen   int            // non-nil entries of files
	maxOpen int            // handles kept open before unused ones are closed
	evictAt int            // where the next eviction scan starts

	// writeMu[k] serializes the writes to output file k. The kernel takes
	// the file's inode lock for each buffered write and spins on it while
	// another writer holds it; parking here instead leaves the CPU to the
	// writers' hashing and to the network.
	writeMu []sync.Mutex

	flushMu sync.Mutex // taken before mu; guards log
	log     *heldlog.Log

	// A seed store's change tracking (store_sources.go); src is nil for
	// other stores.
	checkMu sync.Mutex // serializes CheckSources; taken before srcMu
	srcMu   sync.Mutex // guards src; taken before mu
	src     *sourceState

	// view is where each block of a view (NewView) is read; nil for other
	// stores. A view has no place, files or log.
	view []viewRef
}

// newStore returns a store of m over root with nothing held and no log open.
func newStore(p *place, m *Manifest, cfg storeConfig) *Store {
	if cfg.syncBytes > 0 {
		per := int64(m.blockSize)
		if m.ContentDefined() {
			per = int64(max(m.AvgBlockLen(), 1))
		}
		cfg.syncEvery = int(max(1, min(cfg.syncBytes/per, int64(m.blockCount))))
	}
	return &Store{
		place: *p, m: m, cfg: cfg,
		held: heldlog.NewBitset(m.blockCount), dirty: map[int]struct{}{},
		files: make([]*os.File, len(m.files)), rdonly: make([]bool, len(m.files)),
		refs: make([]atomic.Int32, len(m.files)), writeMu: make([]sync.Mutex, len(m.files)), maxOpen: maxOpenFiles,
		log: heldlog.New(p.meta, heldFile, m.id),
	}
}

// Manifest returns the store's manifest.
func (s *Store) Manifest() *Manifest { return s.m }

// Dir returns the folder of the store (for a seed store: the folder holding the
// seeded file or tree). The output files are at Dir()/File.Path, except that of a
// single-file store (CreateFileStore), which is the file it was given.
func (s *Store) Dir() string { return s.dir }

// FilePath returns the path of the output file of a single-file store
// (CreateFileStore), or "" for a store of the tree layout.
func (s *Store) FilePath() string {
	if s.place.file == "" {
		return ""
	}
	return filepath.Join(s.dir, s.place.file)
}

// StateDir returns the folder holding the store's manifest and held log, or "" for
// a seed store, which has none.
func (s *Store) StateDir() string { return s.stateDir }

// ReadOnly reports whether the store is a seed store.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Has reports whether block i is held.
func (s *Store) Has(i int) bool {
	if i < 0 || i >= s.m.blockCount {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.held.Has(i)
}

// HeldCount returns the number of held blocks.
func (s *Store) HeldCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nheld
}

// Held returns the indices of the held blocks, in increasing order.
func (s *Store) Held() []int { return s.list(true) }

// Missing returns the indices of the blocks not held, in increasing order.
func (s *Store) Missing() []int { return s.list(false) }

func (s *Store) list(held bool) []int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nheld
	if !held {
		n = s.m.blockCount - n
	}
	out := make([]int, 0, n)
	for i := range s.m.blockCount {
		if s.held.Has(i) == held {
			out = append(out, i)
		}
	}
	return out
}

// Complete reports whether every block is held.
func (s *Store) Complete() bool { return s.HeldCount() == s.m.blockCount }

// isClosed reports whether Close has begun.
func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// Close syncs and closes the store. Closing twice returns ErrClosed.
func (s *Store) Close() error {
	if s.isClosed() {
		return ErrClosed
	}
	if s.view != nil {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		return nil
	}
	var err error
	if !s.readOnly && s.log.IsOpen() {
		err = s.flush()
	}
	s.flushMu.Lock()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if e := s.log.Close(); err == nil {
		err = e
	}
	s.flushMu.Unlock()
	s.closeFiles()
	s.place.close()
	return err
}
