package topology

import (
	"errors"
	"math"
	"testing"
)

func tinyParams() Params {
	p := Small()
	p.Transit, p.TransitRouters, p.Stubs, p.StubRouters = 3, 4, 2, 6
	return p
}

func checkTopology(t *testing.T, tp *Topology) {
	t.Helper()
	p := tp.Params()
	if got, want := tp.Routers(), p.Routers(); got != want {
		t.Fatalf("routers = %d, want T·Nt·(1+K·Ns) = %d", got, want)
	}
	if tp.Arcs() != 2*tp.Links() {
		t.Fatalf("arcs = %d, want 2·links = %d", tp.Arcs(), 2*tp.Links())
	}
	if !tp.Connected() {
		t.Fatal("topology is not connected")
	}
	seen := map[uint64]bool{}
	for _, e := range tp.Edges() {
		if e.A == e.B {
			t.Fatalf("self-loop at %d", e.A)
		}
		k := pairKey(e.A, e.B)
		if seen[k] {
			t.Fatalf("duplicate link %d-%d", e.A, e.B)
		}
		seen[k] = true
		ax, ay := tp.Position(int(e.A))
		bx, by := tp.Position(int(e.B))
		want := int32(math.Max(1, math.Round(math.Hypot(ax-bx, ay-by))))
		if e.DelayMS != want {
			t.Fatalf("link %d-%d delay %d, want rounded length %d", e.A, e.B, e.DelayMS, want)
		}
		ta, tb := tp.IsTransit(int(e.A)), tp.IsTransit(int(e.B))
		switch e.Class {
		case TransitLink:
			if !ta || !tb {
				t.Fatalf("transit link %d-%d joins a stub router", e.A, e.B)
			}
		case TransitStubLink:
			if ta == tb {
				t.Fatalf("transit-stub link %d-%d does not join a transit and a stub router", e.A, e.B)
			}
		case StubLink:
			if ta || tb {
				t.Fatalf("stub link %d-%d joins a transit router", e.A, e.B)
			}
		}
	}
	deg := 0
	for r := range tp.Routers() {
		deg += tp.Degree(r)
	}
	if deg != tp.Arcs() {
		t.Fatalf("sum of degrees %d != arcs %d", deg, tp.Arcs())
	}
}

func TestGenerate(t *testing.T) {
	wax := tinyParams()
	wax.Top = GraphModel{Method: Waxman, Alpha: 0.6, Beta: 0.3}
	wax.TransitGraph = GraphModel{Method: Waxman, Alpha: 0.6, Beta: 0.3}
	wax.StubGraph = GraphModel{Method: Waxman, Alpha: 0.5, Beta: 0.2}
	sparse := tinyParams()
	sparse.StubGraph.Alpha = 0 // every draw disconnected: the repair path must join it
	sparse.TransitGraph.Alpha = 0
	sparse.Top.Alpha = 0
	sparse.ExtraStubStub, sparse.ExtraTransitStub = 0, 0
	noStubs := tinyParams()
	noStubs.Stubs = 0
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"small", Small()},
		{"tiny", tinyParams()},
		{"waxman", wax},
		{"repaired", sparse},
		{"no stubs", noStubs},
		{"one router", Params{Transit: 1, TransitRouters: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(0); seed < 5; seed++ {
				tp, err := Generate(tc.p, seed)
				if err != nil {
					t.Fatal(err)
				}
				checkTopology(t, tp)
			}
		})
	}
}

func TestGenerateRepairBuildsTrees(t *testing.T) {
	p := tinyParams()
	p.Top.Alpha, p.TransitGraph.Alpha, p.StubGraph.Alpha = 0, 0, 0
	p.ExtraStubStub, p.ExtraTransitStub = 0, 0
	tp, err := Generate(p, 7)
	if err != nil {
		t.Fatal(err)
	}
	// With no random edges at all, every level is a spanning tree: the graph is one.
	if tp.Links() != tp.Routers()-1 {
		t.Fatalf("links = %d, want a spanning tree of %d", tp.Links(), tp.Routers()-1)
	}
}

