package transitstub

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

func bigOf(x ID) *big.Int { return new(big.Int).SetBytes(x[:]) }

func idOf(b *big.Int) ID {
	var x ID
	b.FillBytes(x[:])
	return x
}

func checkIDArith(t *testing.T, x, y ID, i, bits int) {
	t.Helper()
	mod := new(big.Int).Lsh(big.NewInt(1), uint(bits))
	x, y = x.mask(bits), y.mask(bits)
	want := new(big.Int).Add(bigOf(x), new(big.Int).Lsh(big.NewInt(1), uint(i)))
	want.Mod(want, mod)
	if got := x.addPow2(i, bits); got != idOf(want) {
		t.Fatalf("%v + 2^%d mod 2^%d = %v, want %v", x, i, bits, got, idOf(want))
	}
	diff := new(big.Int).Sub(bigOf(x), bigOf(y))
	diff.Mod(diff, mod)
	if got := x.sub(y, bits); got != idOf(diff) {
		t.Fatalf("%v - %v mod 2^%d = %v, want %v", x, y, bits, got, idOf(diff))
	}
}

func TestIDArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rnd := func() ID {
		var x ID
		for i := range x {
			x[i] = byte(rng.Uint32())
		}
		return x
	}
	var ones ID
	for i := range ones {
		ones[i] = 0xff
	}
	for range 2000 {
		bits := 1 + rng.IntN(160)
		checkIDArith(t, rnd(), rnd(), rng.IntN(bits), bits)
	}
	checkIDArith(t, ones, ID{}, 159, 160) // wraps around the ring
	checkIDArith(t, ID{}, ones, 0, 160)
	checkIDArith(t, ones, ones, 7, 8)
}

func FuzzIDArith(f *testing.F) {
	f.Add(make([]byte, 40), uint8(0), uint8(160))
	f.Fuzz(func(t *testing.T, b []byte, i, bits uint8) {
		var x, y ID
		copy(x[:], b)
		if len(b) > 20 {
			copy(y[:], b[20:])
		}
		nb := int(bits)%160 + 1
		checkIDArith(t, x, y, int(i)%nb, nb)
	})
}

func TestInHalfOpen(t *testing.T) {
	id := func(v byte) ID { var x ID; x[19] = v; return x }
	for _, tc := range []struct {
		x, a, b byte
		want    bool
	}{
		{5, 1, 9, true}, {9, 1, 9, true}, {1, 1, 9, false}, {10, 1, 9, false},
		{250, 200, 10, true}, {5, 200, 10, true}, {100, 200, 10, false}, {200, 200, 10, false},
		{3, 7, 7, true}, {7, 7, 7, true},
	} {
		if got := inHalfOpen(id(tc.x), id(tc.a), id(tc.b)); got != tc.want {
			t.Errorf("%d in (%d, %d] = %v, want %v", tc.x, tc.a, tc.b, got, tc.want)
		}
	}
}

