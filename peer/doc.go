// Package peer seeds and fetches files between real hosts over libp2p, with
// complete set reconciliation of counting Bloom filters: every peer sends a
// fetcher only the blocks the fetcher lacks.
//
// # Services and peers
//
// [NewService] mounts the protocols on any libp2p host, as go-libp2p's ping
// service does: an application keeps its host, its other protocols and its
// connections, and bounds the service's streams with [ResourceLimits] in its
// resource manager. [New] builds a host with this package's defaults (TCP and
// QUIC v1, TLS 1.3 and Noise, yamux, ResourceLimits, an Ed25519 identity that
// is either fresh or kept in a key file readable by its owner only:
// [WithKeyFile], [LoadOrCreateKey]) and mounts the service on it; a [Peer] is
// that pair. [Service.Seed] chunks a file or folder (package chunker) and
// serves it in place; [Service.Serve] serves an open store; [Service.Fetch]
// downloads the content of a [Ticket] into a folder; [Service.FetchServed]
// fills the store of served content from given sources ([WithSources]);
// [Service.Close] stops the service (and [Peer.Close] the host too). A
// ticket is one copyable token: the content's root id (the hash of its
// manifest) and the seed's peer id and addresses, those useful from another
// host ([TicketAddrs]: no loopback or link-local address unless the seed has
// nothing else). [WithServeObserver] tells an application (or a testnet's
// audit) what the service answers and sends.
//
// The framing of the protocols is package peer/wire; the reconciliation
// messages are package reconcile's, driven by reconcile.Drive.
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
// A block that fails verification is asked of other peers, never again of
// the peer that sent it; a peer that sends three such blocks, or a malformed
// message, is dropped and put on the service's deny-list for a while: its
// streams of these protocols are reset and refused ([WithFetchEvents] tells
// an application of both). The host's connection to it is not
// closed (the application's other protocols may use it).
//
// # Watches
//
// With a one-round method (complete, ccbf, bitfield) the reconciliation
// stream stays open as a watch (wire.Hello.Watch): after answering, the
// peer sends a have frame of every block it stores, and the fetcher one of
// every block it stores, until the fetcher closes it. So one
// reconciliation finds every block the fetcher lacks, and from then on
// each side hears of the other's new blocks a one-way delay after they are
// stored, at a few bytes a block (as BitTorrent's HAVE messages), rather
// than by reconciling again; a fetch watches every source (WithMaxSources,
// 32 by default) and asks for a block as soon as one announces it. Without
// a watch (IBLT, the Byers baseline, a watch that ended), a worker with
// nothing left to pull reconciles again after a pause that grows to a
// second. A source that answers "missing" for a block it announced is
// reconciled with again before it is asked for more, so a peer that offers
// what it does not send is found out and left.
//
// Fetches choose which offered block to ask for first ([WithBlockChoice]):
// rarest first, counted exactly from their sources' offers and haves (the
// default), rarest first estimated from the sum of the counting Bloom
// filters their own watchers sent them (the algebra's T8: the minimum of a
// block's counters in the sum is never below the number of neighbours
// holding it), or at random.
//
// In a swarm a peer serves the requests of a few peers at once, as
// BitTorrent's unchoked peers: a request from a peer with nothing queued
// is answered busy while two other peers that read have blocks queued, and
// the fetcher asks other peers for those blocks instead of waiting behind
// the others. A seed made with [WithSuperSeeding] deals its blocks out
// over its watchers instead: each is offered at most two blocks it has not
// asked for yet, those sent the fewest blocks first, a block offered to
// one watcher at a time, and no block twice while one was never sent
// (BitTorrent's super-seeding); it answers nobody busy.
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
// once they hold enough of them (package peer/byers).
//
// # Stripe trees
//
// (This section: peer/push*.go, peer/adopt*.go, around package
// peer/stripes' Tree, which holds the trees' membership and repair policy.)
//
// Pulls alone leave a swarm about twice the fluid bound from done (each
// peer learns what its neighbours hold a latency late, and asks for it a
// round trip later). [Service.Push] places a peer in the stripe trees of a
// content ([Stripes], as SplitStream deals a stream out): block i belongs
// to stripe i mod K, the seed pushes each block once to its stripe's
// root, and every peer passes each block it gains on to its children in
// that stripe ([ProtoPush]), as soon as it has it, without anyone asking.
// Pushes are taken from the stripes' parents only, verified and stored as
// fetched blocks are. A running fetch leaves a stripe's blocks to the
// pushes while they come, and asks its sources for them, as usual, once
// the stripe goes [Stripes].RepairAfter without a push, or at once when
// its parent's push stream fails or carries a corrupt block (that parent's
// pushes are refused from then on), and for a block its parent offered a
// repair time ago without pushing it (a peer that joined late): pulls
// repair what a parent that left, lags or lies does not bring. A peer with
// children of its own in a stripe whose parent left or lied asks its
// grandparent ([Stripes].Grandparents) to adopt it ([ProtoAdopt]); the
// grandparent adopts the first two such orphans of a stripe (a seed one)
// and sends the others on to those that asked before, two to each, which
// adopt them in turn (stripes.Tree.Adoptee), so that a whole subtree is not left
// to pulls, nor its orphans to the seed. A parent pushes what it gains, so
// a peer asks its parents, as its fetch starts and when a parent's pushes
// come again after it was gone, for the stripe's blocks they held before
// (a peer that joined late or came back, a parent back): each parent
// pushes those it has not queued for it already; a parent that cannot be
// reached then is taken as gone (and asked again when it pushes). An
// adopter (or a parent asked for a catch-up) names its own parent in the
// stripe, which the orphan asks to adopt it if the adopter fails in turn. An
// orphan sent on to a peer that fails it asks again, a complaint: that
// peer is sent no more orphans, and cut as an adoptee once two complained
// of it. A seed doubts an orphan that asks while the root of its stripe
// still takes the seed's pushes (most often a liar the root banned): it
// adopts it, but sends it no orphan unless a second orphan of the stripe
// asks while the root still takes pushes (the root then passes nothing on:
// it is cut) and the root's stream does not fail later (it left: it was
// there for them). An orphan that no peer adopts lets its children in the
// stripe go (their push streams are reset), so that they repair it
// themselves at once. A seed answers requests for blocks it has still to
// push busy, and every request while its roots' queues move (the blocks it
// pushed already are down the trees), so that its uplink goes to the first
// copies; asked to adopt a peer or catch it up, it pushes only the blocks
// that fewer than two of its watchers hold, by their filters (the asker
// fetches the others at once, from its own sources), and any peer asked by
// a child to catch it up names the blocks it lacks itself that two or more
// of its watchers hold, so that the child fetches them rather than wait for
// it. Any parent with more than pushBacklog blocks queued for
// a child for a repair time sheds the oldest that two or more of its
// watchers hold: a have frame on the push stream names them, and the child
// fetches them from its own sources. The trees come from the application:
// every peer must be given the same ones (package testnet derives them
// from the swarm's membership and latencies with
// package peer/stripes' Plan), the seed's place best last: a push to a
// peer that has no place yet is refused, and tried again (with what was
// queued) a repair time later.
//
// A peer passes a pushed block on a piece (16 KiB) at a time as the pieces
// arrive, so that a block crosses a level of a tree in a piece's time; the
// last piece goes out only from its store, once it holds the block
// verified and the bytes sent before it are equal to it, so a corrupt push
// reaches no child whole. A seed can also place its fetchers as they join
// ([Service.Place], [WithTrees]; reconcile seed places them in
// [DefaultTrees] trees): a fetcher that others cannot dial says so and is
// placed under none like it. The seed tells the moves that joins and
// leaves make a settle time after the first of them (swarm.PlaceSettle),
// each child only its last parent, rather than move children whose blocks
// already flow; those of fetchers that hold blocks (an update, a resumed
// fetch) at once.
//
// # Protocols
//
// All under /reconcile/1/: manifest, reconcile, blocks, peers, push, adopt, offer,
// join, delta and manifest-delta (see the Proto constants). Every stream carries length-prefixed
// frames with a limit per frame ([Limits]) and buffers that grow only as bytes
// arrive; every read and write has a deadline ([WithStreamIdle]). A malformed or
// oversized message resets the stream; a stream that times out or is reset is
// retried, not taken for misbehaviour. Blocks read to be served count against
// one budget for all streams ([Limits].ServeBytes), and each block frame of a
// request goes out in one write; a push goes out 16 KiB at a time (see Stripe
// trees).
//
// # Hostile load
//
// (This section: package peer/admit for the policies, peer/serve for
// their use, peer/hostkit for bans at the socket, peer/swarm for stalls.)
//
// Every scarce resource of a server is shared fairly among remote peers
// (grouped by IPv4 address or IPv6 /48 when they connect from a public
// address, by peer id otherwise): when a resource is all taken, a peer
// under its fair share (the capacity over the peers holding or asking)
// gets room by resetting the oldest use of the peer that holds the most,
// and a peer over its share waits or is told "busy" ([ErrBusy]). With the
// [Limits] l:
//   - streams: at most l.Streams inbound streams of each protocol, at most
//     l.StreamsPerPeer per peer; a stream has 5 s to send its hello;
//   - reconciliation: at most l.Reconciles sessions answered at once, at
//     most l.ReconcilesPerPeer per peer, a slot taken only once the first
//     message has arrived whole; the memory of the sessions, counted as
//     three times their first message, is at most l.ReconcileBytes, claimed
//     from a message's length before any of its bytes are buffered; a peer
//     may send at most l.MaxFilterBytes of filters per second (twice that
//     in a burst); the filter caches of a content hold at most 32 MiB
//     beside the newest filter, whatever parameters peers announce;
//   - serving: blocks read for serving hold at most l.ServeBytes, a stream
//     waits at most the stream idle time for room;
//   - repeats: a block is sent to one peer at most 4 times a minute (then
//     answered as missing);
//   - watches: a watch holds one of the peer's streams of the reconcile
//     protocol (within l.StreamsPerPeer and l.Streams) and no reconcile
//     slot; the have frames it reads are at most 4096 indices each; the
//     watchers' filters kept for the tally of neighbours' filters hold at
//     most 32 MiB per content, summed in at most 8 parameter sets of at
//     most 2^20 counters (4 MiB each);
//   - pushes: a push stream is answered after its hello and kept only
//     from a parent of the content's stripe trees; it has no idle deadline
//     (a parent waits for the blocks it passes on), and a parent that
//     pushes a block of another's stripe, a malformed frame or a corrupt
//     block, or that the fetch finds offering blocks it does not send (a
//     phantom), is refused from then on;
//   - adoptions: an adoption request names at most l.MaxWant blocks of one
//     stripe; a peer adopts at most four orphans per stripe
//     (each costs it one more child's share of its uplink), and answers
//     any other with a peer id; a hostile adoptee holds its place until
//     its stream fails, and a hostile adopter is refused as a parent; a
//     seed asked by two orphans of a stripe stops pushing it to the
//     stripe's root, so two liars among a root's children can cut an
//     honest root off (its stripe then comes to it by fetches, and to its
//     children from it);
//   - stream churn: a peer may open 64 streams a second (128 at once); a
//     stream beyond that is reset at once and earns abuse points, so a peer
//     that opens the next stream as soon as the last was reset (thousands a
//     second, each a protocol negotiation and a handler) is banned within
//     a second.
//
// So what peers can make a server hold is bounded by about l.ReconcileBytes
// + l.ServeBytes + 64 MiB of filter caches and 64 MiB of the watchers'
// filters and their sums per content + the stream buffers
// (4 KiB each, plus the muxer's windows, bounded by [ResourceLimits]),
// whatever they send: 320 MiB with the defaults. Measured with `reconcile
// flood` (200 identities x 16 streams of every attack above on one 64 MiB
// seed), see the command's help.
//
// A peer that sends malformed frames, asks for blocks beyond the repeat
// bound or opens streams that say nothing earns abuse points, which halve
// every minute; at 100 (three malformed frames, about twenty repeats) it is
// banned for 10 minutes: its streams are reset and refused. The deny-list
// holds at most 4096 peers (the first to expire make room). On a host New
// built, a banned peer's bytes stop at the socket: its connections are
// closed, a redial from an address of its own is closed as it is accepted,
// before any handshake, for 10 s from the ban and from each later attempt
// (hostkit.AddrBanFor), and one from an address it shares with a peer that
// is not banned (a NAT, peers on one machine) or through a relay once it
// is authenticated; its streams are refused before they are negotiated. So
// junk written as fast as a peer can costs the seed an accept and a close
// per redial, not the decryption of every byte (`reconcile flood --attacks
// junk`). On an application's host (NewService) the connections are the
// application's: only the service's protocols are refused, each stream
// reset unread as it is accepted, so such a peer still costs the host the
// muxer's reading of what it writes. A fetch keeps the peers it dropped
// and banned in its store's state folder ([BanFile]), so that a resumed
// fetch (a crash, a new service on the same store) bans them again for the
// rest of their 10 minutes.
//
// A source that stalls (it answers reconciliations, is asked for blocks,
// and sends none) holds only a window of blocks for a few of the fetch's
// block times: each wait for a source's next block is bounded by four
// times what the fetch's sources take at the 99th percentile, at least
// three of its round trips ([WithStallTimeout] caps it); then its blocks
// are asked of the others, it gets a smaller window, and after three
// stalls in a row it is dropped. The summary names it ([PeerShare]'s
// Stalled and Dropped).
//
// # Reachability and discovery
//
// (This section: package peer/hostkit, peer/reach.go, peer/find.go.)
//
// [WithReach] puts go-libp2p's own reachability parts into the host [New]
// builds; each has its switch in [Reach], and [DefaultReach] (what the
// command line tool uses) turns all on. The library default is none, so
// that tests and embedders get a host that only dials and is dialled
// directly:
//   - AutoNAT v2: the host learns whether its addresses are reachable
//     ([Reach].Reachability forces the verdict; public helper nodes answer
//     other peers' requests with [Reach].AutoNATService);
//   - NAT port mapping (UPnP, NAT-PMP);
//   - circuit relay v2 client with AutoRelay: a host that is not reachable
//     reserves a slot on its relays ([Reach].Relays; the command line tool
//     takes them from --relay and from the relay addresses in a ticket), or,
//     with [Reach].DHTRelays, on relays found through the DHT (peers of its
//     routing table that offer the relay hop protocol, such as `reconcile
//     relay` nodes; a root it announced before is announced again with the
//     relay address), and advertises /RELAY-ADDR/p2p/RELAY/p2p-circuit addresses, which tickets
//     then carry (older tickets parse as before: a relay address is one more
//     multiaddr);
//   - DCUtR hole punching: two NATed peers that met through a relay open a
//     direct connection. A fetch that reached a peer only through a relay
//     waits a few seconds for it (and reconnects through the relay once, so
//     the peer tries again) before it moves blocks over the relay, which
//     it then does only as far as the relay's limits allow.
//
// [PeerShare].Path says how each peer's blocks came: [PathDirect],
// [PathHolePunched] or [PathRelayed].
//
// [WithDiscovery] finds peers by content. With a DHT mode other than
// [DHTOff] the peer runs a Kademlia DHT (go-libp2p-kad-dht); every root it
// serves (seeded, or being fetched) is announced as a provider record under
// [RootCID] (CID v1, raw codec, blake3 multihash of the root id) and
// announced again every [Discovery].Reannounce. [Service.FetchRoot]
// fetches by root id alone: [Service.FindProviders] looks the root up, and
// a running fetch keeps looking up providers and takes them as sources. A
// [Service.Fetch] that reaches none of its ticket's peers looks the root up
// too before it gives up.
// The default is a private DHT, protocol prefix [DHTPrefix] (/reconcile),
// joined through [Discovery].Bootstrap peers, so neither tests nor users touch
// the public network unless they ask; [Discovery].Amino joins the public
// IPFS Amino DHT instead. [Discovery].MDNS announces the peer on the LAN
// ([MDNSService]) and connects to the peers found there; a fetch takes them
// as sources, so fetchers on one LAN feed each other with no seed, relay
// or DHT.
//
// Both options shape the host and apply to New only; an application that
// mounts the service on its own host (NewService) configures its host's
// reachability itself.
//
// # Time
//
// Every timer, timeout, ticker and timestamp of the service comes from one
// clock ([WithClock], package peer/clock; the wall clock by default), so a
// test hands it a clockwork.FakeClock and advances it instead of sleeping,
// and [WithTimeScale] runs the service on a clock s times slower than real
// time (package testnet's time scale). What stays on real time whatever the
// clock: stream deadlines (a stream's SetDeadline takes a wall-clock time;
// clock.Deadline converts), libp2p's own timers (yamux keepalives, QUIC
// idle timeouts, the DHT's queries and refreshes, AutoRelay's and the hole
// puncher's backoffs, dial timeouts), the serve rate limiter
// ([WithServeRate]) and the seconds a Byers decode takes.
//
// # Inside
//
// This package is the public face and the wiring: Service, New,
// NewService, Seed, Serve, Fetch, the options, Ticket and Summary. Each job
// has a sub-package, and none imports this one:
//   - peer/serve: the serving side: the library of contents, the handlers
//     of the manifest, reconcile, blocks and peers protocols and their
//     budget, the watches' serving side, and the guard (admission, abuse
//     scores, bans).
//   - peer/swarm: the fetching side: requests to peers, a running fetch
//     (a worker per source, a finder of more sources, the watches), its
//     saved bans, and a content's place in its stripe trees (pushes in and
//     out, adoption and repair). It reaches the serving side through
//     package serve, and a content reaches it through serve.Fetch and
//     serve.Trees.
//   - peer/sched: which block to ask of which source (picker, rarity,
//     flow window, stall timer, super-seeding); pure.
//   - peer/admit: fair shares, rate tables, repeat bounds, abuse scores
//     and the deny-list; pure, handed the time.
//   - peer/stripes: the stripe trees' planner and policies; pure.
//   - peer/hostkit: the host with batteries (identity, transports,
//     resource limits, relay, hole punching, AutoNAT, DHT, mDNS, paths).
//   - peer/byers: the Byers baseline's coded blocks and their decoding.
//   - peer/wire: the protocols' ids, frames and sentinel errors.
//   - peer/clock: the clock.
package peer
