// Package chunker cuts a file or a directory tree into fixed-size blocks, describes
// them in a Manifest (the files, the block size and every block's hash; its ID is the
// hash of its canonical msgpack encoding) and keeps a peer's blocks in a crash-safe
// on-disk Store.
//
// # Blocks
//
// The files of a tree are taken in byte-wise order of their slash-separated paths and
// their bytes are read as one stream, cut into blocks of BlockSize bytes (the last one
// may be shorter; a block may span several files). Every block is hashed with BLAKE3
// (see HashBlock). Chunking streams: memory stays a few blocks whatever the size.
//
// Paths in a manifest start with the base name of the chunked path: chunking
// /data/movie.mkv gives the single file "movie.mkv", chunking /data/photos gives
// "photos/a.jpg", "photos/2024/b.jpg", ... Only regular files are taken; symbolic
// links inside a tree, devices, empty directories and the metadata folders of block
// stores (MetaDir) are skipped. A symbolic link given as the path itself is followed
// and keeps its own name.
//
// # Stores
//
// A Store is a folder. The output files are assembled in place under it at their
// manifest paths (so a store at OUT holds OUT/movie.mkv, or the tree OUT/photos/...),
// and the metadata lives in OUT/.reconcile/: "manifest" (the canonical encoding) and
// "held" (an append-only log of fixed-size checksummed records naming the blocks whose
// bytes are verified and on disk). PutBlock checks a block's hash, writes it in place,
// fsyncs the data and only then appends and fsyncs its record, so after a crash or a
// kill -9 at any moment OpenStore gives back exactly verified blocks. A torn or garbage
// record fails its checksum and is ignored. SeedStore serves an original file or tree
// in place, read-only, without copying it.
//
// A store folder holds one manifest: OpenOrCreateStore resumes it for the same
// manifest and refuses another one (ErrManifestMismatch) without touching anything.
// CreateStore never overwrites a file that is already there (ErrExists). All file
// access goes through an os.Root, so a symbolic link planted in the folder cannot
// make the store write outside it. An output file found missing or resized on
// reopening is recreated and its blocks are fetched again.
//
// Durability: with the default WithSyncEvery(1) a block is on disk, and recorded,
// when PutBlock returns; with WithSyncEvery(n) the data of up to n blocks is fsynced
// once and their records are written after it. Either way no record ever precedes
// its data. WithVerify (and Store.Verify) re-hash blocks for when the disk itself is
// in doubt.
//
// A Store is safe for concurrent use: a peer serves held blocks (ReadBlock, which does
// not re-hash) while it writes others.
package chunker
