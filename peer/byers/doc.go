// Package byers is the Byers baseline of package peer, kept for comparison
// with complete reconciliation: the content is cut into generations of K
// blocks, each Reed–Solomon coded (package erasure) into N coded blocks; peers
// reconcile plain Bloom filters of the coded blocks they hold
// (reconcile.Byers) and a fetcher decodes each generation into its store as
// soon as it holds K of its coded blocks.
//
// A [Set] is the coded blocks of one content that a peer holds and serves,
// with the hash of every coded block: a seed codes its store with [Encode];
// a fetcher gets the hashes from a peer it trusts as the set's header
// ([Set.Header], [DecodeHeader]) and checks every coded block it receives
// against them, and every decoded block against the manifest. [Set.Share]
// hands the coded blocks of one set to others in the same process, which
// keep one copy of each between them (a testnet of hundreds of peers). A
// [Target] is the fetch side: it takes coded blocks ([Target.Put]) and
// decodes each generation into a [Store] as soon as it can.
//
// The package does no network IO: package peer carries the header, the
// reconciliation and the coded blocks over its protocols (the hello's Coded
// flag asks for them).
package byers
