// Package serve is the serving side of a reconcile peer: the contents it
// holds (Library, Content: a manifest, its store, the reconciliation
// Responder and what was sent to whom), the Server that answers the
// manifest, reconcile, blocks and peers protocols and keeps watches, and
// the Guard that admits remote peers, scores their abuse and bans them.
//
// Package peer wires these to a libp2p host; the fetching side (package
// peer's fetches and stripe trees) reaches a content's running fetch and
// trees through the Fetch and Trees interfaces, so that this package knows
// nothing of them. Nothing here reads the wall clock: time comes from
// Config.Clock.
package serve
