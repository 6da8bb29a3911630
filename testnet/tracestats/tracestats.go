// Package tracestats reads the traces that package testnet's runs write
// (testnet.Config.Trace; reconcile testnet --trace FILE) and sums each run
// up: when the peers that never left were done, how many of the units
// honest peers received they had received before, until the seed had sent
// every unit once and after, what the seed pushed and sent on request,
// and, with stripe trees, which stripes came in last and which of their
// inner nodes left or lied. Writer writes a trace; its doc gives the format.
package tracestats

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Stats summarizes one run of a trace (testnet.Config.Trace): when the peers
// that never left completed, how many of the units honest peers received
// they had received before, what the seed sent, and, with stripe trees,
// which stripes came in last and what broke their trees. Times are in the
// described network's seconds (a trace's times divided by its time scale).
type Stats struct {
	Method  string  `json:"method"`
	Seed    int     `json:"seed"`    // the seed's node, -1 for none
	Scale   float64 `json:"scale"`   // the run's time scale (1 for a trace that does not say)
	TStarS  float64 `json:"tstar_s"` // T*, 0 when the trace does not say
	Lines   int     `json:"lines"`   // the run's lines
	Liars   int     `json:"liars"`   // peers that lied
	Leavers int     `json:"leavers"` // peers that left mid-fetch
	Late    int     `json:"late"`    // peers that joined late

	// Stayed counts the honest peers that were there from start to end
	// and ended their fetching (a done line); StayedMedianS and
	// StayedMaxS are when.
	Stayed        int     `json:"stayed"`
	StayedMedianS float64 `json:"stayed_median_s"`
	StayedMaxS    float64 `json:"stayed_max_s"`

	// SeedOutS is when the seed had sent every unit it sent once (0: no
	// seed); Before and After count the units honest peers received from
	// honest peers (pushed and fetched, with how many the receiver had
	// received before) up to then and after.
	SeedOutS float64  `json:"seed_out_s"`
	Before   Received `json:"before"`
	After    Received `json:"after"`
	// PushedDone counts the units pushed to peers that never left after
	// they were done.
	PushedDone int `json:"pushed_done"`

	// SeedPushed and SeedSent count the units the seed pushed and sent on
	// request; SeedSentHeld those it sent on request while WidelyHeld or
	// more honest peers had received the unit.
	SeedPushed   int `json:"seed_pushed"`
	SeedSent     int `json:"seed_sent"`
	SeedSentHeld int `json:"seed_sent_held"`

	// Stripes holds, with stripe trees, each stripe's figures, the
	// slowest first.
	Stripes []Stripe `json:"stripes,omitempty"`
}

// Received counts the units received in a span of a run.
type Received struct {
	Pushed       int `json:"pushed"`        // units pushed
	PushedAgain  int `json:"pushed_again"`  // of those, units the receiver had received before
	Fetched      int `json:"fetched"`       // units sent on request
	FetchedAgain int `json:"fetched_again"` // of those, units the receiver had received before
}

// Stripe are one stripe tree's figures in a trace: when the peers that
// never left got the stripe's last unit (median, max), and the stripe's
// inner nodes (peers with children in it) that left or lied.
type Stripe struct {
	Stripe      int     `json:"stripe"`
	LastMedianS float64 `json:"last_median_s"`
	LastMaxS    float64 `json:"last_max_s"`
	BrokenInner []Role  `json:"broken_inner,omitempty"`
}

// Role is a node's part in a run, as a trace's role line gives it.
type Role struct {
	Node int    `json:"node"`
	Role string `json:"role"` // "liar", "leave" or "late"
}

// WidelyHeld is how many honest peers must have received a unit for
// Stats.SeedSentHeld to count the seed's sending it on request.
const WidelyHeld = 10

// traceStripesMax bounds the stripes of a trace's trees (package peer
// takes at most 256).
const traceStripesMax = 1 << 10

// traceLineMax bounds a trace line: the longest a tracer writes is well
// under it.
const traceLineMax = 4 << 10

