// Package topology generates the virtual Internet of package transitstub's
// simulator and routes over it: a GT-ITM-style transit-stub graph of routers
// and links, and shortest paths between routers with their delays and
// bottleneck bandwidths. It imports nothing of the simulator.
//
// # Topology
//
// Generate follows GT-ITM's transit-stub model: T transit domains of Nt routers, K stub
// domains per transit router, Ns routers per stub domain (T·Nt·(1+K·Ns) routers).
// Routers lie in a plane: transit domain centres uniformly in a Scale×Scale square,
// a domain's routers in a TransitScale square around its centre, a stub domain's
// routers in a StubScale square around its transit router. Each level is a random
// graph (pure random with edge probability Alpha, or Waxman), drawn again while it
// is disconnected (as GT-ITM does; after 100 draws the components are joined by
// their shortest links). Each top-level edge becomes a link between random routers
// of the two transit domains; each stub domain hangs off its transit router by one
// link from a random stub router; ExtraTransitStub and ExtraStubStub add further
// links. A link's delay is its rounded Euclidean length in ms (at least 1). The whole
// graph is connected and depends only on the parameters and the seed.
//
// Paper is the paper's network: 5050 routers (T=10, Nt=5, K=10, Ns=10), stub edge
// probability 0.525 and StubScale 76.6 tuned so that the link count is about 12584
// undirected links (25168 arcs, GT-ITM counting each link twice) and the mean link
// delay about 40.5 ms. Large is a 50,100-router network for big swarms.
//
// # Paths
//
// Paths runs Dijkstra (Dial's bucket queue: delays are small integers) from a router
// on demand and caches the result. A Route has the path's delay and its bottleneck
// bandwidth: the smallest of the per-class link bandwidths (transit, transit-stub,
// stub) along the widest of the shortest paths, and of the peers' access links.
package topology
