package topology

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
)

// Bandwidth is the capacity, in bits per second, of each link class and of the access
// link between a peer and the router it attaches to.
type Bandwidth struct {
	Transit     float64
	TransitStub float64
	Stub        float64
	Access      float64
}

// DefaultBandwidth is 1 Gbit/s in the transit core, 100 Mbit/s on transit-stub and
// stub links and 10 Mbit/s on a peer's access link.
var DefaultBandwidth = Bandwidth{Transit: 1e9, TransitStub: 100e6, Stub: 100e6, Access: 10e6}

func (b Bandwidth) class(c LinkClass) float64 {
	switch c {
	case TransitLink:
		return b.Transit
	case TransitStubLink:
		return b.TransitStub
	}
	return b.Stub
}

// Validate reports whether every bandwidth is positive.
func (b Bandwidth) Validate() error {
	if !(b.Transit > 0 && b.TransitStub > 0 && b.Stub > 0 && b.Access > 0) {
		return fmt.Errorf("%w: every bandwidth must be positive", ErrParams)
	}
	return nil
}

// Route is the shortest-delay path between two routers.
type Route struct {
	// DelayMS is the sum of the link delays along the path (0 for one router);
	// -1 if unreachable.
	DelayMS int32
	// BottleneckBps is the smallest bandwidth along the path including both access
	// links. Among several shortest paths the widest one is taken.
	BottleneckBps float64
}

// TransferMS returns the time in ms for a message of size bytes to cross the route:
// its latency plus its serialization time at the bottleneck bandwidth.
func (r Route) TransferMS(bytes int) float64 {
	return float64(r.DelayMS) + float64(bytes)*8/r.BottleneckBps*1000
}

// Transfer is TransferMS as a time.Duration.
func (r Route) Transfer(bytes int) time.Duration {
	return time.Duration(r.TransferMS(bytes) * float64(time.Millisecond))
}

// row is the result of one single-source shortest-path computation.
type row struct {
	dist []int32
	bw   []float32
}

// dijkstra computes shortest delays from src with Dial's bucket queue (link delays
// are small positive integers), keeping for each router the widest bottleneck among
// its shortest paths. The bottleneck excludes access links.
func (t *Topology) dijkstra(src int, bw Bandwidth, q *bucketQueue) row {
	n := t.Routers()
	r := row{dist: make([]int32, n), bw: make([]float32, n)}
	for i := range r.dist {
		r.dist[i] = -1
	}
	var classBW [numClasses]float32
	for c := range numClasses {
		classBW[c] = float32(bw.class(c))
	}
	r.dist[src] = 0
	r.bw[src] = float32(math.Inf(1))
	q.reset(t.maxDelay)
	q.push(int32(src), 0)
	for {
		u, d, ok := q.pop()
		if !ok {
			break
		}
		if d != r.dist[u] {
			continue // stale entry
		}
		bu := r.bw[u]
		for i := t.off[u]; i < t.off[u+1]; i++ {
			v := t.to[i]
			nd := d + t.delay[i]
			nb := min(bu, classBW[t.class[i]])
			switch dv := r.dist[v]; {
			case dv < 0 || nd < dv:
				r.dist[v] = nd
				r.bw[v] = nb
				q.push(v, nd)
			case nd == dv && nb > r.bw[v]:
				r.bw[v] = nb // v is not settled yet: every delay is >= 1
			}
		}
	}
	return r
}

// bucketQueue is Dial's monotone priority queue with maxDelay+1 circular buckets.
type bucketQueue struct {
	buckets [][]int32
	cur     int32 // current distance
	size    int
}

func (q *bucketQueue) reset(maxDelay int32) {
	need := int(maxDelay) + 1
	if len(q.buckets) < need {
		q.buckets = make([][]int32, need)
	}
	q.buckets = q.buckets[:need]
	for i := range q.buckets {
		q.buckets[i] = q.buckets[i][:0]
	}
	q.cur, q.size = 0, 0
}

