package stripes

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestPlan: in every stripe's tree each fetcher appears exactly once (as
// the root or as one parent's child) and hears from the root through its
// parents (no cycle), the seed and peers not listed appear in none, and no
// fetcher has more children over all stripes than its places (k, or in
// proportion to its upload capacity: about one copy of the file), for
// swarm sizes around and below the stripe count; the same Config gives the
// same trees.
func TestPlan(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 30, 201} {
		for _, k := range []int{1, 2, 4, 8, 16} {
			for _, byDelay := range []bool{false, true} {
				var delay func(a, b int) float64 // peer n is the seed
				if byDelay {
					delay = func(a, b int) float64 { return float64((a*7 + b*13) % 50) }
				}
				order := rand.New(rand.NewPCG(uint64(n), uint64(k))).Perm(n)
				if n == 30 {
					order = order[:25] // peers not listed take no part
				}
				var up []float64
				if n%2 == 1 {
					up = make([]float64, n+1)
					for i := range up {
						up[i] = float64(1 + i%3)
					}
				}
				cfg := Config{Peers: n + 1, Stripes: k, Order: order, Up: up, Seed: n, Delay: delay, BlockMS: 1}
				m, err := Plan(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if again, _ := Plan(cfg); !reflect.DeepEqual(m, again) {
					t.Fatalf("n %d k %d by delay %v: two plans differ", n, k, byDelay)
				}
				load := make([]int, n+1)
				for s := range k {
					parent := make([]int, n+1)
					seen := make([]int, n+1)
					seen[m.Roots[s]]++
					for i := range parent {
						parent[i] = -1
					}
					for p, kids := range m.Kids[s] {
						load[p] += len(kids)
						for _, c := range kids {
							seen[c]++
							parent[c] = p
						}
					}
					for a, times := range seen {
						if want := b2i(slices.Contains(order, a)); times != want {
							t.Fatalf("n %d k %d by delay %v: stripe %d: peer %d appears %d times, want %d", n, k, byDelay, s, a, times, want)
						}
					}
					for _, a := range order {
						hops := 0
						for x := a; x != m.Roots[s]; x = parent[x] {
							if parent[x] < 0 || hops > n {
								t.Fatalf("n %d k %d by delay %v: stripe %d: %d does not hear from the root", n, k, byDelay, s, a)
							}
							hops++
						}
					}
				}
				want := placesOf(order, up, k)
				for a, l := range load {
					places := k
					if j := slices.Index(order, a); want != nil && j >= 0 {
						places = want[j]
					}
					if l > places {
						t.Fatalf("n %d k %d: fetcher %d has %d children, %d places", n, k, a, l, places)
					}
				}
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPlacesOf: the places sum to k·(n-1), each within one of its share of
// the capacity, and a fetcher of no capacity gets none.
func TestPlacesOf(t *testing.T) {
	for _, tc := range []struct {
		up    []float64
		order []int
		k     int
		want  []int
	}{
		{nil, []int{0, 1, 2}, 2, nil},
		{[]float64{0, 0, 0}, []int{0, 1, 2}, 2, nil},
		{[]float64{1, 1, 1, 9}, []int{0, 1, 2}, 2, []int{2, 1, 1}},
		{[]float64{1, 0, 3, 9}, []int{2, 1, 0}, 4, []int{6, 0, 2}},
		{[]float64{5, 5, 0, 1}, []int{3, 0, 1, 2}, 3, []int{1, 4, 4, 0}},
	} {
		if got := placesOf(tc.order, tc.up, tc.k); !slices.Equal(got, tc.want) {
			t.Errorf("placesOf(%v, %v, %d) = %v, want %v", tc.order, tc.up, tc.k, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n, k := 2+rng.IntN(50), 1+rng.IntN(16)
		up := make([]float64, n)
		sum := 0.0
		for i := range up {
			if rng.IntN(4) > 0 {
				up[i] = rng.Float64() * 100
			}
			sum += up[i]
		}
		order := rng.Perm(n)
		got := placesOf(order, up, k)
		if sum == 0 {
			continue
		}
		total := 0
		for j, a := range order {
			total += got[j]
			share := float64(k*(n-1)) * up[a] / sum
			if math.Abs(float64(got[j])-share) >= 1 || (up[a] == 0 && got[j] > 0) {
				t.Fatalf("fetcher %d of capacity %g (share %g): %d places", a, up[a], share, got[j])
			}
		}
		if total != k*(n-1) {
			t.Fatalf("%d places for k %d, n %d", total, k, n)
		}
	}
}

// TestPlanErrors: a Config that names a peer out of range, the seed as a
// fetcher, a fetcher twice, no stripes or a bad capacity is refused with
// ErrConfig.
func TestPlanErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Peers: 3, Stripes: 0, Order: []int{1, 2}},
		{Peers: -1, Stripes: 1},
		{Peers: 3, Stripes: 2, Order: []int{1, 3}},
		{Peers: 3, Stripes: 2, Order: []int{1, -1}},
		{Peers: 3, Stripes: 2, Order: []int{1, 0}},
		{Peers: 3, Stripes: 2, Order: []int{1, 1}},
		{Peers: 3, Stripes: 2, Order: []int{1, 2}, Seed: 3},
		{Peers: 3, Stripes: 2, Order: []int{1, 2}, Up: []float64{1, 1}},
		{Peers: 3, Stripes: 2, Order: []int{1, 2}, Up: []float64{1, math.NaN(), 1}},
		{Peers: 3, Stripes: 2, Order: []int{1, 2}, Up: []float64{1, -1, 1}},
		{Peers: 3, Stripes: 2, Order: []int{1, 2}, Up: []float64{1, math.Inf(1), 1}},
	} {
		if _, err := Plan(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("Plan(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	if tr, err := Plan(Config{Peers: 1, Stripes: 3}); err != nil || len(tr.Roots) != 3 {
		t.Errorf("no fetchers: %v, %v", tr, err)
	}
}

// TestPlanByDelay: with delays, a fetcher goes under the parent it hears
// from first; here peer 1 is far from peer 2 and near peer 3.
func TestPlanByDelay(t *testing.T) {
	far := func(a, b int) float64 {
		if a+b == 3 && a*b == 2 { // between 1 and 2
			return 100
		}
		return 1
	}
	tr, err := Plan(Config{Peers: 4, Stripes: 1, Order: []int{1, 3, 2}, Seed: 0, Delay: far, BlockMS: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Stripe 0 takes the first two of six places, both peer 1's: 1 is the
	// root, 3 and 2 its children by breadth; by delay 2 goes under 3.
	want := [][]int32{nil, {3}, nil, {2}}
	if tr.Roots[0] != 1 || !reflect.DeepEqual(tr.Kids[0], want) {
		t.Fatalf("roots %v kids %v, want root 1 kids %v", tr.Roots, tr.Kids[0], want)
	}
}

// BenchmarkPlan plans 8 trees by delay over 10,000 fetchers.
func BenchmarkPlan(b *testing.B) {
	const n = 10000
	order := rand.New(rand.NewPCG(1, 1)).Perm(n)
	delay := func(a, b int) float64 { return float64((a*7 + b*13) % 50) }
	for b.Loop() {
		if _, err := Plan(Config{Peers: n + 1, Stripes: 8, Order: order, Seed: n, Delay: delay, BlockMS: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