// Read reads a trace written by a run (testnet.Config.Trace; reconcile
// testnet --trace) and returns each run's statistics, in order (a trace
// holds one run per "start" line). A malformed line is an error naming
// it; lines of kinds it does not know are skipped.
func Read(r io.Reader) ([]Stats, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, traceLineMax), traceLineMax)
	var out []Stats
	var run *traceRun
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if f[0] == "start" {
			if run != nil && run.started {
				out = append(out, run.stats())
				run = nil
			}
			var err error
			if run, err = run.start(f); err != nil {
				return nil, fmt.Errorf("tracestats: line %d: %w", n, err)
			}
			continue
		}
		if run == nil {
			// Lines before the first start line (traces written before
			// the tracer held them back) belong to the first run.
			run = newTraceRun()
		}
		if err := run.add(f); err != nil {
			return nil, fmt.Errorf("tracestats: line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("tracestats: a line longer than %d bytes", traceLineMax)
		}
		return nil, fmt.Errorf("tracestats: %w", err)
	}
	if run != nil && run.started {
		out = append(out, run.stats())
	}
	if len(out) == 0 {
		return nil, errors.New("tracestats: no run in the trace (no start line)")
	}
	return out, nil
}

// traceUnit is one unit a node received: when, from whom, how.
type traceUnit struct {
	t        float64
	from, to int
	unit     int
	pushed   bool
}

// traceRun gathers one run's lines.
type traceRun struct {
	st      Stats
	started bool // its start line was read
	roles   map[int]string
	inner   map[[2]int]bool // {stripe, node}: the node has children in the stripe
	stripes int
	units   []traceUnit
	done    map[int]float64
	left    map[int]bool
}

func newTraceRun() *traceRun {
	return &traceRun{st: Stats{Seed: -1, Scale: 1}, roles: map[int]string{}, inner: map[[2]int]bool{}, done: map[int]float64{}, left: map[int]bool{}}
}

// start takes a start line: r's (whose lines came before it), or a new
// run's when r is nil.
func (r *traceRun) start(f []string) (*traceRun, error) {
	if len(f) != 3 && len(f) != 5 {
		return nil, fmt.Errorf("start: want METHOD SEED [SCALE TSTAR], got %d fields", len(f)-1)
	}
	if r == nil {
		r = newTraceRun()
	}
	r.started = true
	r.st.Method = f[1]
	var err error
	if r.st.Seed, err = traceNode(f[2]); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	if len(f) == 5 {
		if r.st.Scale, err = traceFloat(f[3]); err != nil || r.st.Scale <= 0 {
			return nil, fmt.Errorf("start: time scale %q: want a positive number", f[3])
		}
		if r.st.TStarS, err = traceFloat(f[4]); err != nil || r.st.TStarS < 0 {
			return nil, fmt.Errorf("start: T* %q: want a number 0 or more", f[4])
		}
	}
	r.st.Lines++
	return r, nil
}

// add takes one line of the run.
func (r *traceRun) add(f []string) error {
	r.st.Lines++
	want := func(n int, form string) error {
		if len(f) != n {
			return fmt.Errorf("%s: want %s, got %d fields", f[0], form, len(f)-1)
		}
		return nil
	}
	switch f[0] {
	case "role":
		if len(f) < 3 {
			return errors.New("role: want N KIND ...")
		}
		n, err := traceNode(f[1])
		if err != nil {
			return fmt.Errorf("role: %w", err)
		}
		switch f[2] {
		case "liar":
			r.st.Liars++
		case "leave":
			r.st.Leavers++
		case "late":
			r.st.Late++
		default:
			return fmt.Errorf("role: unknown role %q", f[2])
		}
		r.roles[n] = f[2]
	case "parent":
		if err := want(4, "STRIPE CHILD PARENT"); err != nil {
			return err
		}
		var v [3]int
		for k := range v {
			var err error
			if v[k], err = traceNode(f[1+k]); err != nil || v[k] < 0 {
				return fmt.Errorf("parent: %q: want a number 0 or more", f[1+k])
			}
		}
		if v[0] >= traceStripesMax {
			return fmt.Errorf("parent: stripe %d (at most %d)", v[0], traceStripesMax-1)
		}
		r.inner[[2]int{v[0], v[2]}] = true
		r.stripes = max(r.stripes, v[0]+1)
	case "sent", "pushed":
		if err := want(5, "T FROM TO UNIT"); err != nil {
			return err
		}
		t, err := traceFloat(f[1])
		if err != nil {
			return fmt.Errorf("%s: time %q: want a number", f[0], f[1])
		}
		var v [3]int
		for k := range v {
			if v[k], err = traceNode(f[2+k]); err != nil {
				return fmt.Errorf("%s: %w", f[0], err)
			}
		}
		if v[2] < 0 {
			return fmt.Errorf("%s: unit %d", f[0], v[2])
		}
		r.units = append(r.units, traceUnit{t: t, from: v[0], to: v[1], unit: v[2], pushed: f[0] == "pushed"})
	case "done", "left", "back", "joined":
		if err := want(3, "T N"); err != nil {
			return err
		}
		t, err := traceFloat(f[1])
		if err != nil {
			return fmt.Errorf("%s: time %q: want a number", f[0], f[1])
		}
		n, err := traceNode(f[2])
		if err != nil {
			return fmt.Errorf("%s: %w", f[0], err)
		}
		switch f[0] {
		case "done":
			r.done[n] = t
		case "left":
			r.left[n] = true
		}
	}
	return nil
}

