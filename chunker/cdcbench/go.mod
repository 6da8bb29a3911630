module github.com/reconcile-p2p/reconcile/chunker/cdcbench

go 1.26.8

require (
	github.com/PlakarKorp/go-cdc-chunkers v1.1.0
	github.com/jotfs/fastcdc-go v0.2.0
	github.com/reconcile-p2p/reconcile v0.0.0
	github.com/restic/chunker v0.4.0
)

require (
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	github.com/zeebo/blake3 v0.2.4 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	lukechampine.com/blake3 v1.4.1 // indirect
)

replace github.com/reconcile-p2p/reconcile => ../..
