package reconcile

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// TestClock: a session reads time only from Config.Now: none without it, and
// the given clock's readings with it (here a clock that advances 1 ms a read).
func TestClock(t *testing.T) {
	const u = 500
	uv, _ := NewUniverse(u)
	a, b := splitSets(rand.New(rand.NewPCG(11, 12)), u, 300, 300, 100)
	var ticks time.Duration
	fake := func() time.Time { ticks += time.Millisecond; return time.Unix(0, 0).Add(ticks) }
	for _, tc := range []struct {
		name string
		now  func() time.Time
	}{{"no clock", nil}, {"fake clock", fake}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{OneWay: true, Now: tc.now}
			A, _ := NewSession(1, cfg, uv, a, nil)
			B, _ := NewSession(1, cfg, uv, b, nil)
			ca, cb := chanPipe()
			errB := make(chan error, 1)
			go func() { errB <- Drive(context.Background(), B, cb, Limits{}) }()
			A.Start()
			if err := Drive(context.Background(), A, ca, Limits{}); err != nil {
				t.Fatal(err)
			}
			if err := <-errB; err != nil {
				t.Fatal(err)
			}
			for _, s := range []*Session{A, B} {
				o := s.Outcome()
				if tc.now == nil && (o.Compute != 0 || o.Build != 0) {
					t.Errorf("no clock, yet compute %v build %v", o.Compute, o.Build)
				}
				if tc.now != nil && (o.Compute <= 0 || o.Compute%time.Millisecond != 0 || o.Build > o.Compute) {
					t.Errorf("fake clock: compute %v build %v", o.Compute, o.Build)
				}
			}
		})
	}
}
