package tracestats

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// smallTrace is a run of a seed (node 0) and four fetchers in two stripe
// trees, at time scale 10 with T* 2 s: node 1 is inner in stripe 0, node 4
// (which leaves) in stripe 1, node 3 lies. Units 0 and 2 are stripe 0's,
// 1 and 3 stripe 1's.
const smallTrace = `pushed -0.5 0 1 0
start complete 0 10 2.0000
role 3 liar corrupt
role 4 leave 0.500 false
parent 0 1 0
parent 0 2 1
parent 1 4 0
parent 1 2 4
pushed 1 0 4 1
pushed 2 0 1 2
pushed 3 1 2 0
pushed 4 1 2 2
sent 4.5 3 2 1
left 5 4
sent 6 0 2 1
sent 7 0 2 3
pushed 8 0 1 2
done 9 2
pushed 10 1 2 2
sent 10 0 1 3
done 12 1
answered 12 1 2 3 4
busy 12 1 2
`

func TestReadTrace(t *testing.T) {
	runs, err := Read(strings.NewReader(smallTrace))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	st := runs[0]
	want := Stats{
		Method: "complete", Seed: 0, Scale: 10, TStarS: 2, Lines: 23, Liars: 1, Leavers: 1,
		// Nodes 1 and 2 never left: done at 1.2 and 0.9 s.
		Stayed: 2, StayedMedianS: 0.9, StayedMaxS: 1.2,
		// The seed had sent units 0..3 once at 7 s (0.7 described).
		SeedOutS: 0.7,
		// Until then: pushes of units 0 (before the start), 1 (to the
		// leaver: it counts), 2, 0 and 2; sends of units 1 and 3 (the
		// liar's send does not count). After: the seed's second push of unit 2 to node 1
		// and node 1's second push of unit 2 to node 2, after node 2 was
		// done; the seed's send of unit 3 to node 1.
		Before:     Received{Pushed: 5, Fetched: 2},
		After:      Received{Pushed: 2, PushedAgain: 2, Fetched: 1},
		PushedDone: 1,
		SeedPushed: 4, SeedSent: 3,
		Stripes: []Stripe{
			// Node 1 got unit 2 at 0.2 s and unit 3 at 1.0; node 2 got
			// unit 2 at 0.4 and unit 3 at 0.7: stripe 1 (units 1 and 3)
			// came last.
			{Stripe: 1, LastMedianS: 0.7, LastMaxS: 1.0, BrokenInner: []Role{{Node: 4, Role: "leave"}}},
			{Stripe: 0, LastMedianS: 0.2, LastMaxS: 0.4},
		},
	}
	for _, p := range []*float64{&st.StayedMedianS, &st.StayedMaxS, &st.SeedOutS} {
		*p = math.Round(*p*1e9) / 1e9
	}
	for k := range st.Stripes {
		s := &st.Stripes[k]
		s.LastMedianS, s.LastMaxS = math.Round(s.LastMedianS*1e9)/1e9, math.Round(s.LastMaxS*1e9)/1e9
	}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("stats:\n%+v\nwant:\n%+v", st, want)
	}
	var b bytes.Buffer
	if err := st.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"T* 2.00 s", "2 peers that never left: done at 0.90 s (0.45x T*) (median)", "stripe 1: 0.70 s (0.35x T*), 1.00 s (0.50x T*); 4 (leave)", "1 pushed to peers that never left after they were done"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, b.String())
		}
	}
}

