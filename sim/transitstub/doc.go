// Package transitstub simulates reconciliation time on a virtual Internet: a
// GT-ITM-style transit-stub topology, shortest paths over it, a Chord overlay of peers
// attached to its routers, and an event-driven model of complete (CBF subtraction)
// and Byers (Bloom filter + Reed–Solomon) reconciliation between them, reproducing
// the paper's Table 4 and running whole-swarm file distributions.
//
// # Topology and paths
//
// Package topology (sim/transitstub/topology) generates the GT-ITM-style
// transit-stub graph (Paper, Large, Small) and routes over it: a Route has
// the shortest path's delay and its bottleneck bandwidth. Network ties a
// topology, its path cache and the Chord overlay together.
//
// # Chord
//
// NewOverlay attaches N peers to random routers and gives each the SHA-1 of its
// seed and index as identifier on a 2^160 ring (or a smaller ring of Bits bits).
// Finger tables and successor lists are those of a stabilised ring. Lookups are
// routed recursively, hop by hop, each peer forwarding to its closest preceding
// finger, until the key's predecessor answers the origin directly; a hop costs the
// underlay route between the two peers. The mean hop count is about ½·log2 N
// (3.7 for 200 peers).
//
// # Events
//
// Sim is a discrete-event engine: a container/heap priority queue of timed callbacks
// run in order on one goroutine (no goroutine per message); time is in ms.
//
// # The reconciliation model: what a message costs, what is measured, what is modelled
//
//   - A message of b bytes from peer A to peer B costs the route's delay plus
//     b·8 / bottleneck bandwidth; messages one step emits leave back to back. There
//     is no queueing and no contention: concurrent messages do not slow each other,
//     and links do not lose packets (no TCP dynamics, no connection set-up).
//   - Locating B costs a Chord lookup from A (Table 4); swarm peers already know
//     their neighbours from their routing tables and send directly.
//   - Table 4 (RunTable4) runs the real protocol: two reconcile.Session state
//     machines per trial (A pulls from B, one way), with real block payloads.
//     Every message they emit is encoded with package reconcile's codec, its encoded
//     size crosses the route, and it is decoded and stepped into the other session
//     at its arrival time. What is sent, the redundant blocks (complete) and the
//     missed ones (Byers' Bloom false positives) are those of that run, and Byers'
//     A really decodes RS(NN, kk) (package erasure, Leopard GF(2^16)) and the result
//     is checked against the source.
//   - Compute time of a step is, by default, measured: the wall-clock time the
//     session reports for the step (its Config.Now is time.Now;
//     reconcile.Outcome.Compute) minus the time spent
//     building the peer's own filter (a peer keeps it between sessions), so figures
//     vary slightly between runs and with machine load. Table4Config.Costs replaces
//     it by a cost model (Costs, calibrated once by Calibrate, which times the real
//     cbfalgebra code) for deterministic figures; Table4Config.DecodeMS replaces the
//     decode time (PaperDecodeMS prices it as the paper's Table 3 measured it).
//   - Swarm (RunSwarm): every peer starts with a random share of the blocks (the
//     blocks no peer drew go to random peers, so that the swarm holds every source
//     block, or for Byers every one of the NN coded blocks), and
//     until it holds the file reconciles with one neighbour at a time, taking its
//     successor list and fingers in turn; peers keep serving after they complete.
//     The swarm is a model, not a run of the protocol: for speed with up to
//     10,000 peers, each exchange runs the filter code directly (package
//     cbfalgebra: A's incrementally kept CBF or Bloom filter, B's subtraction and
//     queries, no payloads) rather than reconcile.Session, message sizes come
//     from reconcile.Message.EncodedSize, and compute is timed by the calibrated
//     cost model; a Byers peer decodes (and re-encodes all NN coded blocks, both
//     costs measured with the real erasure code) once it holds kk distinct coded
//     blocks. What is checked against real sessions (TestSwarmModelMatchesSessions,
//     for complete, byers, bitfield and ccbf on pairs of sets of several sizes):
//     the blocks B sends A (hence redundant and missed blocks) and the encoded
//     sizes of the filter and blocks messages are exactly those of two
//     reconcile.Sessions on the same sets. Not checked: the compute times (the
//     cost model's), decode timing, and everything the network model leaves out.
//     Driving sessions instead would cost 5 to 40 times more per exchange
//     (BenchmarkSwarmExchange at the paper's sizes: about 0.3 to 0.9 ms against
//     0.04 to 0.07 ms for complete, 0.1 to 0.7 ms against 0.02 ms for Byers),
//     a minute or more for a 10,000-peer swarm (about 57,000 exchanges)
//     instead of seconds.
//   - Access links (SwarmConfig.Up, Down, Classes, SeedUp): every peer's uplink
//     and downlink are shared by its transfers in the Links model (a transfer of
//     b bytes books b/up of the sender's uplink and b/down of the receiver's
//     downlink, each in booking order; it arrives when both are done, plus the
//     route's delay), the model package testnet paces its real streams with. With
//     OneSeed (one peer holds the file, the others start empty), Parallel
//     exchanges per peer and a MaxBlocks window (package peer's sources and
//     window), the swarm runs testnet's scenario and reports the fluid lower
//     bound T* (FluidBound, Kumar and Ross 2006) and completion times over it.
//
// The paper's Table 4 times (about 15 s) cannot be derived from what the paper
// states; this model's absolute times depend on the topology's scales and the
// bandwidths chosen, so compare the ratio Byers / complete.
package transitstub
