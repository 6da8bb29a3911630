package transitstub

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestFluidBound(t *testing.T) {
	const mib16 = 16 << 20
	ups := func(n int, u float64) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = u
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		f, us    float64
		up, down []float64
		want     float64
	}{
		// 16 MiB, 20 Mbit/s up everywhere, 100 Mbit/s down, 199 fetchers:
		// F/u_s = 6.7108864 s beats N·F/(200 u) = 6.6773 s and F/d = 1.342 s.
		{"issue15", mib16, 2.5e6, ups(199, 2.5e6), ups(199, 12.5e6), 16777216.0 / 2.5e6},
		// Uploads bind: 2·100/(10+1+1) = 16.67 > F/u_s = 10 > F/d = 5.
		{"uploads", 100, 10, []float64{1, 1}, []float64{50, 20}, 200.0 / 12},
		// The slowest downloader binds: 100/2 = 50.
		{"download", 100, 100, []float64{1}, []float64{2}, 50},
		// The seed binds: 100/1 = 100 > 3·100/(1+100·3) and 100/50.
		{"seed", 100, 1, []float64{100, 100, 100}, []float64{50, 60, 70}, 100},
		// An uncapped peer upload drops the third term: max(100/10, 100/20) = 10.
		{"uncapped up", 100, 10, []float64{0, 1, 1}, []float64{20, 20, 20}, 10},
		// Uncapped downloads: only the seed and upload terms, 2·100/(4+1+1) = 33.3.
		{"uncapped down", 100, 4, []float64{1, 1}, []float64{0, 0}, 200.0 / 6},
		{"nothing capped", 100, 0, []float64{0, 0}, []float64{0, 0}, 0},
	} {
		got := FluidBound(tc.f, tc.us, tc.up, tc.down)
		if math.Abs(got-tc.want) > 1e-9*max(1, tc.want) {
			t.Errorf("%s: FluidBound = %.9g, want %.9g", tc.name, got, tc.want)
		}
	}
}

func TestAssignClasses(t *testing.T) {
	classes := []AccessClass{{Share: 0.5, Down: 1, Up: 1}, {Share: 0.3, Down: 2, Up: 2}, {Share: 0.2, Down: 3, Up: 3}}
	if err := ValidateClasses(classes); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 7, 10, 199} {
		of := AssignClasses(classes, n, rand.New(rand.NewPCG(1, 2)))
		counts := make([]int, len(classes))
		for _, c := range of {
			counts[c]++
		}
		for c, k := range counts {
			if x := classes[c].Share * float64(n); math.Abs(float64(k)-x) >= 1 {
				t.Errorf("n=%d: class %d has %d peers, want about %g", n, c, k, x)
			}
		}
	}
	for _, bad := range [][]AccessClass{
		{{Share: 0.5, Down: 1, Up: 1}},
		{{Share: 0, Down: 1, Up: 1}, {Share: 1, Down: 1, Up: 1}},
		{{Share: 1, Down: -1, Up: 1}},
		{{Share: 1, Down: 1, Up: math.Inf(1)}},
	} {
		if err := ValidateClasses(bad); !errors.Is(err, ErrParams) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// TestLinks: each link carries at most its capacity: an uplink serializes
// what it sends, a downlink what reaches it (so concurrent uploads to one
// peer share its downlink), an uncapped link delays nothing, and concurrent
// bookings add up.
func TestLinks(t *testing.T) {
	// Peers 0 and 1 upload at 10 B/s; peer 2 downloads at 20 B/s, peer 3 at 5 B/s.
	l := NewLinks([]float64{10, 10, 0, 0}, []float64{0, 0, 20, 5})
	for _, tc := range []struct {
		from, to, b    int
		now, sent, got float64
	}{
		{0, 2, 10, 0, 1, 1.5},  // up 0..1, down 1..1.5
		{1, 2, 10, 0, 1, 2},    // up 0..1, 2's downlink busy until 1.5: 1.5..2
		{0, 2, 10, 0, 2, 2.5},  // 0's uplink busy until 1: 1..2, down 2..2.5
		{0, 3, 5, 5, 5.5, 6.5}, // idle until 5: up 5..5.5, down 5.5..6.5
		{1, 3, 5, 5, 5.5, 7.5}, // 3's downlink busy until 6.5: 6.5..7.5
		{2, 0, 100, 9, 9, 9},   // nothing capped on this path
	} {
		sent := l.Up(tc.from, tc.b, tc.now)
		got := l.Down(tc.to, tc.b, sent)
		if math.Abs(sent-tc.sent) > 1e-12 || math.Abs(got-tc.got) > 1e-12 {
			t.Errorf("%d→%d, %d B at %g: sent at %g (want %g), delivered at %g (want %g)", tc.from, tc.to, tc.b, tc.now, sent, tc.sent, got, tc.got)
		}
	}
	var nl *Links
	if sent, got := nl.Up(0, 1<<20, 3), nl.Down(1, 1<<20, 3); sent != 3 || got != 3 {
		t.Errorf("nil Links: sent at %g, delivered at %g, want 3 and 3", sent, got)
	}
	// Concurrent use: 100 transfers of 1 B through a 10 B/s uplink end at 10 s.
	l = NewLinks([]float64{10, 0}, []float64{0, 0})
	var wg sync.WaitGroup
	var mu sync.Mutex
	last := 0.0
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := l.Up(0, 1, 0)
			mu.Lock()
			last = max(last, e)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if math.Abs(last-10) > 1e-9 {
		t.Errorf("100 B through 10 B/s ended at %g", last)
	}
}

// TestLinksUpDown: Up books a sender's uplink in the order transfers are
// sent, Down a receiver's downlink in the order bytes reach it, so a small
// transfer that reaches a downlink first is not held behind a larger one
// that was sent earlier but arrives later.
func TestLinksUpDown(t *testing.T) {
	l := NewLinks([]float64{100, 100, 0}, []float64{0, 0, 10})
	// Peer 0 sends 100 bytes at 0 (its uplink: done at 1), peer 1 sends 10
	// at 0 (done at 0.1); both to peer 2, whose downlink carries 10 B/s.
	if got := l.Up(0, 100, 0); got != 1 {
		t.Fatalf("uplink 0 done at %g, want 1", got)
	}
	if got := l.Up(0, 100, 0.5); got != 2 {
		t.Fatalf("a second transfer on uplink 0 done at %g, want 2 (after the first)", got)
	}
	if got := l.Up(1, 10, 0); got != 0.1 {
		t.Fatalf("uplink 1 done at %g, want 0.1", got)
	}
	// The small one reaches peer 2 first (at 0.1 + latency) and is not held
	// behind the large one, which reaches it at 1.
	if got := l.Down(2, 10, 0.2); got != 1.2 {
		t.Fatalf("downlink 2 delivered the small transfer at %g, want 1.2", got)
	}
	if got := l.Down(2, 100, 1.1); got != 11.2 {
		t.Fatalf("downlink 2 delivered the large transfer at %g, want 11.2 (after the small one)", got)
	}
	// Uncapped links pass bytes on at once; a nil Links caps nothing.
	if got := l.Down(0, 1000, 3); got != 3 {
		t.Fatalf("uncapped downlink: %g", got)
	}
	var none *Links
	if none.Up(0, 10, 4) != 4 || none.Down(0, 10, 4) != 4 {
		t.Fatal("a nil Links delayed a transfer")
	}
}