// stats works out the run's statistics.
func (r *traceRun) stats() Stats {
	st := r.st
	sc := st.Scale
	liar := func(n int) bool { return r.roles[n] == "liar" }
	stayed := func(n int) bool { _, ok := r.roles[n]; return !ok && !r.left[n] && n != st.Seed && n >= 0 }
	// The units are in the order written, which is time order but for
	// lines of concurrent writers a few microseconds apart.
	slices.SortStableFunc(r.units, func(a, b traceUnit) int { return cmp.Compare(a.t, b.t) })

	// When the seed had sent every unit once.
	if st.Seed >= 0 {
		seen := map[int]bool{}
		for _, u := range r.units {
			if u.from == st.Seed && !seen[u.unit] {
				seen[u.unit] = true
				st.SeedOutS = u.t / sc
			}
		}
	}
	type key struct{ node, unit int }
	first := map[key]float64{} // when each honest peer first received each unit
	holders := map[int]int{}   // unit -> honest peers that received it
	for _, u := range r.units {
		if st.Seed >= 0 && u.from == st.Seed {
			if u.pushed {
				st.SeedPushed++
			} else {
				st.SeedSent++
				if holders[u.unit] >= WidelyHeld {
					st.SeedSentHeld++
				}
			}
		}
		if u.to < 0 || liar(u.from) || liar(u.to) {
			continue
		}
		k := key{u.to, u.unit}
		_, again := first[k]
		span := &st.Before
		if st.Seed >= 0 && u.t/sc > st.SeedOutS {
			span = &st.After
		}
		if u.pushed {
			span.Pushed++
			if again {
				span.PushedAgain++
			}
			if d, ok := r.done[u.to]; ok && stayed(u.to) && u.t > d {
				st.PushedDone++
			}
		} else {
			span.Fetched++
			if again {
				span.FetchedAgain++
			}
		}
		if !again {
			holders[u.unit]++
			first[k] = u.t
		}
	}

	var times []float64
	for n, d := range r.done {
		if stayed(n) {
			times = append(times, d/sc)
		}
	}
	slices.Sort(times)
	st.Stayed = len(times)
	st.StayedMedianS, st.StayedMaxS = quantile(times, 0.5), quantile(times, 1)

	if r.stripes > 0 && st.Stayed > 0 {
		// When each peer that never left got each stripe's last unit (0
		// for a stripe it got nothing of; memory as the units, not as
		// peers times stripes).
		lastOf := map[[2]int]float64{} // {node, stripe}
		for k, t := range first {
			if _, done := r.done[k.node]; done && stayed(k.node) {
				ns := [2]int{k.node, k.unit % r.stripes}
				lastOf[ns] = max(lastOf[ns], t/sc)
			}
		}
		last := make([][]float64, r.stripes)
		for ns, t := range lastOf {
			last[ns[1]] = append(last[ns[1]], t)
		}
		broken := map[int][]Role{}
		for k := range r.inner {
			if role := r.roles[k[1]]; role == "liar" || role == "leave" {
				broken[k[0]] = append(broken[k[0]], Role{Node: k[1], Role: role})
			}
		}
		for s := range r.stripes {
			slices.Sort(last[s])
			zeros := st.Stayed - len(last[s])
			b := broken[s]
			slices.SortFunc(b, func(x, y Role) int { return cmp.Compare(x.Node, y.Node) })
			st.Stripes = append(st.Stripes, Stripe{Stripe: s, LastMedianS: quantileZeros(last[s], zeros, 0.5), LastMaxS: quantileZeros(last[s], zeros, 1), BrokenInner: b})
		}
		slices.SortStableFunc(st.Stripes, func(a, b Stripe) int { return cmp.Compare(b.LastMedianS, a.LastMedianS) })
	}
	return st
}

