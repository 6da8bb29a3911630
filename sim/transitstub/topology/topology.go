package topology

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// ErrParams reports topology or bandwidth parameters that are out of range.
// Package transitstub's ErrParams is the same error, so that errors.Is
// matches either.
var ErrParams = errors.New("transitstub: invalid parameters")

// GraphMethod is the random-graph model used inside one level of the hierarchy.
type GraphMethod uint8

const (
	// PureRandom joins every pair of nodes with the same probability Alpha.
	PureRandom GraphMethod = iota
	// Waxman joins nodes u, v with probability Alpha·exp(-d(u,v) / (Beta·L)), where d
	// is their distance in the plane and L the largest distance possible in the square.
	Waxman
)

// String returns "random" or "waxman".
func (m GraphMethod) String() string {
	if m == Waxman {
		return "waxman"
	}
	return "random"
}

// MarshalText implements encoding.TextMarshaler (JSON shows the name).
func (m GraphMethod) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *GraphMethod) UnmarshalText(b []byte) error {
	switch string(b) {
	case "random":
		*m = PureRandom
	case "waxman":
		*m = Waxman
	default:
		return fmt.Errorf("%w: graph method %q (want random or waxman)", ErrParams, b)
	}
	return nil
}

// GraphModel is the random-graph method and its parameters for one level.
type GraphModel struct {
	Method GraphMethod `json:"method"`
	// Alpha is the edge probability (PureRandom) or Waxman's alpha.
	Alpha float64 `json:"alpha"`
	// Beta is Waxman's beta; unused by PureRandom.
	Beta float64 `json:"beta,omitempty"`
}

// prob returns the probability of an edge between two nodes at distance d in a square
// of side side.
func (g GraphModel) prob(d, side float64) float64 {
	if g.Method == Waxman {
		l := side * math.Sqrt2
		if l <= 0 || g.Beta <= 0 {
			return g.Alpha
		}
		return g.Alpha * math.Exp(-d/(g.Beta*l))
	}
	return g.Alpha
}

// Params are GT-ITM's transit-stub parameters. Positions are in a plane whose unit is
// one millisecond of link delay.
type Params struct {
	// Transit is the number of transit domains (T).
	Transit int `json:"transit"`
	// TransitRouters is the number of routers per transit domain (Nt).
	TransitRouters int `json:"transit_routers"`
	// Stubs is the number of stub domains hanging off each transit router (K).
	Stubs int `json:"stubs"`
	// StubRouters is the number of routers per stub domain (Ns).
	StubRouters int `json:"stub_routers"`

	// Scale is the side of the square in which transit domains are centred.
	Scale float64 `json:"scale"`
	// TransitScale is the side of the square, centred on its domain's centre, in
	// which a transit domain's routers lie.
	TransitScale float64 `json:"transit_scale"`
	// StubScale is the side of the square, centred on its transit router, in which a
	// stub domain's routers lie.
	StubScale float64 `json:"stub_scale"`

	// Top is the graph between transit domains; each of its edges becomes one link
	// between random routers of the two domains.
	Top GraphModel `json:"top"`
	// TransitGraph is the graph inside each transit domain.
	TransitGraph GraphModel `json:"transit_graph"`
	// StubGraph is the graph inside each stub domain.
	StubGraph GraphModel `json:"stub_graph"`

	// ExtraTransitStub is the number of extra links between a random stub router and
	// a random transit router (besides the one link each stub domain hangs by).
	ExtraTransitStub int `json:"extra_transit_stub"`
	// ExtraStubStub is the number of extra links between routers of two different
	// random stub domains.
	ExtraStubStub int `json:"extra_stub_stub"`
}

// Routers returns T·Nt·(1 + K·Ns).
func (p Params) Routers() int {
	return p.Transit * p.TransitRouters * (1 + p.Stubs*p.StubRouters)
}

// maxRouters bounds Generate so a typo cannot exhaust memory.
const maxRouters = 4 << 20

// Validate reports whether the parameters can be generated.
func (p Params) Validate() error {
	switch {
	case p.Transit < 1 || p.TransitRouters < 1 || p.Stubs < 0 || p.StubRouters < 1 && p.Stubs > 0:
		return fmt.Errorf("%w: need transit >= 1, transit-routers >= 1, stubs >= 0, stub-routers >= 1", ErrParams)
	case p.Scale < 0 || p.TransitScale < 0 || p.StubScale < 0:
		return fmt.Errorf("%w: scales must not be negative", ErrParams)
	case p.ExtraTransitStub < 0 || p.ExtraStubStub < 0:
		return fmt.Errorf("%w: extra edge counts must not be negative", ErrParams)
	}
	for _, g := range []GraphModel{p.Top, p.TransitGraph, p.StubGraph} {
		if g.Alpha < 0 || g.Alpha > 1 || g.Beta < 0 {
			return fmt.Errorf("%w: graph alpha must be in [0,1] and beta >= 0", ErrParams)
		}
	}
	// Overflow-safe router count check.
	n := float64(p.Transit) * float64(p.TransitRouters) * (1 + float64(p.Stubs)*float64(p.StubRouters))
	if n > maxRouters {
		return fmt.Errorf("%w: %.0f routers is more than %d", ErrParams, n, maxRouters)
	}
	return nil
}

