// Package swarm is the fetching side of a reconcile peer: a Node opens
// requests to other peers (ClientStream), runs fetches of served contents
// (FetchServed: a worker per source reconciles with it, watches it and
// asks it for blocks through a window that follows its rate; a finder adds
// the peers the sources name and those the DHT or the LAN find), keeps a
// fetch's bans in its store (package bans), and keeps a content's place in its
// stripe trees (Trees: pushes to children as blocks arrive, a parent's
// pushes taken in, adoption and repair when a parent leaves or lies).
//
// Package peer wires a Node to the serving side (package serve) on one
// host; the server reaches a running fetch and a content's trees only
// through the serve.Fetch and serve.Trees interfaces. Nothing here reads
// the wall clock: time comes from Config.Clock.
package swarm
