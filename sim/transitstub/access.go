package transitstub

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// AccessClass is a class of peers by access link: a share of the peers whose
// links carry Down bytes per second towards the peer and Up bytes per second
// from it, shared by all its connections. A rate of 0 means no cap.
type AccessClass struct {
	// Share is the fraction of the peers in the class, in (0, 1].
	Share float64 `json:"share"`
	// Down and Up are the peer's download and upload capacity, bytes per second.
	Down float64 `json:"down_bps"`
	Up   float64 `json:"up_bps"`
}

// ValidateClasses checks that every class has a share in (0, 1] and finite,
// non-negative rates, and that the shares sum to 1.
func ValidateClasses(classes []AccessClass) error {
	sum := 0.0
	for _, c := range classes {
		if !(c.Share > 0 && c.Share <= 1) || !okRate(c.Down) || !okRate(c.Up) {
			return fmt.Errorf("%w: access class %+v", ErrParams, c)
		}
		sum += c.Share
	}
	if len(classes) > 0 && math.Abs(sum-1) > 1e-6 {
		return fmt.Errorf("%w: access class shares sum to %g, not 1", ErrParams, sum)
	}
	return nil
}

func okRate(r float64) bool { return r >= 0 && !math.IsInf(r, 0) }

// AssignClasses gives each of n peers a class: round(Share·n) peers each
// (largest remainders, so the counts sum to n), in an order shuffled by rng.
// It returns the class index of every peer; all 0 when there is one class or
// none.
func AssignClasses(classes []AccessClass, n int, rng *rand.Rand) []int {
	of := make([]int, n)
	if len(classes) < 2 {
		return of
	}
	counts := make([]int, len(classes))
	type rem struct {
		c int
		r float64
	}
	rems := make([]rem, len(classes))
	left := n
	for c, cl := range classes {
		x := cl.Share * float64(n)
		counts[c] = int(x)
		left -= counts[c]
		rems[c] = rem{c, x - float64(counts[c])}
	}
	// Largest remainders first; ties to the earlier class.
	for ; left > 0; left-- {
		best := -1
		for k, r := range rems {
			if best < 0 || r.r > rems[best].r {
				best = k
			}
		}
		counts[rems[best].c]++
		rems[best].r = -1
	}
	i := 0
	for c, k := range counts {
		for range k {
			if i < n {
				of[i] = c
				i++
			}
		}
	}
	rng.Shuffle(n, func(a, b int) { of[a], of[b] = of[b], of[a] })
	return of
}

// FluidBound is the fluid lower bound on the time (seconds) to bring a file of
// fileBytes from one seed of upload capacity seedUp to every one of the peers
// whose upload and download capacities are up[i] and down[i] (bytes per
// second; 0 means no cap): no schedule can finish before
//
//	T* = max(F/u_s, F/min d_i, N·F/(u_s + Σ u_i))
//
// (Kumar and Ross, "Peer-assisted file distribution: the minimum distribution
// time", 2006). The seed must upload every byte once, the slowest downloader
// must receive all of them, and the N copies must cross the uploads. A term
// whose capacity is uncapped is 0; the bound is 0 when nothing is capped.
func FluidBound(fileBytes, seedUp float64, up, down []float64) float64 {
	f := fileBytes
	t := 0.0
	if seedUp > 0 {
		t = f / seedUp
	}
	minDown := math.Inf(1)
	for _, d := range down {
		if d > 0 {
			minDown = min(minDown, d)
		}
	}
	if !math.IsInf(minDown, 1) {
		t = max(t, f/minDown)
	}
	total, capped := seedUp, seedUp > 0
	for _, u := range up {
		if u <= 0 {
			capped = false
			break
		}
		total += u
	}
	if capped && len(up) > 0 {
		t = max(t, float64(len(up))*f/total)
	}
	return t
}

// Links are the access links of n peers, in the model testnet and RunSwarm
// share: a transfer of b bytes from peer i to peer j occupies b/Up_i of i's
// uplink (Up), booked when it is sent, in the order sent, and, once it has
// crossed the route's latency (the caller's), b/Down_j of j's downlink
// (Down), booked when it reaches it, in the order bytes arrive. So a peer's
// uplink or downlink never carries more than its capacity over any interval
// starting at 0, and FluidBound holds for any schedule. Links is safe for
// concurrent use; a nil *Links caps nothing.
type Links struct {
	mu             sync.Mutex
	up, down       []float64
	upFree, dnFree []float64
}

// NewLinks returns the links of peers whose capacities are up[i] and down[i]
// (bytes per second, 0: no cap).
func NewLinks(up, down []float64) *Links {
	return &Links{up: up, down: down, upFree: make([]float64, len(up)), dnFree: make([]float64, len(down))}
}

// Up books b bytes on the uplink of peer from, starting no earlier than now
// (seconds on the caller's clock), and returns when the uplink has sent
// them. With Down, called when they reach the receiver (a latency later),
// it books a transfer link by link as it happens.
func (l *Links) Up(from, b int, now float64) float64 {
	if l == nil {
		return now
	}
	return l.book(l.upFree, l.up, from, b, now)
}

// Down books b bytes on the downlink of peer to, arriving at time at, and
// returns when the downlink has delivered them: bytes are delivered in the
// order they arrive, at the downlink's rate.
func (l *Links) Down(to, b int, at float64) float64 {
	if l == nil {
		return at
	}
	return l.book(l.dnFree, l.down, to, b, at)
}

// book books b bytes on link i of capacity rate[i] (0: no cap), free from
// free[i], starting no earlier than at, and returns when they are through.
func (l *Links) book(free, rate []float64, i, b int, at float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := rate[i]; r > 0 {
		free[i] = max(at, free[i]) + float64(b)/r
		return free[i]
	}
	return at
}
