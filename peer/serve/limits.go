package serve

// Limits bound what a remote peer may make this peer allocate or hold open.
type Limits struct {
	// MaxManifestBytes is the largest manifest accepted from a peer. Default 256 MiB.
	MaxManifestBytes int
	// MaxFilterBytes is the largest reconciliation message (a filter or an index
	// list) accepted. Default 16 MiB (a CBF of 2^25 4-bit counters).
	MaxFilterBytes int
	// Reconciles is the most reconciliation requests answered at once, over
	// all peers; more wait their turn (up to the stream idle time, then they
	// are told "busy"). With MaxFilterBytes it bounds the memory remote
	// filters can take. A slot is taken only once the request's whole first
	// message has arrived and decoded. Default 8.
	Reconciles int
	// ReconcilesPerPeer is the most of those slots one remote peer holds at
	// once; its further requests are told "busy" at once. Default 2.
	ReconcilesPerPeer int
	// MaxWant is the most blocks one want message may ask for. Default 256.
	MaxWant int
	// StreamsPerPeer is the most concurrent inbound streams of one protocol one
	// remote peer may hold open. Default 8.
	StreamsPerPeer int
	// Streams is the most concurrent inbound streams of one protocol over all
	// peers. Default 512.
	Streams int
	// ServeBytes is the most bytes of blocks read from the store for serving
	// that are held in memory at once, over all streams (each stream holds
	// one block at a time; a block larger than ServeBytes waits until it is
	// alone). It is shared fairly among peers: a peer waits at most the
	// stream idle time for room, and one under its share gets room by
	// resetting a stream of the peer that holds the most. Default 64 MiB.
	ServeBytes int
	// ReconcileBytes is the most memory the reconciliation sessions answered
	// at once may take, over all peers, a session counting three times the
	// size of its first message (the message, its decoded filter and the
	// result of the subtraction). It is claimed when the message's length
	// has arrived, before any of its bytes are buffered, and shared fairly
	// among peers like ServeBytes; a message that finds no room within the
	// stream idle time is refused with "busy". Default 128 MiB: two sessions
	// with filters of 16 MiB at once, or thousands of small ones.
	ReconcileBytes int
}

// DefaultLimits are the limits used when WithLimits is not given.
var DefaultLimits = Limits{
	MaxManifestBytes:  256 << 20,
	MaxFilterBytes:    16 << 20,
	Reconciles:        8,
	ReconcilesPerPeer: 2,
	MaxWant:           256,
	StreamsPerPeer:    8,
	Streams:           512,
	ServeBytes:        64 << 20,
	ReconcileBytes:    128 << 20,
}

// OrDefaults returns l with its zero (or negative) fields taken from
// DefaultLimits.
func (l Limits) OrDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, d *int }{
		{&l.MaxManifestBytes, &d.MaxManifestBytes}, {&l.MaxFilterBytes, &d.MaxFilterBytes},
		{&l.MaxWant, &d.MaxWant}, {&l.Reconciles, &d.Reconciles}, {&l.ReconcilesPerPeer, &d.ReconcilesPerPeer}, {&l.StreamsPerPeer, &d.StreamsPerPeer},
		{&l.Streams, &d.Streams}, {&l.ServeBytes, &d.ServeBytes}, {&l.ReconcileBytes, &d.ReconcileBytes},
	} {
		if *f.v > 0 {
			*f.d = *f.v
		}
	}
	return d
}
