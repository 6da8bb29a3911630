// Package peer seeds and fetches files between real hosts over libp2p, with
// complete set reconciliation of counting Bloom filters: every peer sends a
// fetcher only the blocks the fetcher lacks.
//
// # Peers
//
// [New] starts a libp2p host (TCP and QUIC v1, TLS 1.3 and Noise, yamux) with an
// Ed25519 identity that is either fresh or kept in a key file readable by its
// owner only ([WithKeyFile], [LoadOrCreateKey]), and a resource manager that
// bounds the streams each remote peer may hold open per protocol. [Peer.Seed]
// chunks a file or folder (package chunker) and serves it in place;
// [Peer.Fetch] downloads the content of a [Ticket] into a folder; [Peer.Close]
// stops everything. A ticket is one copyable token: the content's root id (the
// hash of its manifest) and the seed's peer id and addresses.
//
// # Fetching
//
// A fetch connects to the ticket's peers and to [WithPeers] peers, gets the
// manifest from any of them and checks that it hashes to the ticket's root,
// then runs one worker per peer. A worker reconciles: it sends the counting
// Bloom filter of the blocks held (package reconcile, one-way session of
// the complete method by default); the peer computes CBF(S_peer) \ CBF(S_fetcher) and answers with the
// indices of its blocks in that difference, which has no false negatives. The
// worker then pulls those blocks over one stream, keeping a window of requests
// open. A block is claimed by one worker at a time, so no two peers are asked
// for the same block unless one fails or stalls ([WithStallTimeout]); then its
// claims go back to the others. Received blocks are verified against the
// manifest and written by a pool of writers into package chunker's store,
// which fsyncs them in groups ([WithSyncEvery]) before recording them.
// A peer that sends a block that fails verification, or a malformed message,
// is dropped and its connection closed. When a worker has nothing left to
// pull it reconciles again after a pause, as the peer may have gained blocks.
//
// Fetchers serve what they hold while they fetch (and after, until Close):
// a peer that reconciles with a fetcher is added to its sources, and every
// second a fetch asks its peers for other peers of the content
// ([ProtoPeers]), so fetchers find and feed each other (a swarm). A fetch
// started again on the same folder resumes from the verified blocks, after an
// interrupt or a kill -9, and downloads none of them again (blocks stored but
// not yet recorded are found by re-hashing the output).
//
// [WithMethod] picks another method of package reconcile for the same
// blocks: reconcile.CCBF (the same filter, entropy coded), reconcile.Bitfield
// (one bit per block, answered exactly) or reconcile.IBLT (rateless IBLT
// cells, streamed until the peer has decoded the difference: more round
// trips, traffic that grows with the difference rather than the set). Every
// peer serves all four; it takes the method from the fetcher's first message
// and keeps its own filters (and first IBLT cells) of the blocks it holds
// between sessions, rebuilding them when it gains blocks.
//
// [WithMethod](reconcile.Byers) runs the Byers baseline instead: a seed made
// with [WithByers] serves Reed–Solomon coded blocks (package erasure), fetchers
// reconcile plain Bloom filters of coded blocks, and decode each generation
// once they hold enough of them.
//
// # Protocols
//
// All under /reconcile/1/: manifest, reconcile, blocks and peers (see the
// Proto constants). Every stream carries length-prefixed frames with a limit
// per frame ([Limits]) and buffers that grow only as bytes arrive; every read
// and write has a deadline ([WithStreamIdle]). A malformed or oversized message
// resets the stream; a stream that times out or is reset is retried, not
// taken for misbehaviour. Blocks read to be served count against one budget
// for all streams ([Limits].ServeBytes), and each block frame goes out in one
// write.
package peer