// TestReadTraceSeedSentHeld checks the count of units the seed sent on
// request that WidelyHeld honest peers held already.
func TestReadTraceSeedSentHeld(t *testing.T) {
	var b strings.Builder
	b.WriteString("start complete 0\n")
	for n := 1; n < WidelyHeld; n++ {
		fmt.Fprintf(&b, "sent 1 0 %d 7\n", n)
	}
	fmt.Fprintf(&b, "sent 2 0 %d 7\n", WidelyHeld)   // the tenth holder: 9 held it before
	fmt.Fprintf(&b, "sent 3 0 %d 7\n", WidelyHeld+1) // 10 held it before
	fmt.Fprintf(&b, "sent 3 0 %d 8\n", WidelyHeld+1)
	runs, err := Read(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if st := runs[0]; st.SeedSent != WidelyHeld+2 || st.SeedSentHeld != 1 || st.Scale != 1 || st.TStarS != 0 {
		t.Errorf("seed sent %d, %d widely held, scale %g, T* %g; want %d, 1, 1, 0", st.SeedSent, st.SeedSentHeld, st.Scale, st.TStarS, WidelyHeld+2)
	}
}

// TestReadTraceRuns checks that each start line begins a run of its own.
func TestReadTraceRuns(t *testing.T) {
	runs, err := Read(strings.NewReader("start complete 0 1 0\ndone 1 1\nstart bitfield -1 2 0\ndone 1 1\ndone 3 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := runs[1].WriteText(&b); err != nil || !strings.HasPrefix(b.String(), "bitfield: no seed, time scale 2;") || !strings.Contains(b.String(), "in all: ") {
		t.Errorf("text of a run without a seed: %v\n%s", err, b.String())
	}
	if len(runs) != 2 || runs[0].Method != "complete" || runs[0].Stayed != 1 || runs[1].Method != "bitfield" || runs[1].Seed != -1 || runs[1].Stayed != 2 || runs[1].StayedMaxS != 1.5 {
		t.Errorf("runs: %+v", runs)
	}
}

func TestReadTraceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, trace, want string
	}{
		{"empty", "", "no run"},
		{"no start", "pushed 1 0 1 2\n", "no run"},
		{"start fields", "start complete\n", "line 1: start: want METHOD SEED"},
		{"start seed", "start complete x\n", `line 1: start: "x": want a node number`},
		{"start scale", "start complete 0 0 1\n", "line 1: start: time scale"},
		{"start T*", "start complete 0 1 -1\n", "line 1: start: T*"},
		{"node", "start complete 0\nsent 1 0 99999999999 1\n", `line 2: sent: "99999999999": want a node number`},
		{"node below -1", "start complete 0\ndone 1 -2\n", "line 2: done"},
		{"time", "start complete 0\npushed NaN 0 1 1\n", "line 2: pushed: time"},
		{"unit", "start complete 0\npushed 1 0 1 -1\n", "line 2: pushed: unit -1"},
		{"fields", "start complete 0\npushed 1 0 1\n", "line 2: pushed: want T FROM TO UNIT"},
		{"role", "start complete 0\nrole 1 saint\n", `line 2: role: unknown role "saint"`},
		{"parent", "start complete 0\nparent 0 -1 2\n", "line 2: parent"},
		{"stripes", "start complete 0\nparent 99999 1 2\n", "line 2: parent: stripe 99999"},
		{"long line", "start complete 0\n" + strings.Repeat("x", traceLineMax+1) + "\n", "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.trace))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one with %q", err, tc.want)
			}
		})
	}
	// Lines of kinds it does not know are skipped.
	if _, err := Read(strings.NewReader("start complete 0\nnews 1 2 3\n")); err != nil {
		t.Errorf("unknown kind: %v", err)
	}
}

// FuzzReadTrace checks that no input makes Read panic, and that what
// it accepts it can write out.
func FuzzReadTrace(f *testing.F) {
	f.Add([]byte(smallTrace))
	f.Add([]byte("start complete 0 1 0\nparent 300 1 0\ndone 1 1\npushed 0.5 0 1 16777215\n"))
	f.Add([]byte("start x -1\n\n\nrole 1 late 0.2\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		runs, err := Read(bytes.NewReader(in))
		if err != nil {
			return
		}
		for _, st := range runs {
			if err := st.WriteText(&bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestQuantileZeros checks quantileZeros against quantile over the zeros
// and the values together.
func TestQuantileZeros(t *testing.T) {
	for _, tc := range []struct {
		xs    []float64
		zeros int
	}{{nil, 0}, {nil, 3}, {[]float64{1}, 0}, {[]float64{1, 2}, 1}, {[]float64{0.5, 2, 3}, 2}, {[]float64{1, 4, 9, 16}, 5}} {
		all := append(make([]float64, tc.zeros), tc.xs...)
		for _, q := range []float64{0, 0.25, 0.5, 0.95, 1} {
			if got, want := quantileZeros(tc.xs, tc.zeros, q), quantile(all, q); got != want {
				t.Errorf("%v after %d zeros, q %g: %g, want %g", tc.xs, tc.zeros, q, got, want)
			}
		}
	}
}
