// Package sched holds the scheduling policies of a fetch and of a seed:
// which source is asked for which block (Picker: claims, rarest first,
// the endgame's second claims, blocks held back for stripe pushes), how many
// requests a source is given at once (FlowWindow), how long a source may go
// silent before its requests go to others (Waits), how rare a block is
// among a peer's neighbours by the sum of their counting Bloom filters
// (NeighbourTally), and what a super-seed offers each fetcher (SuperSeed).
//
// Everything here is pure: no network, no goroutines, no clock reads. The
// time is handed in by the caller (package peer, its testnet, or a model),
// and peers are named by any comparable key K (package peer uses libp2p
// peer ids), so the same policies run in unit tests, in a simulator and in
// real peers.
package sched
