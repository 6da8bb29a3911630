// Package reconcile holds the reconciliation protocols as pure engines: complete set
// reconciliation by counting Bloom filter subtraction (paper §7), the Byers
// baseline (a plain Bloom filter of Reed–Solomon coded blocks), and beyond the
// paper the exact baselines other systems use, a bitfield (BitTorrent) and a
// rateless invertible Bloom lookup table (IBLT), and complete reconciliation with
// entropy-coded filters (CCBF); one versioned msgpack message schema for all, and
// the outcome figures of every session. It does no IO
// and keeps no global state, so the libp2p peer, the event-driven simulator and the
// testnet drive the same code.
//
// # The pieces
//
//   - [Universe]: the blocks [0, n) of one file. It caches, per filter parameter set,
//     the k addresses of every block and CBF(U); build one per file and share it.
//   - [Set]: the block indices a side holds (a bitmap).
//   - [Filters]: a side's own filters of a fixed set, built once and shared by
//     the sessions it answers (Config.Filters).
//   - [Config]: the per-session configuration: [Method] ([Complete], [Byers],
//     [Bitfield], [IBLT] or [CCBF]; [ParseMethod] reads their names),
//     filter parameter overrides (M, K, BitsPerElement), counter width R, hash family
//     and seed (both sides must agree on these), one-way or two-way, the erasure code
//     (Byers) and decoder [Limits]. [Config.Params] picks m and k from a set size:
//     m = the smallest power of two >= 8n, k = round(ln2 m/n); a session with a
//     Blocks store may size Complete and CCBF filters for u - n ([Session.Start]).
//   - [Session]: one side of one exchange, a state machine in the etcd raft style:
//     [Session.Start] (initiator only), [Session.Step] for every message of the
//     peer, [Session.Ready] for the messages to send, [Session.Done],
//     [Session.Outcome].
//   - [Message]: the one envelope ([MsgFilter], [MsgOffer], [MsgBlocks],
//     [MsgReject], and for the IBLT [MsgMore] and [MsgWant]); [Message.MarshalBinary]
//     and [Decode] (bounded by [Limits], never panics) are the codec,
//     [Message.EncodedSize] the size on the wire.
//   - [Drive], [Driver], [Conn]: the one driver of a session over a message
//     connection, and [IsViolation] to classify its errors.
//   - [Run]: drives two sessions in memory through the codec (tests, experiments,
//     compute costs for the simulator).
//
// # The exchange
//
// Complete, two-way (the default):
//
//	A -> B  filter: CBF(S_A) and its parameters, reply requested
//	B       checks homology, D = CBF(S_B) \ CBF(S_A) with CBF(U), queries S_B against D
//	B -> A  filter: CBF(S_B) (same parameters)
//	B -> A  blocks (or offer): every block of S_B that D may contain
//	A       the same in the other direction with D' = CBF(S_A) \ CBF(S_B)
//	A -> B  blocks (or offer)
//
// With Config.OneWay only the first filter and B's answer flow; B then skips
// building CBF(S_B): for its own blocks, membership in D equals membership in
// ~CBF(S_A) = CBF(U) - CBF(S_A), since CBF(S_B) >= 1 on their counters.
//
// D has no false negatives, so every block of S_B \ S_A reaches A (missed = 0) along
// with a few redundant blocks of S_A ∩ S_B (expected |S_A ∩ S_B| times
// cbfalgebra.FPSubtract). Byers runs the same messages with a plain Bloom filter of
// the coded blocks held: B sends the blocks the filter says A lacks, false positives
// make B miss some, and A decodes (Config.Code) once it holds kk distinct ones.
//
// # The other methods
//
// [Bitfield] and [CCBF] run the same messages as Complete: the filter is a bitfield
// of ceil(u/8) bytes ([Set.AppendBitfield]) answered with exactly S_B \ S_A, or the
// CBF Huffman coded ([CompressFilter], about 42 % of r*m bits at the optimal load)
// with the same answers as Complete. [IBLT] streams coded cells until the
// responder has decoded the symmetric difference, then answers exactly:
//
//	A -> B  filter: the first IBLTCells coded cells of S_A (reply requested if two-way)
//	B -> A  more: n cells                  (while the cells do not decode)
//	A -> B  filter: the next n cells
//	B -> A  blocks (or offer): S_B \ S_A   (exactly)
//	B -> A  want: S_A \ S_B                (two-way only)
//	A -> B  blocks (or offer)              (two-way only)
//
// A decoded difference is checked (pure cells are recognised by inverting a keyed
// 64-bit hash into the universe; every element's membership in the responder's own
// set; the set sizes) and a failure ends the session with [ErrDecode]; a wrong set
// is never answered. [Outcome.Cells] counts the cells,
// and [Run] and [Drive] fill in [Outcome.Flights] (round trips = Flights/2).
//
// A session with a [Blocks] store answers with [MsgBlocks] (indices and payloads) and
// stores what it receives. Without one it answers with [MsgOffer] (indices only): the
// caller moves the bytes itself, and [Session.Wanted] lists the offered blocks this
// side lacked (the redundant ones need not be fetched).
//
// # Driving a session over a network
//
// [Drive] is the one loop that moves a session's messages over a [Conn] (Send
// and Flush encoded messages, Recv the next one; a Conn over a byte stream
// frames them, e.g. with a length prefix):
//
//	s, _ := reconcile.NewSession(id, cfg, universe, held, nil)
//	s.Start()                                  // initiator only
//	err := reconcile.Drive(ctx, s, conn, lim)  // until s is Done
//	if reconcile.IsViolation(err) { ... }      // the peer broke the protocol
//	o := s.Outcome()                           // sent, received, bytes, flights
//
// A responder that picks its configuration from the peer's first message
// decodes it, creates the session, steps the message in and then calls Drive,
// which starts by sending the answer (or the MsgReject). [Driver] is the same
// machinery for callers that push messages in as they arrive: [Run], the
// event-driven simulator and the trace test. Errors of the connection come back
// as [ConnError]; [IsViolation] tells a peer's protocol violations (malformed,
// unexpected or out-of-file messages) from connection errors, rejects and
// configurations that do not match.
//
// The loop is the same for every method: an IBLT session simply takes more turns.
// Errors wrap the sentinels of this package or of cbfalgebra
// (cbfalgebra.ErrNotHomologous, ErrCorrupt, ErrTooLarge).
package reconcile
