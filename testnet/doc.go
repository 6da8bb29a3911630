// Package testnet runs hundreds of real peers (package peer) in one process and
// distributes a file among them, over go-libp2p's in-process mock network shaped
// like a simulated Transit-Stub topology, or over real loopback TCP.
//
// # The network
//
// Run generates a Transit-Stub topology and a Chord overlay (package
// sim/transitstub) and attaches every peer to its router. Peers may connect only
// to their neighbours: their Chord fingers and successors, or random peers
// (Config.Neighbours, Config.Degree). On the mock network (TransportMock) each
// neighbour pair's latency is the underlay's shortest-path delay between the
// two routers (LatencyTransitStub) or zero (LatencyNone), with an optional
// bandwidth cap (Config.Bandwidth, bytes per second per link, shared by both
// directions). TransportTCP runs the same peers over real loopback TCP with
// Noise/TLS and yamux, a connection gater keeping the overlay, and no added
// latency: it shows the results hold on real sockets, for fewer peers.
//
// The latency is not the mock network's own: a go-libp2p mock stream
// delivers one write at a time, each a latency after the last was taken, so
// it let about two writes per latency through whatever the writer sent (11
// Mbit/s for 256 KiB blocks at 373 ms), which no real transport does. The
// mock links have no latency; the host wrapper that counts bytes carries
// every write of package peer's streams through the run's network model
// (shaper, linkStream): the writer's uplink (see Access links), then the
// pair's latency, then the reader's downlink, delivered in order with up to
// 3 MiB in flight a stream, as a TCP flow with a window large enough for
// the path. The mock network's stream deadlines do nothing, so package
// peer's stall and idle timeouts do not fire there (a stalled stream is
// ended by the fetch's context); it has no security or muxer layer, so the
// byte counts are the streams' payload.
//
// # Access links
//
// Config.Up and Config.Down (or Config.Classes, heterogeneous, and
// Config.SeedUp) give every peer an upload and a download capacity shared by
// all its connections, on top of the links' latency, on either transport, in
// sim/transitstub's Links model, the one the simulator's swarm uses: a write
// of b bytes from peer i to peer j takes b/Up_i of i's uplink, booked in the
// order written (the writing goroutine sleeps until it has been sent, as on a
// socket whose buffer is full), and, once it has crossed the latency, b/Down_j
// of j's downlink, booked in the order bytes reach it. With one seed, the run
// reports the fluid lower bound T* (transitstub.FluidBound) and the
// completion times over it; no peer can finish before T*, since no link ever
// carries more than its capacity.
//
// # Time scale
//
// A run moves every peer's copy of the file through one process: 200 peers of
// 16 MiB is 3.2 GiB hashed and stored, some 25 CPU-seconds on a 2-core
// machine, where a 20 Mbit/s swarm needs 6.7 s for it. Config.TimeScale runs
// the network that many times slower (rates divided, latencies and the
// peers' timers multiplied, package peer's WithTimeScale) and reports the
// completion times in the described network's seconds; 0 picks the scale
// from the bytes and blocks to move, the sources of a fetch, T* and the
// cores (AutoTimeScale). Result.CPUUse says how busy the machine was during
// the fetches.
//
// # Methods
//
// Config.Method is any of package reconcile's methods: the paper's complete
// reconciliation (CBF subtraction) and Byers baseline (Bloom filter of coded
// blocks), and CCBF, Bitfield and IBLT. The command's --method both runs the
// first two side by side, --method all every one.
//
// # Scenarios
//
// With Config.Hold = 0 one random peer seeds the whole file and the others start
// empty; with Hold = F every peer starts with a random F of the units (complete:
// source blocks; Byers: coded blocks, F·blocks of them, as sim/transitstub's
// swarm does), and every unit is held by at least one peer. Every peer serves
// what it holds before any fetch starts (peer.Prepare), then all fetch at once
// from their neighbours (and from any peer that reconciles with them, and the
// peers those name, as package peer does) until every peer holds the file.
//
// With Config.Update (package testnet/update) every fetcher holds version 1
// of the file and the one seed serves version 2, with that share of the
// bytes overwritten in Config.UpdatePlaces places: each fetcher's store of
// version 2 is staged beside version 1 and takes the blocks the two share
// from version 1's file (chunker.Store.Reuse), as package peer's Fetch into
// an older version does, so the swarm moves only the new blocks (B_new,
// Result.Update), among which the fetchers trade as above; T* is then that
// of B_new. Version 2 replaces version 1 at its final name once the
// fetches are over, and that file is re-hashed. Config.Chunking cuts the
// file into content-defined blocks instead of fixed-size ones, in any
// scenario of a block method.
//
// # Churn and liars
//
// Config.Churn makes peers leave mid-fetch (their service closed, their host
// cut from every neighbour), some of them come back after a pause and resume
// from their stores (reopened re-hashing the blocks on disk, served, and
// fetched to the end), and others join late, once the swarm has made some
// progress (see Churn). Config.Liars makes a share of the peers lie
// (LiarKind): corrupt liars fetch like everyone but flip bytes in every block
// they send, phantom liars claim the whole file in their filters and offers
// and answer every block asked of them as missing. A liar's host wraps the
// streams of the blocks it serves and rewrites their frames (package
// peer/wire); package peer is not told who lies. Roles are drawn from their
// own random stream, never the seed, and, when every peer starts with a share,
// every unit is held by an honest peer present from start to end. The run
// ends when every honest peer that stays, comes back or joins late holds the
// file; those and the seed are re-hashed (Result.Checked), the liars and the
// peers that left for good are not. An honest fetch that stores no block for
// Config.StuckAfter is started again on its store (Result.Restarts): the mock
// network's streams ignore deadlines, so package peer's idle timeouts cannot
// end a stream on which both sides wait.
//
// # NATs and relays
//
// Config.NAT puts a share of the peers behind NATs (package
// testnet/natmodel): two NATed peers whose hole punch fails talk through a
// relay, whose links, latencies and limits their bytes cross, or not at
// all without relays; package peer sees those connections relayed.
// Result.NAT says what the relays carried. T* is unchanged.
//
// # Figures
//
// A Result has the completion time of every fetching peer (median, p95, max),
// the payload bytes on the wire by message type (counted by a wrapper around
// every host: filter, blocks, want, manifest, peers), blocks moved, redundant
// blocks (received but already held), missed blocks (held by the answering
// peer, lacked by the fetcher when the answer was written, and not offered: a
// Bloom filter false positive of Byers; always 0 for complete reconciliation),
// the churn events and the liars' lies and costs (corrupt blocks received,
// bans, bans of honest peers), the peak memory of the process during the run, and the number of peers whose
// file re-hashes to the root id of the seed.
package testnet