func (q *bucketQueue) push(v, d int32) {
	i := int(d) % len(q.buckets)
	q.buckets[i] = append(q.buckets[i], v)
	q.size++
}

// pop returns a vertex of the smallest distance; entries may be stale.
func (q *bucketQueue) pop() (v, d int32, ok bool) {
	if q.size == 0 {
		return 0, 0, false
	}
	nb := int32(len(q.buckets))
	for {
		b := &q.buckets[q.cur%nb]
		if len(*b) > 0 {
			v = (*b)[len(*b)-1]
			*b = (*b)[:len(*b)-1]
			q.size--
			return v, q.cur, true
		}
		q.cur++
	}
}

// Paths answers shortest-path queries between routers, computing single-source
// shortest paths on demand and caching them. It is safe for concurrent use.
type Paths struct {
	t       *Topology
	bw      Bandwidth
	maxRows int

	mu    sync.Mutex
	rows  map[int32]row
	order []int32 // insertion order of rows, for eviction
	pairs map[uint64]Route
	runs  int
	qpool sync.Pool
}

// NewPaths returns a path cache over t with bandwidths bw that keeps at most maxRows
// full single-source results (each costs 8 bytes per router; maxRows <= 0 means
// unbounded). Pair results are always kept.
func NewPaths(t *Topology, bw Bandwidth, maxRows int) (*Paths, error) {
	if err := bw.Validate(); err != nil {
		return nil, err
	}
	p := &Paths{t: t, bw: bw, maxRows: maxRows, rows: map[int32]row{}, pairs: map[uint64]Route{}}
	p.qpool.New = func() any { return new(bucketQueue) }
	return p, nil
}

// Topology returns the topology the paths run over.
func (p *Paths) Topology() *Topology { return p.t }

// Bandwidth returns the bandwidths in use.
func (p *Paths) Bandwidth() Bandwidth { return p.bw }

// Dijkstras returns how many single-source computations have run so far.
func (p *Paths) Dijkstras() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs
}

func (p *Paths) route(r row, dst int32) Route {
	d := r.dist[dst]
	b := min(float64(r.bw[dst]), p.bw.Access)
	return Route{DelayMS: d, BottleneckBps: b}
}

func (p *Paths) compute(src int32) row {
	q := p.qpool.Get().(*bucketQueue)
	r := p.t.dijkstra(int(src), p.bw, q)
	p.qpool.Put(q)
	return r
}

// Route returns the shortest path between routers a and b (symmetric: links are
// undirected). It panics if a or b is not a router of the topology.
func (p *Paths) Route(a, b int) Route {
	if a < 0 || b < 0 || a >= p.t.Routers() || b >= p.t.Routers() {
		panic(fmt.Sprintf("transitstub: router %d or %d out of range", a, b))
	}
	k := pairKey(int32(a), int32(b))
	p.mu.Lock()
	if rt, ok := p.pairs[k]; ok {
		p.mu.Unlock()
		return rt
	}
	if r, ok := p.rows[int32(a)]; ok {
		rt := p.route(r, int32(b))
		p.pairs[k] = rt
		p.mu.Unlock()
		return rt
	}
	if r, ok := p.rows[int32(b)]; ok {
		rt := p.route(r, int32(a))
		p.pairs[k] = rt
		p.mu.Unlock()
		return rt
	}
	p.runs++
	p.mu.Unlock()

	r := p.compute(int32(a))
	rt := p.route(r, int32(b))

	p.mu.Lock()
	defer p.mu.Unlock()
	p.pairs[k] = rt
	if _, ok := p.rows[int32(a)]; !ok && p.maxRows >= 0 {
		if p.maxRows > 0 && len(p.order) >= p.maxRows {
			delete(p.rows, p.order[0])
			p.order = p.order[1:]
		}
		p.rows[int32(a)] = r
		p.order = append(p.order, int32(a))
	}
	return rt
}

