package chunker

import "errors"

var (
	// ErrBadBlock is returned when a block's bytes do not match its hash in the manifest.
	ErrBadBlock = errors.New("chunker: block does not match its hash")
	// ErrBadIndex is returned for a block index outside [0, BlockCount).
	ErrBadIndex = errors.New("chunker: block index out of range")
	// ErrNotHeld is returned by Store.ReadBlock for a block the store does not hold.
	ErrNotHeld = errors.New("chunker: block not held")
	// ErrNoPieces is a piece read (Store.ReadPiece) of a store whose
	// blocks are read whole: a seed's, checked against its source files,
	// or a view.
	ErrNoPieces = errors.New("chunker: the store's blocks are read whole")
	// ErrCorrupt is returned when an encoding or on-disk state is malformed.
	ErrCorrupt = errors.New("chunker: corrupt data")
	// ErrManifestMismatch is returned when a store holds a different manifest than the
	// one given, or a manifest's id is not the one expected.
	ErrManifestMismatch = errors.New("chunker: manifest mismatch")
	// ErrTooLarge is returned when an input exceeds a size limit.
	ErrTooLarge = errors.New("chunker: too large")
	// ErrBadBlockSize is returned for a block size outside [MinBlockSize, MaxBlockSize].
	ErrBadBlockSize = errors.New("chunker: block size out of range")
	// ErrBadPath is returned for a file path that is empty, absolute, not clean,
	// escapes its root ("..") or collides with another path of the manifest, and
	// when creating a store for a path the system cannot hold (a reserved name
	// or ":" on Windows, names differing only in case on Windows and macOS).
	ErrBadPath = errors.New("chunker: bad file path")
	// ErrNotFound is returned when a folder holds no store.
	ErrNotFound = errors.New("chunker: no store here")
	// ErrDamaged is returned by the constructors given WithoutRepair when an
	// output file of a store that is not staged is missing or has the wrong size.
	ErrDamaged = errors.New("chunker: output files changed")
	// ErrInUse is returned by Store.Publish when a file cannot be replaced
	// because another program has it open (Windows).
	ErrInUse = errors.New("chunker: file in use")
	// ErrLocked is returned by LockOutput when another fetch writes to the output.
	ErrLocked = errors.New("chunker: output in use by another fetch")
	// ErrExists is returned when creating a store would overwrite an existing file.
	ErrExists = errors.New("chunker: file already exists")
	// ErrReadOnly is returned when writing to a store opened for seeding.
	ErrReadOnly = errors.New("chunker: store is read-only")
	// ErrClosed is returned by the methods of a closed store.
	ErrClosed = errors.New("chunker: store is closed")
	// ErrManyStores is returned by OpenStore when a folder holds the stores of
	// several manifests and WithID does not say which one to open.
	ErrManyStores = errors.New("chunker: folder holds several stores")
	// ErrIncomplete is returned by Store.RemoveState for a store that does not hold
	// every block.
	ErrIncomplete = errors.New("chunker: store is not complete")
	// ErrNoSpace is returned when creating a store's output file finds the
	// disk too small for it (its space is reserved as it is created).
	ErrNoSpace = errors.New("chunker: not enough disk space")
	// ErrSymlink is returned when a complete store cannot make one of its
	// manifest's symbolic links (on Windows, making them takes a privilege);
	// the blocks stay held, and reopening the store tries again.
	ErrSymlink = errors.New("chunker: cannot make symbolic link")
	// ErrNotFile is returned when a single-file store is asked for content that is
	// not exactly one file.
	ErrNotFile = errors.New("chunker: content is not a single file")
)
