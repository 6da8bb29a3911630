package natmodel

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"zero", Config{}, ""},
		{"field figure", Config{Share: 0.5, Punch: DefaultPunch, Relays: 4, Limits: DefaultLimits}, ""},
		{"nat without relays", Config{Share: 0.5, Punch: 0.7}, ""},
		{"share over 1", Config{Share: 1.5}, "NAT share 1.5"},
		{"share negative", Config{Share: -0.1}, "NAT share -0.1"},
		{"share NaN", Config{Share: math.NaN()}, "NAT share NaN"},
		{"punch over 1", Config{Punch: 2}, "punch success 2"},
		{"punch negative", Config{Punch: -1}, "punch success -1"},
		{"relays negative", Config{Relays: -1}, "-1 relays"},
		{"data negative", Config{Limits: Limits{Data: -1}}, "relay limits -1 bytes"},
		{"duration negative", Config{Limits: Limits{Duration: -time.Second}}, "relay limits 0 bytes, -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrConfig naming %q", err, tc.want)
			}
		})
	}
}

func TestPaths(t *testing.T) {
	const n = 400
	for _, tc := range []struct {
		name                 string
		cfg                  Config
		nated                int
		direct, punched      float64 // shares of all pairs, ±0.03
		relayed, unreachable float64
	}{
		{"no NAT", Config{Punch: 0.7, Relays: 2}, 0, 1, 0, 0, 0},
		{"all NAT, all punch", Config{Share: 1, Punch: 1, Relays: 2}, n, 0, 1, 0, 0},
		{"all NAT, no punch, relays", Config{Share: 1, Punch: 0, Relays: 2}, n, 0, 0, 1, 0},
		{"all NAT, no punch, no relay", Config{Share: 1, Punch: 0}, n, 0, 0, 0, 1},
		// Half NATed: a quarter of the pairs are NATed on both sides.
		{"half NAT, field punch", Config{Share: 0.5, Punch: 0.7, Relays: 4}, n / 2, 0.75, 0.25 * 0.7, 0.25 * 0.3, 0},
		{"half NAT, field punch, no relay", Config{Share: 0.5, Punch: 0.7}, n / 2, 0.75, 0.25 * 0.7, 0, 0.25 * 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.cfg, n, 7)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.CountNATed(); got != tc.nated {
				t.Fatalf("%d NATed, want %d", got, tc.nated)
			}
			var pairs [][2]int
			for a := range n {
				for b := a + 1; b < n; b++ {
					pairs = append(pairs, [2]int{a, b})
					if m.Path(a, b) != m.Path(b, a) || m.Relay(a, b) != m.Relay(b, a) {
						t.Fatalf("pair %d,%d: path or relay depends on the order", a, b)
					}
					if r := m.Relay(a, b); (r >= 0) != (m.Path(a, b) == Relayed) || r >= tc.cfg.Relays {
						t.Fatalf("pair %d,%d: relay %d on path %v", a, b, r, m.Path(a, b))
					}
				}
			}
			f := m.Figures(pairs)
			for _, w := range []struct {
				p    Path
				want float64
			}{{Direct, tc.direct}, {Punched, tc.punched}, {Relayed, tc.relayed}, {Unreachable, tc.unreachable}} {
				got := float64(f.Pairs[w.p.String()]) / float64(len(pairs))
				if math.Abs(got-w.want) > 0.03 {
					t.Errorf("%v: %.3f of the pairs, want %.3f", w.p, got, w.want)
				}
			}
		})
	}
}

