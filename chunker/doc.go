// Package chunker cuts a file or a directory tree into blocks, describes them in a
// Manifest (the files, how they were cut and every block's hash; its ID is the hash
// of its canonical msgpack encoding) and keeps a peer's blocks in a crash-safe
// on-disk Store.
//
// # Blocks
//
// Blocks are of a fixed size by default: the files of a tree are taken in byte-wise
// order of their slash-separated paths and their bytes are read as one stream, cut
// into blocks of BlockSize bytes (the last one may be shorter; a block may span
// several files). Every block is hashed with BLAKE3 (see HashBlock). Chunking
// streams: memory stays a few blocks whatever the size.
//
// With WithContentDefined (or WithChunking) blocks are content-defined (FastCDC,
// see Chunking and CDCAlgorithm): each file is cut on its own where its bytes say,
// so inserting or deleting bytes changes only the blocks around the edit, a block
// never spans files, and the same bytes give the same blocks in any file, folder
// or version, which lets peers reuse blocks across versions. Such a manifest
// (format Version2) records the chunking rule and every block's length; BlockLen
// and BlockSpan give them, BlockSize is the longest a block may be, and
// ContentDefined tells the two kinds apart. Cutting is sequential, hashing runs
// on several goroutines as for fixed-size blocks. docs/chunking.md has the
// measurements behind the choice of library and defaults.
//
// Paths in a manifest start with the base name of the chunked path: chunking
// /data/movie.mkv gives the single file "movie.mkv", chunking /data/photos gives
// "photos/a.jpg", "photos/2024/b.jpg", ... A symbolic link given as the path itself
// is followed and keeps its own name. Inside a folder, with content-defined blocks
// (or WithLinksAndDirs), symbolic links whose target is relative and stays inside
// the folder and empty folders are recorded too (see Tree); other links, devices,
// sockets and pipes are left out, and WithSkipped names them. Fixed-size blocks
// take the regular files only by default, so their manifests and IDs are what the
// first release made. The metadata folders of block stores (MetaDir) are never
// content.
//
// Manifests of format Version (fixed-size blocks over regular files) are still
// written and read as before; DecodeManifest reads both formats.
//
// # Stores
//
// A Store assembles the files of one manifest in place and keeps its state (the
// manifest's canonical encoding in "manifest", and "held", an append-only log of
// fixed-size checksummed records naming the blocks whose bytes are verified and on
// disk) in a state folder. Two layouts:
//
//   - A tree (CreateStore, OpenStore, OpenOrCreateStore): a store at OUT holds its
//     files at their manifest paths (OUT/movie.mkv, or the tree OUT/photos/...),
//     and its state in OUT/.reconcile/<manifest id>/ (MetaDir). State is per
//     manifest, so one folder can hold many downloads, as long as their files
//     differ; ListStores lists them, and OpenStore opens the only one or that of
//     WithID. Stores made by earlier versions, with their state in OUT/.reconcile/
//     itself, are still opened and resumed.
//   - A single file (CreateFileStore, OpenFileStore, OpenOrCreateFileStore): the
//     manifest's one file is written to a path of the caller's choosing, FILE,
//     and its state lives beside it in FILE.reconcile/. Once the download is
//     complete, Store.RemoveState deletes the state and leaves just the file.
//
// WithStateDir puts the state of either layout in another folder.
//
// PutBlock checks a block's hash, writes it in place, fsyncs the data and only then
// appends and fsyncs its record, so after a crash or a kill -9 at any moment
// OpenStore gives back exactly verified blocks. A torn or garbage record fails its
// checksum and is ignored. SeedStore serves an original file or tree in place,
// read-only, without copying it; when a file changes under it, the blocks that no
// longer match are no longer held (Store.CheckSources, and ReadBlock after a change).
//
// Empty folders are made with the store's files (and again on reopening if
// missing); symbolic links once the store is complete, through the os.Root like
// every write, never over something already there (ErrExists), and again on
// reopening if missing. Where a link cannot be made (on Windows it takes Developer
// Mode or an administrator) the call that completed the store fails with
// ErrSymlink: every block is still held and recorded, and reopening tries again.
// A single-file store (CreateFileStore) holds no links or folders (ErrNotFile).
//
// A state folder holds one manifest: OpenOrCreateStore resumes the store of the
// same manifest and refuses to put another one's files where files are already
// (ErrExists, and ErrManifestMismatch when they belong to another store) without
// touching anything. No constructor ever overwrites a file that is already there
// (ErrExists). All access to the output files goes through an os.Root, so a
// symbolic link planted in the folder cannot make the store write outside it. An
// output file found missing or resized on reopening is recreated and its blocks
// are fetched again.
//
// Names from other systems: a manifest path is valid everywhere, but creating a
// store refuses (ErrBadPath, naming the file) content the running system cannot
// hold, rather than renaming it: on Windows reserved device names (CON, NUL,
// COM1.txt, ...), the characters <>:"|?* and control characters, names ending in a
// dot or space, and elements over 255 UTF-16 units; on Windows and macOS two names
// that differ only in case. Paths longer than Windows' 260 characters are written,
// since os.Root opens them one element at a time.
//
// The constructors take a context: cancelling it stops them promptly, notably amid
// the re-hashing of WithVerify, whose progress WithCheckProgress reports.
//
// Durability: with the default WithSyncEvery(1) a block is on disk, and recorded,
// when PutBlock returns; with WithSyncEvery(n) the data of up to n blocks (with
// WithSyncBytes, of up to n bytes of blocks) is fsynced once and their records are
// written after it. Either way no record ever precedes
// its data. WithVerify (and Store.Verify) re-hash blocks for when the disk itself is
// in doubt.
//
// A Store is safe for concurrent use: a peer serves held blocks (ReadBlock, which does
// not re-hash) while it writes others.
package chunker