func TestStubDomainsHangByOneLink(t *testing.T) {
	p := tinyParams()
	p.ExtraTransitStub = 0
	tp, err := Generate(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	nt := p.Transit * p.TransitRouters
	per := map[int]int{} // stub domain -> transit-stub links
	for _, e := range tp.Edges() {
		if e.Class != TransitStubLink {
			continue
		}
		s, tr := int(e.A), int(e.B)
		if tp.IsTransit(s) {
			s, tr = tr, s
		}
		dom := (s - nt) / p.StubRouters
		if owner := dom / p.Stubs; owner != tr {
			t.Fatalf("stub domain %d hangs off transit router %d, want %d", dom, tr, owner)
		}
		per[dom]++
	}
	if len(per) != nt*p.Stubs {
		t.Fatalf("%d stub domains have an uplink, want %d", len(per), nt*p.Stubs)
	}
	for d, n := range per {
		if n != 1 {
			t.Fatalf("stub domain %d has %d uplinks, want 1", d, n)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	a, _ := Generate(Small(), 42)
	b, _ := Generate(Small(), 42)
	c, _ := Generate(Small(), 43)
	if len(a.Edges()) != len(b.Edges()) {
		t.Fatal("same seed, different link counts")
	}
	for i := range a.Edges() {
		if a.Edges()[i] != b.Edges()[i] {
			t.Fatalf("same seed, link %d differs", i)
		}
	}
	same := len(a.Edges()) == len(c.Edges())
	if same {
		for i := range a.Edges() {
			if a.Edges()[i] != c.Edges()[i] {
				same = false
				break
			}
		}
	}
	if same {
		t.Fatal("different seeds gave the same topology")
	}
}

func TestPaperPreset(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		tp, err := Generate(Paper(), seed)
		if err != nil {
			t.Fatal(err)
		}
		checkTopology(t, tp)
		if tp.Routers() != 5050 {
			t.Fatalf("routers = %d, want 5050", tp.Routers())
		}
		if l := tp.Links(); math.Abs(float64(l)-12584)/12584 > 0.03 {
			t.Errorf("seed %d: links = %d, want 12584 ± 3%%", seed, l)
		}
		if d := tp.MeanLinkDelay(); math.Abs(d-40.5) > 1.5 {
			t.Errorf("seed %d: mean link delay %.2f ms, want 40.5 ± 1.5", seed, d)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	good := Small()
	for _, tc := range []struct {
		name string
		edit func(*Params)
	}{
		{"no transit", func(p *Params) { p.Transit = 0 }},
		{"no transit routers", func(p *Params) { p.TransitRouters = 0 }},
		{"negative stubs", func(p *Params) { p.Stubs = -1 }},
		{"empty stub domains", func(p *Params) { p.StubRouters = 0 }},
		{"negative scale", func(p *Params) { p.StubScale = -1 }},
		{"negative extra", func(p *Params) { p.ExtraStubStub = -1 }},
		{"alpha above 1", func(p *Params) { p.StubGraph.Alpha = 1.5 }},
		{"too many routers", func(p *Params) { p.Transit, p.TransitRouters, p.Stubs, p.StubRouters = 1000, 1000, 1000, 1000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			tc.edit(&p)
			if _, err := Generate(p, 1); !errors.Is(err, ErrParams) {
				t.Fatalf("Generate: err = %v, want ErrParams", err)
			}
		})
	}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestStats(t *testing.T) {
	tp, err := Generate(Small(), 5)
	if err != nil {
		t.Fatal(err)
	}
	s := tp.Stats(0)
	if s.Sources != tp.Routers() || !s.Connected {
		t.Fatalf("stats %+v: want all sources and connected", s)
	}
	if s.TransitLinks+s.TransitStubLinks+s.StubLinks != s.Links {
		t.Fatalf("class counts %d+%d+%d != links %d", s.TransitLinks, s.TransitStubLinks, s.StubLinks, s.Links)
	}
	// Brute force over all pairs with Floyd–Warshall.
	d := floyd(tp)
	var sum float64
	var cnt int
	var diam int32
	for i := range d {
		for j := range d {
			if i != j {
				sum += float64(d[i][j])
				cnt++
				diam = max(diam, d[i][j])
			}
		}
	}
	if math.Abs(s.MeanPathDelayMS-sum/float64(cnt)) > 1e-9 || s.DiameterMS != float64(diam) {
		t.Fatalf("mean path %.4f diameter %.0f, want %.4f and %d", s.MeanPathDelayMS, s.DiameterMS, sum/float64(cnt), diam)
	}
	if part := tp.Stats(10); part.Sources != 10 || part.DiameterMS > s.DiameterMS {
		t.Fatalf("sampled stats %+v inconsistent with exact diameter %.0f", part, s.DiameterMS)
	}
}

func floyd(tp *Topology) [][]int32 {
	n := tp.Routers()
	const inf32 = math.MaxInt32 / 4
	d := make([][]int32, n)
	for i := range d {
		d[i] = make([]int32, n)
		for j := range d[i] {
			if i != j {
				d[i][j] = inf32
			}
		}
	}
	for _, e := range tp.Edges() {
		d[e.A][e.B] = min(d[e.A][e.B], e.DelayMS)
		d[e.B][e.A] = min(d[e.B][e.A], e.DelayMS)
	}
	for k := range n {
		for i := range n {
			for j := range n {
				if d[i][k]+d[k][j] < d[i][j] {
					d[i][j] = d[i][k] + d[k][j]
				}
			}
		}
	}
	return d
}

func FuzzGenerate(f *testing.F) {
	f.Add(uint8(2), uint8(3), uint8(2), uint8(4), uint8(50), uint8(128), uint64(1))
	f.Add(uint8(1), uint8(1), uint8(0), uint8(1), uint8(0), uint8(0), uint64(0))
	f.Fuzz(func(t *testing.T, tr, nt, k, ns, pStub, pTransit uint8, seed uint64) {
		p := Small()
		p.Transit, p.TransitRouters, p.Stubs, p.StubRouters = int(tr%4)+1, int(nt%5)+1, int(k%4), int(ns%6)+1
		p.StubGraph.Alpha = float64(pStub) / 255
		p.TransitGraph.Alpha = float64(pTransit) / 255
		p.ExtraStubStub, p.ExtraTransitStub = int(pStub%5), int(pTransit%5)
		tp, err := Generate(p, seed)
		if err != nil {
			t.Fatal(err)
		}
		checkTopology(t, tp)
	})
}