// The punch of a pair depends on the seed and the pair alone.
func TestPunchDeterministic(t *testing.T) {
	cfg := Config{Share: 1, Punch: 0.5, Relays: 1}
	a, _ := New(cfg, 50, 3)
	b, _ := New(cfg, 50, 3)
	c, _ := New(cfg, 50, 4)
	bigger, _ := New(cfg, 80, 3) // more peers: the same draws for the same pairs
	differ := 0
	// Ask b in the opposite order: the draws must not depend on it.
	for x := 49; x >= 0; x-- {
		for y := range x {
			if a.Punched(x, y) != b.Punched(y, x) || a.Punched(x, y) != bigger.Punched(x, y) {
				t.Fatalf("pair %d,%d drawn differently for the same seed", x, y)
			}
			if a.Punched(x, y) != c.Punched(x, y) {
				differ++
			}
		}
	}
	if differ < 400 { // about half of the 1225 pairs
		t.Fatalf("seeds 3 and 4 drew %d of 1225 pairs differently, want about half", differ)
	}
	if a.Punched(5, 5) {
		t.Fatal("a peer punched itself")
	}
}

func TestCircuitLimits(t *testing.T) {
	t0 := time.Unix(100, 0)
	type step struct {
		from, to int
		n        int
		after    time.Duration
		reopen   bool // Open again before this step
		carried  int
		err      error
	}
	for _, tc := range []struct {
		name   string
		limits Limits
		steps  []step
	}{
		{"no limits", Limits{}, []step{
			{0, 1, 1 << 30, 0, false, 1 << 30, nil},
			{1, 0, 1 << 30, time.Hour, false, 1 << 30, nil},
		}},
		{"data limit per direction", Limits{Data: 1000}, []step{
			{0, 1, 600, 0, false, 600, nil},
			{1, 0, 1000, 0, false, 1000, nil}, // the other direction has its own budget
			{0, 1, 600, 0, false, 400, ErrDataLimit},
			{1, 0, 1, 0, false, 0, ErrClosed}, // the circuit is over
			{1, 0, 1, 0, true, 1, nil},        // a new circuit
		}},
		{"duration limit", Limits{Duration: time.Minute}, []step{
			{0, 1, 10, 59 * time.Second, false, 10, nil},
			{0, 1, 10, time.Minute, false, 0, ErrDurationLimit},
			{0, 1, 10, time.Minute, true, 10, nil},
			{0, 1, 10, 2*time.Minute - time.Nanosecond, false, 10, nil},
			{0, 1, 10, 2 * time.Minute, false, 0, ErrDurationLimit},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{Share: 1, Relays: 1, Limits: tc.limits}, 2, 1)
			if err != nil {
				t.Fatal(err)
			}
			c := NewCircuits(m)
			gen := c.Open(0, 1, t0)
			var sum int64
			for k, s := range tc.steps {
				if s.reopen {
					gen = c.Open(1, 0, t0.Add(s.after))
				}
				n, err := c.Carry(s.from, s.to, gen, s.n, t0.Add(s.after))
				if n != s.carried || !errors.Is(err, s.err) {
					t.Fatalf("step %d: carried %d, %v; want %d, %v", k, n, err, s.carried, s.err)
				}
				sum += int64(n)
			}
			if st := c.Stats(); st.Bytes != sum || st.PerRelay[0] != sum {
				t.Fatalf("stats %+v, want %d bytes", st, sum)
			}
		})
	}
}

func TestCarryNotRelayed(t *testing.T) {
	m, _ := New(Config{Share: 0, Relays: 1, Limits: DefaultLimits}, 3, 1)
	c := NewCircuits(m)
	if _, err := c.Carry(0, 1, c.Open(0, 1, time.Time{}), 1, time.Time{}); !errors.Is(err, ErrNotRelayed) {
		t.Fatalf("Carry between public peers: %v, want ErrNotRelayed", err)
	}
}

func TestClose(t *testing.T) {
	m, _ := New(Config{Share: 1, Relays: 2}, 3, 1)
	c := NewCircuits(m)
	gen := c.Open(0, 2, time.Time{})
	c.Close(2, 0)
	if _, err := c.Carry(0, 2, gen, 1, time.Time{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Carry on a closed circuit: %v, want ErrClosed", err)
	}
	if g := c.Open(0, 2, time.Time{}); g == gen {
		t.Fatal("Open after Close kept the generation")
	}
}
