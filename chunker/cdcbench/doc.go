// Package cdcbench compares content-defined chunking libraries inside the
// chunker's pipeline (cut points found on one goroutine, blocks hashed with
// chunker.HashBlock on others), each against the fixed-size blocks measured
// in the same run. It is a module of its own so that the libraries it
// compares never reach the chunker's users. Run it from this folder:
//
//	GOWORK=off go test -bench . -benchtime 5x
//
// The figures and what they decided are in docs/chunking.md.
package cdcbench