func smallNet(t testing.TB, peers int, cfg ChordConfig) *Network {
	t.Helper()
	net, err := NewNetwork(topology.Small(), topology.DefaultBandwidth, peers, cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	return net
}

func TestOverlayStructure(t *testing.T) {
	for _, bits := range []int{160, 64, 12} {
		o := smallNet(t, 150, ChordConfig{Bits: bits, Successors: 4}).Overlay
		for i := range o.Len() {
			if i > 0 && o.ID(i-1).Cmp(o.ID(i)) >= 0 {
				t.Fatalf("bits %d: ids not strictly increasing at %d", bits, i)
			}
			if o.ID(i).mask(bits) != o.ID(i) {
				t.Fatalf("bits %d: id %v outside the ring", bits, o.ID(i))
			}
			fs := o.Fingers(i)
			if int(fs[0]) != (i+1)%o.Len() {
				t.Fatalf("bits %d: first finger of %d is %d, want its successor", bits, i, fs[0])
			}
			for j := 1; j < len(fs); j++ {
				if o.ID(int(fs[j])).sub(o.ID(i), bits).Cmp(o.ID(int(fs[j-1])).sub(o.ID(i), bits)) <= 0 {
					t.Fatalf("bits %d: fingers of %d not by increasing distance", bits, i)
				}
			}
			if len(o.SuccessorList(i)) != 4 {
				t.Fatalf("successor list of %d has %d entries", i, len(o.SuccessorList(i)))
			}
			if n := len(o.Neighbours(i)); n < len(fs) || n > len(fs)+4 {
				t.Fatalf("neighbours of %d: %d", i, n)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	for _, cfg := range []ChordConfig{{}, {Bits: 16}, {RouteViaSuccessors: true}} {
		net := smallNet(t, 200, cfg)
		o := net.Overlay
		st, err := o.MeasureLookups(3000, 1) // checks every owner against Successor
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RouteViaSuccessors {
			continue
		}
		// Chord: mean path length about ½·log2 N (3.82 for 200 peers).
		if math.Abs(st.MeanHops-st.HalfLog2N) > 0.6 {
			t.Errorf("cfg %+v: mean hops %.2f, want about ½·log2 N = %.2f", cfg, st.MeanHops, st.HalfLog2N)
		}
		if st.MaxHops > 2*int(math.Ceil(math.Log2(200))) {
			t.Errorf("max hops %d exceeds 2·log2 N", st.MaxHops)
		}
		if !(st.MedianMS > 0 && st.P95MS >= st.MedianMS) {
			t.Errorf("latencies median %.1f p95 %.1f", st.MedianMS, st.P95MS)
		}
		// A lookup's latency is the sum of its hops plus the answer.
		l := o.Lookup(0, o.ID(100))
		want := 0.0
		for i := 1; i < len(l.Path); i++ {
			want += o.Route(l.Path[i-1], l.Path[i]).TransferMS(o.Config().LookupBytes)
		}
		if len(l.Path) > 1 {
			want += o.Route(l.Path[len(l.Path)-1], 0).TransferMS(o.Config().LookupBytes)
		}
		if l.Owner != 100 || math.Abs(l.LatencyMS-want) > 1e-9 || l.Hops != len(l.Path)-1 {
			t.Errorf("lookup %+v: want owner 100, latency %.3f", l, want)
		}
		if own := o.Lookup(7, o.ID(7)); own.Owner != 7 || own.Hops != 0 || own.LatencyMS != 0 {
			t.Errorf("looking up one's own id: %+v", own)
		}
	}
}

func TestOverlayErrors(t *testing.T) {
	tp, _ := topology.Generate(topology.Small(), 1)
	paths, _ := topology.NewPaths(tp, topology.DefaultBandwidth, 0)
	for _, tc := range []struct {
		n    int
		cfg  ChordConfig
		want error
	}{
		{1, ChordConfig{}, ErrNoPeers},
		{10, ChordConfig{Bits: 161}, ErrParams},
		{10, ChordConfig{Bits: 3}, ErrParams},
		{10, ChordConfig{Successors: -1}, ErrParams},
	} {
		if _, err := NewOverlay(paths, tc.n, tc.cfg, 1); !errors.Is(err, tc.want) {
			t.Errorf("NewOverlay(%d, %+v): err = %v, want %v", tc.n, tc.cfg, err, tc.want)
		}
	}
	// More peers than routers: routers are shared.
	o, err := NewOverlay(paths, 300, ChordConfig{}, 1)
	if err != nil || o.Len() != 300 {
		t.Fatalf("300 peers on %d routers: %v", tp.Routers(), err)
	}
	if _, err := o.MeasureLookups(0, 1); !errors.Is(err, ErrParams) {
		t.Errorf("MeasureLookups(0): err = %v", err)
	}
}

func BenchmarkLookup200(b *testing.B) {
	net, err := NewNetwork(topology.Paper(), topology.DefaultBandwidth, 200, ChordConfig{}, 1)
	if err != nil {
		b.Fatal(err)
	}
	o := net.Overlay
	o.MeasureLookups(1000, 1) // warm the path cache
	hops := 0
	for i := 0; b.Loop(); i++ {
		hops += o.Lookup(i%200, o.ID((i*7+3)%200)).Hops
	}
	b.ReportMetric(float64(hops)/float64(b.N), "hops/op")
}
