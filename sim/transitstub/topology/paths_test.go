package topology

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// widest computes, for source s, the widest bottleneck among shortest paths by
// dynamic programming over the shortest-path DAG given all-pairs distances d.
func widest(tp *Topology, bw Bandwidth, d [][]int32, s int) []float64 {
	n := tp.Routers()
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(d[s][a] - d[s][b]) })
	best := make([]float64, n)
	best[s] = math.Inf(1)
	for _, v := range order {
		if v == s {
			continue
		}
		for i := tp.off[v]; i < tp.off[v+1]; i++ {
			u := int(tp.to[i])
			if d[s][u]+tp.delay[i] == d[s][v] {
				best[v] = max(best[v], min(best[u], bw.class(tp.class[i])))
			}
		}
	}
	return best
}

func TestDijkstraMatchesFloyd(t *testing.T) {
	bw := Bandwidth{Transit: 1e9, TransitStub: 45e6, Stub: 100e6, Access: 1e12}
	for seed := uint64(0); seed < 4; seed++ {
		p := tinyParams()
		p.ExtraStubStub, p.ExtraTransitStub = 6, 6
		tp, err := Generate(p, seed)
		if err != nil {
			t.Fatal(err)
		}
		d := floyd(tp)
		q := new(bucketQueue)
		for s := range tp.Routers() {
			r := tp.dijkstra(s, bw, q)
			w := widest(tp, bw, d, s)
			for v := range tp.Routers() {
				if r.dist[v] != d[s][v] {
					t.Fatalf("seed %d: dist(%d,%d) = %d, Floyd says %d", seed, s, v, r.dist[v], d[s][v])
				}
				if float64(r.bw[v]) != float64(float32(w[v])) {
					t.Fatalf("seed %d: bottleneck(%d,%d) = %g, want widest shortest %g", seed, s, v, r.bw[v], w[v])
				}
			}
		}
	}
}

func TestPathsCache(t *testing.T) {
	tp, err := Generate(Small(), 9)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPaths(tp, DefaultBandwidth, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := NewPaths(tp, DefaultBandwidth, 0)
	d := floyd(tp)
	for a := 0; a < tp.Routers(); a += 7 {
		for b := 0; b < tp.Routers(); b += 5 {
			r1, r2 := p.Route(a, b), p.Route(b, a)
			if r1 != r2 {
				t.Fatalf("Route(%d,%d) = %+v but Route(%d,%d) = %+v", a, b, r1, b, a, r2)
			}
			if r1.DelayMS != d[a][b] {
				t.Fatalf("Route(%d,%d) delay %d, want %d", a, b, r1.DelayMS, d[a][b])
			}
			if r1.BottleneckBps > DefaultBandwidth.Access {
				t.Fatalf("bottleneck %g above the access bandwidth", r1.BottleneckBps)
			}
			if got := ref.Route(a, b); got != r1 {
				t.Fatalf("bounded and unbounded caches disagree: %+v vs %+v", r1, got)
			}
		}
	}
	if len(p.rows) > 2 {
		t.Fatalf("cache holds %d rows, bound is 2", len(p.rows))
	}
	runs := ref.Dijkstras()
	ref.Route(0, 5)
	ref.Route(5, 0)
	if ref.Dijkstras() != runs {
		t.Fatal("cached routes ran Dijkstra again")
	}
	// Prefetch gives the same answers as on-demand routing.
	pre, _ := NewPaths(tp, DefaultBandwidth, -1)
	pairs := [][2]int{{1, 2}, {3, 100}, {50, 60}, {1, 99}}
	pre.Prefetch(pairs, 2)
	if pre.Dijkstras() != 3 {
		t.Fatalf("prefetch ran %d Dijkstras, want 3 (distinct sources)", pre.Dijkstras())
	}
	for _, pr := range pairs {
		if a, b := pre.Route(pr[0], pr[1]), ref.Route(pr[0], pr[1]); a != b {
			t.Fatalf("prefetched %v = %+v, want %+v", pr, a, b)
		}
	}
	if pre.Dijkstras() != 3 || len(pre.rows) != 0 {
		t.Fatal("prefetched pairs were recomputed or rows kept")
	}
}

func TestRouteTransfer(t *testing.T) {
	for _, tc := range []struct {
		r     Route
		bytes int
		want  float64
	}{
		{Route{DelayMS: 10, BottleneckBps: 8e6}, 0, 10},
		{Route{DelayMS: 10, BottleneckBps: 8e6}, 1000, 11},
		{Route{DelayMS: 0, BottleneckBps: 1e6}, 125000, 1000},
	} {
		if got := tc.r.TransferMS(tc.bytes); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%+v.TransferMS(%d) = %g, want %g", tc.r, tc.bytes, got, tc.want)
		}
		if got := tc.r.Transfer(tc.bytes).Seconds() * 1000; math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%+v.Transfer(%d) = %g ms, want %g", tc.r, tc.bytes, got, tc.want)
		}
	}
}

func TestBandwidthValidate(t *testing.T) {
	tp, _ := Generate(Small(), 1)
	for _, bw := range []Bandwidth{{}, {Transit: 1, TransitStub: 1, Stub: 1}, {Transit: -1, TransitStub: 1, Stub: 1, Access: 1}} {
		if _, err := NewPaths(tp, bw, 0); !errors.Is(err, ErrParams) {
			t.Errorf("NewPaths(%+v): err = %v, want ErrParams", bw, err)
		}
	}
}

func BenchmarkDijkstraPaper(b *testing.B) {
	tp, err := Generate(Paper(), 1)
	if err != nil {
		b.Fatal(err)
	}
	q := new(bucketQueue)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tp.dijkstra(i%tp.Routers(), DefaultBandwidth, q)
	}
	b.ReportMetric(float64(tp.Arcs())*float64(b.N)/b.Elapsed().Seconds()/1e6, "Marcs/s")
}

func BenchmarkGeneratePaper(b *testing.B) {
	for b.Loop() {
		if _, err := Generate(Paper(), 1); err != nil {
			b.Fatal(err)
		}
	}
}
