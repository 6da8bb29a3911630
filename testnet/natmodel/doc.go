// Package natmodel is the model of NATs and relays that package testnet puts
// under its in-process network: which peers sit behind a NAT, which pairs of
// them can punch a hole to each other, which relay carries the bytes of the
// pairs that cannot, and the relay's limits on each relayed connection.
//
// It does no IO and keeps no clock of its own: testnet asks it about pairs
// of peers (numbered 0 to n−1) and relays (0 to Relays−1) and hands it the
// time of each write.
//
// # The model
//
// A share of the peers (Config.Share, drawn from the run's seed) sits behind
// NATs; the others are public. A public peer reaches anyone directly (a
// NATed peer dials it, or is dialled back through connection reversal). Two
// NATed peers connect directly only if their hole punch succeeds, which it
// does with probability Config.Punch: one draw per unordered pair, from the
// seed and the pair alone, so a pair's fate is the same whatever else the
// run does. A pair whose punch fails talks through a relay when the run has
// relays (Config.Relays): every NATed peer holds a reservation with one
// relay, drawn from the seed, and a pair's circuit goes through the relay of
// its peer with the larger number (the one dialled, say). Without relays
// such a pair cannot talk at all.
//
// A relayed connection (a circuit) ends, as a go-libp2p circuit v2 relay
// ends it, once it has carried Limits.Data bytes in either direction or
// lasted Limits.Duration (DefaultLimits: 128 KiB and 2 minutes, the relay
// service's defaults); the peers may open a new one, with a fresh budget
// (Circuits).
//
// The model says nothing of time to punch: a punched pair is as good as a
// direct one from the start.
package natmodel