// quantile returns the q-quantile of sorted xs (nearest rank), 0 if empty,
// as package testnet's Result takes it.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// quantileZeros is quantile of sorted xs (none negative) after zeros
// zeros.
func quantileZeros(xs []float64, zeros int, q float64) float64 {
	n := zeros + len(xs)
	if n == 0 {
		return 0
	}
	i := min(max(int(q*float64(n)+0.999999)-1, 0), n-1)
	if i < zeros {
		return 0
	}
	return xs[i-zeros]
}

// traceNode parses a node number: -1 (none) or more, below 1<<24.
func traceNode(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < -1 || n >= 1<<24 {
		return 0, fmt.Errorf("%q: want a node number", s)
	}
	return n, nil
}

// traceFloat parses a finite number.
func traceFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q: want a number", s)
	}
	return v, nil
}

// WriteText writes the statistics as a few lines of text for people.
func (st *Stats) WriteText(w io.Writer) error {
	var b strings.Builder
	sec := func(s float64) string {
		if st.TStarS > 0 {
			return fmt.Sprintf("%.2f s (%.2fx T*)", s, s/st.TStarS)
		}
		return fmt.Sprintf("%.2f s", s)
	}
	again := func(n, of int) string {
		if of == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.1f%% had it already)", 100*float64(n)/float64(of))
	}
	if st.Seed >= 0 {
		fmt.Fprintf(&b, "%s: seed node %d, time scale %g", st.Method, st.Seed, st.Scale)
	} else {
		fmt.Fprintf(&b, "%s: no seed, time scale %g", st.Method, st.Scale)
	}
	if st.TStarS > 0 {
		fmt.Fprintf(&b, ", T* %.2f s", st.TStarS)
	}
	fmt.Fprintf(&b, "; %d liars, %d left mid-fetch, %d joined late; times at the described rates\n", st.Liars, st.Leavers, st.Late)
	if st.Stayed > 0 {
		fmt.Fprintf(&b, "  %d peers that never left: done at %s (median), %s (the last)\n", st.Stayed, sec(st.StayedMedianS), sec(st.StayedMaxS))
	}
	span := func(name string, r Received) {
		fmt.Fprintf(&b, "    %s: %d pushed%s, %d fetched%s\n", name, r.Pushed, again(r.PushedAgain, r.Pushed), r.Fetched, again(r.FetchedAgain, r.Fetched))
	}
	b.WriteString("  units honest peers received from honest peers:\n")
	if st.Seed >= 0 {
		span("until the seed had sent every unit once, "+sec(st.SeedOutS), st.Before)
		span("after", st.After)
	} else {
		span("in all", st.Before)
	}
	if st.PushedDone > 0 {
		fmt.Fprintf(&b, "    %d pushed to peers that never left after they were done\n", st.PushedDone)
	}
	if st.Seed >= 0 {
		fmt.Fprintf(&b, "  the seed pushed %d units and sent %d on request, %d of those while %d or more honest peers held the unit\n",
			st.SeedPushed, st.SeedSent, st.SeedSentHeld, WidelyHeld)
	}
	if len(st.Stripes) > 0 {
		b.WriteString("  stripes, slowest first: when the peers that never left got the stripe's last unit (median, the last); inner nodes that left or lied\n")
		for k, s := range st.Stripes {
			if k == 8 && len(st.Stripes) > 9 {
				fmt.Fprintf(&b, "    ... %d more\n", len(st.Stripes)-k)
				break
			}
			fmt.Fprintf(&b, "    stripe %d: %s, %s", s.Stripe, sec(s.LastMedianS), sec(s.LastMaxS))
			for j, r := range s.BrokenInner {
				if j == 4 {
					fmt.Fprintf(&b, " +%d", len(s.BrokenInner)-j)
					break
				}
				sep := "; "
				if j > 0 {
					sep = ", "
				}
				fmt.Fprintf(&b, "%s%d (%s)", sep, r.Node, r.Role)
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