// Paper returns the preset reproducing the paper's network: 5050 routers (T = 10,
// Nt = 5, K = 10, Ns = 10), about 12584 undirected links (25168 arcs) and a mean link
// delay of about 40.5 ms.
func Paper() Params {
	return Params{
		Transit: 10, TransitRouters: 5, Stubs: 10, StubRouters: 10,
		Scale: 300, TransitScale: 60, StubScale: 76.6,
		Top:              GraphModel{Method: PureRandom, Alpha: 0.5},
		TransitGraph:     GraphModel{Method: PureRandom, Alpha: 0.6},
		StubGraph:        GraphModel{Method: PureRandom, Alpha: 0.525},
		ExtraTransitStub: 50,
		ExtraStubStub:    50,
	}
}

// Large returns a 50,100-router preset (T = 10, Nt = 10, K = 10, Ns = 50) with the
// paper preset's scales and sparser stub graphs, for swarms of thousands of peers.
func Large() Params {
	return Params{
		Transit: 10, TransitRouters: 10, Stubs: 10, StubRouters: 50,
		Scale: 300, TransitScale: 60, StubScale: 76,
		Top:              GraphModel{Method: PureRandom, Alpha: 0.5},
		TransitGraph:     GraphModel{Method: PureRandom, Alpha: 0.4},
		StubGraph:        GraphModel{Method: PureRandom, Alpha: 0.1},
		ExtraTransitStub: 500,
		ExtraStubStub:    500,
	}
}

// Small returns a 110-router preset (T = 2, Nt = 5, K = 2, Ns = 5) for tests and examples.
func Small() Params {
	p := Paper()
	p.Transit, p.TransitRouters, p.Stubs, p.StubRouters = 2, 5, 2, 5
	p.ExtraTransitStub, p.ExtraStubStub = 2, 2
	return p
}

// LinkClass is the level of the hierarchy a link belongs to; bandwidth is set per class.
type LinkClass uint8

const (
	// TransitLink joins two transit routers (inside a domain or between domains).
	TransitLink LinkClass = iota
	// TransitStubLink joins a stub router to a transit router.
	TransitStubLink
	// StubLink joins two stub routers (inside a stub domain or an extra stub-stub link).
	StubLink
	numClasses
)