// Prefetch computes and caches the routes of the given router pairs, running one
// shortest-path computation per distinct first router on up to workers goroutines
// (0 means GOMAXPROCS). Full rows are not kept, only the pairs, so memory stays
// proportional to len(pairs).
func (p *Paths) Prefetch(pairs [][2]int, workers int) {
	bySrc := map[int32][]int32{}
	p.mu.Lock()
	for _, pr := range pairs {
		if _, ok := p.pairs[pairKey(int32(pr[0]), int32(pr[1]))]; ok {
			continue
		}
		bySrc[int32(pr[0])] = append(bySrc[int32(pr[0])], int32(pr[1]))
	}
	p.mu.Unlock()
	srcs := make([]int32, 0, len(bySrc))
	for s := range bySrc {
		srcs = append(srcs, s)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	ch := make(chan int32)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range ch {
				r := p.compute(s)
				dsts := bySrc[s]
				rts := make([]Route, len(dsts))
				for i, d := range dsts {
					rts[i] = p.route(r, d)
				}
				p.mu.Lock()
				p.runs++
				for i, d := range dsts {
					p.pairs[pairKey(s, d)] = rts[i]
				}
				p.mu.Unlock()
			}
		}()
	}
	for _, s := range srcs {
		ch <- s
	}
	close(ch)
	wg.Wait()
}

// Stats are the summary figures of a topology.
type Stats struct {
	Routers         int     `json:"routers"`
	Links           int     `json:"links"`
	Arcs            int     `json:"arcs"`
	MeanLinkDelayMS float64 `json:"mean_link_delay_ms"`
	MeanPathDelayMS float64 `json:"mean_path_delay_ms"`
	DiameterMS      float64 `json:"diameter_ms"`
	// Sources is the number of routers the path figures were computed from; when it
	// equals Routers, the mean path delay and the diameter are exact.
	Sources int `json:"sources"`
	// Links by class.
	TransitLinks     int  `json:"transit_links"`
	TransitStubLinks int  `json:"transit_stub_links"`
	StubLinks        int  `json:"stub_links"`
	Connected        bool `json:"connected"`
}

// Stats computes the topology's figures. Path figures (mean shortest-path delay over
// ordered router pairs, diameter) use every router as a source when sources <= 0 or
// sources >= Routers, otherwise that many random sources (seeded by the topology's
// seed), in which case the diameter is a lower bound.
func (t *Topology) Stats(sources int) Stats {
	n := t.Routers()
	s := Stats{Routers: n, Links: t.Links(), Arcs: t.Arcs(), MeanLinkDelayMS: t.MeanLinkDelay(), Connected: t.Connected()}
	for _, e := range t.edges {
		switch e.Class {
		case TransitLink:
			s.TransitLinks++
		case TransitStubLink:
			s.TransitStubLinks++
		default:
			s.StubLinks++
		}
	}
	var srcs []int
	if sources <= 0 || sources >= n {
		srcs = make([]int, n)
		for i := range srcs {
			srcs[i] = i
		}
	} else {
		rng := rand.New(rand.NewPCG(t.seed, 0x73746174)) // "stat"
		srcs = rng.Perm(n)[:sources]
	}
	s.Sources = len(srcs)
	workers := runtime.GOMAXPROCS(0)
	type acc struct {
		sum   float64
		count int64
		max   int32
	}
	accs := make([]acc, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := new(bucketQueue)
			a := &accs[w]
			for i := w; i < len(srcs); i += workers {
				r := t.dijkstra(srcs[i], DefaultBandwidth, q)
				for v, d := range r.dist {
					if v == srcs[i] || d < 0 {
						continue
					}
					a.sum += float64(d)
					a.count++
					a.max = max(a.max, d)
				}
			}
		}()
	}
	wg.Wait()
	var sum float64
	var count int64
	for _, a := range accs {
		sum += a.sum
		count += a.count
		s.DiameterMS = max(s.DiameterMS, float64(a.max))
	}
	if count > 0 {
		s.MeanPathDelayMS = sum / float64(count)
	}
	return s
}
