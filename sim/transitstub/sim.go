package transitstub

import (
	"container/heap"
	"math"
	"slices"
)

// Sim is a discrete-event simulator: a priority queue of timed callbacks run in time
// order (ties in scheduling order) on the caller's goroutine. Time is in
// milliseconds from 0. A Sim is not safe for concurrent use.
type Sim struct {
	now    float64
	seq    uint64
	q      eventQueue
	events int
}

type event struct {
	at  float64
	seq uint64
	fn  func()
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = event{}
	*q = old[:len(old)-1]
	return e
}

// Now returns the current simulated time in ms.
func (s *Sim) Now() float64 { return s.now }

// Events returns the number of events run so far.
func (s *Sim) Events() int { return s.events }

// Pending returns the number of scheduled events not yet run.
func (s *Sim) Pending() int { return len(s.q) }

// At schedules fn at time t (ms); a time in the past means now.
func (s *Sim) At(t float64, fn func()) {
	if t < s.now || math.IsNaN(t) {
		t = s.now
	}
	s.seq++
	heap.Push(&s.q, event{at: t, seq: s.seq, fn: fn})
}

// After schedules fn d ms from now.
func (s *Sim) After(d float64, fn func()) { s.At(s.now+d, fn) }

// Run runs events in time order until the queue is empty or the next event is after
// until (ms; +Inf for no limit). It returns the number of events run.
func (s *Sim) Run(until float64) int {
	n := 0
	for len(s.q) > 0 && s.q[0].at <= until {
		e := heap.Pop(&s.q).(event)
		s.now = e.at
		e.fn()
		n++
	}
	s.events += n
	return n
}

// inf is +Inf, for Run without a time limit.
var inf = math.Inf(1)

// log2 returns log base 2 of x.
func log2(x float64) float64 { return math.Log2(x) }

// quantile returns the q-quantile of xs (nearest rank on a sorted copy); 0 for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// mean returns the arithmetic mean of xs; 0 for none.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