// String returns "transit", "transit-stub" or "stub".
func (c LinkClass) String() string {
	switch c {
	case TransitLink:
		return "transit"
	case TransitStubLink:
		return "transit-stub"
	case StubLink:
		return "stub"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Edge is one undirected link.
type Edge struct {
	A, B    int32
	DelayMS int32
	Class   LinkClass
}

// Topology is a generated transit-stub network. Routers 0 .. T·Nt-1 are transit
// routers (domain by domain); the stub routers follow, stub domain by stub domain.
// A Topology is immutable and safe for concurrent use.
type Topology struct {
	params Params
	seed   uint64
	x, y   []float64
	edges  []Edge
	// CSR adjacency: the arcs of router r are off[r] .. off[r+1]-1.
	off   []int32
	to    []int32
	delay []int32
	class []LinkClass
	// maxDelay is the largest link delay, for the bucket queue of Dijkstra.
	maxDelay int32
}

// builder accumulates edges without duplicates.
type builder struct {
	x, y  []float64
	edges []Edge
	seen  map[uint64]struct{}
}

func pairKey(a, b int32) uint64 {
	if a > b {
		a, b = b, a
	}
	return uint64(uint32(a))<<32 | uint64(uint32(b))
}

func (b *builder) dist(u, v int32) float64 {
	return math.Hypot(b.x[u]-b.x[v], b.y[u]-b.y[v])
}

// add inserts edge u-v unless it exists or is a loop; it reports whether it was added.
func (b *builder) add(u, v int32, c LinkClass) bool {
	if u == v {
		return false
	}
	k := pairKey(u, v)
	if _, ok := b.seen[k]; ok {
		return false
	}
	b.seen[k] = struct{}{}
	d := int32(math.Round(b.dist(u, v)))
	if d < 1 {
		d = 1
	}
	b.edges = append(b.edges, Edge{A: u, B: v, DelayMS: d, Class: c})
	return true
}

// randomGraph draws a connected random graph over nodes (in their plane positions)
// and returns its edges as index pairs into nodes. Like GT-ITM it draws again when
// the graph is disconnected; after maxAttempts it joins the components by their
// shortest links so generation always terminates.
func randomGraph(rng *rand.Rand, b *builder, nodes []int32, g GraphModel, side float64) [][2]int32 {
	const maxAttempts = 100
	n := len(nodes)
	var es [][2]int32
	uf := make([]int32, n)
	for attempt := 0; ; attempt++ {
		es = es[:0]
		for i := range uf {
			uf[i] = int32(i)
		}
		comps := n
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if rng.Float64() < g.prob(b.dist(nodes[i], nodes[j]), side) {
					es = append(es, [2]int32{int32(i), int32(j)})
					if union(uf, int32(i), int32(j)) {
						comps--
					}
				}
			}
		}
		if comps == 1 {
			return es
		}
		if attempt+1 < maxAttempts {
			continue
		}
		// Repair: repeatedly join the closest pair of nodes in different components.
		for comps > 1 {
			bi, bj, bd := -1, -1, math.Inf(1)
			for i := 0; i < n; i++ {
				for j := i + 1; j < n; j++ {
					if find(uf, int32(i)) != find(uf, int32(j)) {
						if d := b.dist(nodes[i], nodes[j]); d < bd {
							bi, bj, bd = i, j, d
						}
					}
				}
			}
			es = append(es, [2]int32{int32(bi), int32(bj)})
			union(uf, int32(bi), int32(bj))
			comps--
		}
		return es
	}
}

func find(uf []int32, a int32) int32 {
	for uf[a] != a {
		uf[a] = uf[uf[a]]
		a = uf[a]
	}
	return a
}

func union(uf []int32, a, b int32) bool {
	ra, rb := find(uf, a), find(uf, b)
	if ra == rb {
		return false
	}
	uf[ra] = rb
	return true
}

// Generate builds a transit-stub topology. The result depends only on p and seed.
func Generate(p Params, seed uint64) (*Topology, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x7472616e73697473)) // "transits"
	n := p.Routers()
	b := &builder{x: make([]float64, n), y: make([]float64, n), seen: make(map[uint64]struct{}, 3*n)}
	nt := p.Transit * p.TransitRouters
	uniform := func(cx, cy, side float64) (float64, float64) {
		return cx + (rng.Float64()-0.5)*side, cy + (rng.Float64()-0.5)*side
	}

	// Transit domains: a centre each, routers around it.
	cx, cy := make([]float64, p.Transit), make([]float64, p.Transit)
	for d := range p.Transit {
		cx[d], cy[d] = uniform(p.Scale/2, p.Scale/2, p.Scale)
	}
	// Top-level graph between domains.
	top := &builder{x: cx, y: cy}
	dom := make([]int32, p.Transit)
	for i := range dom {
		dom[i] = int32(i)
	}
	topEdges := randomGraph(rng, top, dom, p.Top, p.Scale)
	for d := range p.Transit {
		base := d * p.TransitRouters
		nodes := make([]int32, p.TransitRouters)
		for i := range nodes {
			r := int32(base + i)
			nodes[i] = r
			b.x[r], b.y[r] = uniform(cx[d], cy[d], p.TransitScale)
		}
		for _, e := range randomGraph(rng, b, nodes, p.TransitGraph, p.TransitScale) {
			b.add(nodes[e[0]], nodes[e[1]], TransitLink)
		}
	}
	for _, e := range topEdges {
		u := int32(int(e[0])*p.TransitRouters + rng.IntN(p.TransitRouters))
		v := int32(int(e[1])*p.TransitRouters + rng.IntN(p.TransitRouters))
		b.add(u, v, TransitLink)
	}
	// Stub domains: K per transit router, each hanging off it by one link.
	next := int32(nt)
	nodes := make([]int32, p.StubRouters)
	for t := range nt {
		for range p.Stubs {
			for i := range nodes {
				nodes[i] = next
				b.x[next], b.y[next] = uniform(b.x[t], b.y[t], p.StubScale)
				next++
			}
			for _, e := range randomGraph(rng, b, nodes, p.StubGraph, p.StubScale) {
				b.add(nodes[e[0]], nodes[e[1]], StubLink)
			}
			b.add(nodes[rng.IntN(len(nodes))], int32(t), TransitStubLink)
		}
	}
	stubs := n - nt
	if stubs > 0 {
		for added, tries := 0, 0; added < p.ExtraTransitStub && tries < 100*p.ExtraTransitStub; tries++ {
			if b.add(int32(nt+rng.IntN(stubs)), int32(rng.IntN(nt)), TransitStubLink) {
				added++
			}
		}
		for added, tries := 0, 0; added < p.ExtraStubStub && tries < 100*p.ExtraStubStub; tries++ {
			u, v := nt+rng.IntN(stubs), nt+rng.IntN(stubs)
			if (u-nt)/p.StubRouters == (v-nt)/p.StubRouters {
				continue
			}
			if b.add(int32(u), int32(v), StubLink) {
				added++
			}
		}
	}
	return newTopology(p, seed, b.x, b.y, b.edges), nil
}

