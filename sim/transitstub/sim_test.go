package transitstub

import (
	"math"
	"testing"
)

func TestSimOrder(t *testing.T) {
	var s Sim
	var got []int
	s.At(5, func() { got = append(got, 5) })
	s.At(1, func() {
		got = append(got, 1)
		s.After(1, func() { got = append(got, 2) }) // scheduled from inside an event
		s.At(-3, func() { got = append(got, 10) })  // the past means now
	})
	s.At(5, func() { got = append(got, 6) }) // tie: scheduling order
	s.At(100, func() { got = append(got, 100) })
	if n := s.Run(50); n != 5 {
		t.Fatalf("Run(50) ran %d events, want 5", n)
	}
	want := []int{1, 10, 2, 5, 6}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	if s.Now() != 5 || s.Pending() != 1 {
		t.Fatalf("now %g pending %d, want 5 and 1", s.Now(), s.Pending())
	}
	s.Run(math.Inf(1))
	if s.Now() != 100 || s.Events() != 6 || s.Pending() != 0 {
		t.Fatalf("now %g events %d pending %d", s.Now(), s.Events(), s.Pending())
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.2, 1}, {0.5, 3}, {0.95, 5}, {1, 5}} {
		if got := quantile(xs, tc.q); got != tc.want {
			t.Errorf("quantile(%v, %g) = %g, want %g", xs, tc.q, got, tc.want)
		}
	}
	if quantile(nil, 0.5) != 0 || mean(nil) != 0 || mean(xs) != 3 {
		t.Error("empty or mean cases wrong")
	}
	if xs[0] != 5 {
		t.Error("quantile sorted its input")
	}
}

func BenchmarkSimEvents(b *testing.B) {
	var s Sim
	n := 0
	var tick func()
	tick = func() {
		n++
		if n < b.N {
			s.After(float64(n%7), tick)
		}
	}
	for i := range 1000 {
		s.At(float64(i), func() {})
	}
	s.At(0, tick)
	b.ResetTimer()
	s.Run(math.Inf(1))
}
