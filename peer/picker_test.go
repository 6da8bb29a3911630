package peer

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
)

func TestPickerClaims(t *testing.T) {
	held := map[int]bool{2: true}
	pk := newPicker(func(i int) bool { return held[i] }, 100)
	var a, b offers
	pk.offer(&a, []int{0, 1, 2, 3, 4})
	pk.offer(&b, []int{3, 4, 5})
	if got := pk.claim("a", &a, 3); !slices.Equal(got, []int{0, 1, 3}) {
		t.Fatalf("a claims %v, want [0 1 3] (2 is held)", got)
	}
	if got := pk.claim("b", &b, 10); !slices.Equal(got, []int{4, 5}) {
		t.Fatalf("b claims %v, want [4 5] (3 is a's)", got)
	}
	if pk.claimable(&b) {
		t.Fatal("b's deferred 3 is still claimed by a")
	}
	// a stalls on 3: it goes back, and b may take it.
	pk.unclaim("a", &a, []int{3})
	if !pk.claimable(&b) {
		t.Fatal("3 is free again, b should see it")
	}
	if got := pk.claim("b", &b, 10); !slices.Equal(got, []int{3}) {
		t.Fatalf("b claims %v after a released 3, want [3]", got)
	}
	// a's own offers still hold 4 (claimed by b: deferred) and 3 (b's now).
	if got := pk.claim("a", &a, 10); len(got) != 0 {
		t.Fatalf("a claims %v, want nothing: every unit left is b's", got)
	}
	pk.done(3, false)
	pk.done(4, false)
	pk.done(5, false)
	held[3], held[4], held[5] = true, true, true
	if pk.inFlight() != 2 {
		t.Fatalf("%d in flight, want 2 (0 and 1)", pk.inFlight())
	}
}

func TestPickerLimit(t *testing.T) {
	pk := newPicker(func(int) bool { return false }, 4)
	var a, b offers
	pk.offer(&a, []int{0, 1, 2, 3, 4, 5})
	pk.offer(&b, []int{6, 7, 8})
	if got := pk.claim("a", &a, 3); len(got) != 3 {
		t.Fatalf("a got %v", got)
	}
	if got := pk.claim("b", &b, 3); len(got) != 1 {
		t.Fatalf("b got %v, want 1: the limit is 4 in flight", got)
	}
	pk.done(0, false)
	if got := pk.claim("b", &b, 3); len(got) != 1 {
		t.Fatalf("b got %v, want 1 after one arrived", got)
	}
}

func TestPickerDrop(t *testing.T) {
	pk := newPicker(func(int) bool { return false }, 10)
	var a, b offers
	pk.offer(&a, []int{0})
	pk.offer(&b, []int{0})
	pk.claim("a", &a, 1)
	if got := pk.claim("b", &b, 1); len(got) != 0 {
		t.Fatalf("b got %v while a holds 0", got)
	}
	pk.drop("a", 0) // a lacks it after all
	if got := pk.claim("b", &b, 1); !slices.Equal(got, []int{0}) {
		t.Fatalf("b got %v, want [0]", got)
	}
	if got := pk.claim("a", &a, 1); len(got) != 0 {
		t.Fatalf("a got %v: a dropped unit is not offered by a again", got)
	}
}

// TestPickerProperty: with random sources that stall, lack units or deliver,
// no unit is ever claimed by two sources at once, and every unit offered by
// some source ends up delivered.
func TestPickerProperty(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 7))
		n := 1 + r.IntN(60)
		held := make([]bool, n)
		pk := newPicker(func(i int) bool { return held[i] }, 1+r.IntN(20))
		ids := []lpeer.ID{"a", "b", "c", "d"}
		offs := make([]offers, len(ids))
		lacks := make([]map[int]bool, len(ids))
		for s := range ids {
			lacks[s] = map[int]bool{}
			var units []int
			for i := range n {
				if r.IntN(3) > 0 || s == 0 {
					units = append(units, i)
				}
				if s > 0 && r.IntN(5) == 0 {
					lacks[s][i] = true
				}
			}
			r.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
			pk.offer(&offs[s], units)
		}
		for step := 0; step < 100000; step++ {
			done := true
			for _, h := range held {
				done = done && h
			}
			if done {
				break
			}
			s := r.IntN(len(ids))
			got := pk.claim(ids[s], &offs[s], 1+r.IntN(4))
			for _, i := range got {
				if owner := pk.claimed[i]; owner != ids[s] {
					t.Fatalf("seed %d: unit %d claimed by %s, handed to %s", seed, i, owner, ids[s])
				}
				switch {
				case lacks[s][i]:
					pk.drop(ids[s], i)
				case r.IntN(4) == 0:
					pk.unclaim(ids[s], &offs[s], []int{i})
				default:
					held[i] = true
					pk.done(i, false)
				}
			}
			if step == 99999 {
				t.Fatalf("seed %d: not every unit delivered", seed)
			}
		}
		if pk.inFlight() != 0 {
			t.Fatalf("seed %d: %d still claimed", seed, pk.inFlight())
		}
	}
}

// TestStallClock: the wait for a block is the stall timeout until a few
// gaps are known, then a few times the usual gap (at least stallMin) when
// other sources can take over, and the stall timeout again when not.
func TestStallClock(t *testing.T) {
	var c stallClock
	t0 := time.Unix(0, 0)
	if got := c.timeout(10*time.Second, true); got != 10*time.Second {
		t.Fatalf("no gap known: %v", got)
	}
	for i := range 6 {
		c.arrived(t0.Add(time.Duration(i) * 10 * time.Millisecond))
	}
	if got := c.timeout(10*time.Second, true); got != stallMin+80*time.Millisecond {
		t.Fatalf("10 ms gaps, others there: %v, want %v", got, stallMin+80*time.Millisecond)
	}
	if got := c.timeout(10*time.Second, false); got != 10*time.Second {
		t.Fatalf("alone: %v, want the stall timeout", got)
	}
	c.arrived(t0.Add(time.Hour)) // a long gap raises the average
	if got := c.timeout(10*time.Second, true); got != 10*time.Second {
		t.Fatalf("after an hour's gap: %v, want the stall timeout (the cap)", got)
	}
}