// newTopology builds the CSR adjacency of edges.
func newTopology(p Params, seed uint64, x, y []float64, edges []Edge) *Topology {
	n := len(x)
	t := &Topology{params: p, seed: seed, x: x, y: y, edges: edges}
	t.off = make([]int32, n+1)
	for _, e := range edges {
		t.off[e.A+1]++
		t.off[e.B+1]++
		if e.DelayMS > t.maxDelay {
			t.maxDelay = e.DelayMS
		}
	}
	for i := 1; i <= n; i++ {
		t.off[i] += t.off[i-1]
	}
	m := 2 * len(edges)
	t.to = make([]int32, m)
	t.delay = make([]int32, m)
	t.class = make([]LinkClass, m)
	pos := append([]int32(nil), t.off[:n]...)
	put := func(u, v int32, e Edge) {
		i := pos[u]
		pos[u]++
		t.to[i], t.delay[i], t.class[i] = v, e.DelayMS, e.Class
	}
	for _, e := range edges {
		put(e.A, e.B, e)
		put(e.B, e.A, e)
	}
	// Sort each router's arcs by neighbour for a canonical order.
	for r := range n {
		lo, hi := t.off[r], t.off[r+1]
		sort.Sort(arcSorter{t, lo, hi})
	}
	return t
}

type arcSorter struct {
	t      *Topology
	lo, hi int32
}

func (s arcSorter) Len() int { return int(s.hi - s.lo) }
func (s arcSorter) Less(i, j int) bool {
	return s.t.to[s.lo+int32(i)] < s.t.to[s.lo+int32(j)]
}
func (s arcSorter) Swap(i, j int) {
	a, b := s.lo+int32(i), s.lo+int32(j)
	s.t.to[a], s.t.to[b] = s.t.to[b], s.t.to[a]
	s.t.delay[a], s.t.delay[b] = s.t.delay[b], s.t.delay[a]
	s.t.class[a], s.t.class[b] = s.t.class[b], s.t.class[a]
}

// Params returns the parameters the topology was generated with.
func (t *Topology) Params() Params { return t.params }

// Seed returns the seed the topology was generated with.
func (t *Topology) Seed() uint64 { return t.seed }

// Routers returns the number of routers.
func (t *Topology) Routers() int { return len(t.x) }

// Links returns the number of undirected links.
func (t *Topology) Links() int { return len(t.edges) }

// Arcs returns the number of directed arcs (2 per link; GT-ITM's count).
func (t *Topology) Arcs() int { return len(t.to) }

// Edges returns the undirected links. The slice is shared: do not modify it.
func (t *Topology) Edges() []Edge { return t.edges }

// IsTransit reports whether router r is a transit router.
func (t *Topology) IsTransit(r int) bool { return r < t.params.Transit*t.params.TransitRouters }

// Position returns router r's coordinates in the plane (in ms).
func (t *Topology) Position(r int) (x, y float64) { return t.x[r], t.y[r] }

// Degree returns the number of links at router r.
func (t *Topology) Degree(r int) int { return int(t.off[r+1] - t.off[r]) }

// MeanLinkDelay returns the mean link delay in ms.
func (t *Topology) MeanLinkDelay() float64 {
	if len(t.edges) == 0 {
		return 0
	}
	var s int64
	for _, e := range t.edges {
		s += int64(e.DelayMS)
	}
	return float64(s) / float64(len(t.edges))
}

// Connected reports whether every router can reach every other.
func (t *Topology) Connected() bool {
	n := t.Routers()
	if n == 0 {
		return true
	}
	seen := make([]bool, n)
	stack := []int32{0}
	seen[0] = true
	count := 1
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for i := t.off[u]; i < t.off[u+1]; i++ {
			if v := t.to[i]; !seen[v] {
				seen[v] = true
				count++
				stack = append(stack, v)
			}
		}
	}
	return count == n
}
