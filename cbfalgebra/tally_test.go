package cbfalgebra

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTallyProperty: over random sets, a tally's count of every key is at
// least the number of sets holding it (no false negatives), equal to it for
// the most keys with sparse filters, at least as large with loaded ones, and
// Remove undoes Add.
func TestTallyProperty(t *testing.T) {
	for _, tc := range []struct {
		m, r, sets, keys int
		exactShare       float64 // least share of keys counted exactly
	}{
		{m: 1 << 14, r: 4, sets: 8, keys: 200, exactShare: 0.99},
		{m: 1 << 12, r: 8, sets: 24, keys: 500, exactShare: 0.5},
		{m: 256, r: 4, sets: 16, keys: 300, exactShare: 0},
	} {
		t.Run(fmt.Sprintf("m%d_r%d_sets%d", tc.m, tc.r, tc.sets), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.m), 7))
			p, err := buildParams(tc.m, 5, []Option{WithCounterBits(tc.r)})
			if err != nil {
				t.Fatal(err)
			}
			tl, err := NewTally(p)
			if err != nil {
				t.Fatal(err)
			}
			truth := make([]int, tc.keys)
			filters := make([]*CBF, tc.sets)
			for j := range filters {
				filters[j], _ = NewFromParams(p)
				for k := range tc.keys {
					if rng.IntN(3) == 0 {
						filters[j].Insert(fmt.Appendf(nil, "k%d", k))
						truth[k]++
					}
				}
				if err := tl.Add(filters[j]); err != nil {
					t.Fatal(err)
				}
			}
			if tl.Filters() != tc.sets {
				t.Fatalf("Filters() = %d, want %d", tl.Filters(), tc.sets)
			}
			exact := 0
			for k, want := range truth {
				got := tl.Count(fmt.Appendf(nil, "k%d", k))
				if got < want {
					t.Fatalf("key %d: count %d below the %d sets holding it", k, got, want)
				}
				if got == want {
					exact++
				}
			}
			if share := float64(exact) / float64(tc.keys); share < tc.exactShare {
				t.Errorf("%.2f of keys counted exactly, want at least %.2f", share, tc.exactShare)
			}
			for _, f := range filters {
				if err := tl.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
			for i, v := range tl.c {
				if v != 0 {
					t.Fatalf("counter %d is %d after removing every filter", i, v)
				}
			}
			if err := tl.Remove(filters[0]); !errors.Is(err, ErrNotMember) {
				t.Fatalf("removing a filter not added: %v, want ErrNotMember", err)
			}
		})
	}
}

// TestTallyInsertLocations: inserting an element into the tally equals
// adding the filter that gained it (T8 with a singleton).
func TestTallyInsertLocations(t *testing.T) {
	a, _ := New(1024, 4)
	a.Insert([]byte("x"))
	viaFilter, _ := NewTally(a.Params())
	viaInsert, _ := NewTally(a.Params())
	if err := viaInsert.Add(a); err != nil {
		t.Fatal(err)
	}
	var buf [MaxK]uint32
	viaInsert.InsertLocations(a.Params().Locations(buf[:0], []byte("y")))
	a.Insert([]byte("y"))
	if err := viaFilter.Add(a); err != nil {
		t.Fatal(err)
	}
	for i := range viaFilter.c {
		if viaFilter.c[i] != viaInsert.c[i] {
			t.Fatalf("counter %d: %d via the filter, %d via InsertLocations", i, viaFilter.c[i], viaInsert.c[i])
		}
	}
	if got := viaInsert.CountLocations([]uint32{2000}); got != 0 {
		t.Errorf("count at an address beyond m: %d", got)
	}
}

func TestTallyErrors(t *testing.T) {
	a, _ := New(1024, 4)
	b, _ := New(2048, 4)
	tl, _ := NewTally(a.Params())
	if err := tl.Add(b); !errors.Is(err, ErrNotHomologous) {
		t.Errorf("adding a filter of other parameters: %v", err)
	}
	if err := tl.Add(nil); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("adding nil: %v", err)
	}
	if _, err := NewTally(Params{}); err == nil {
		t.Errorf("a tally of zero parameters")
	}
	tl.n = MaxTallied
	if err := tl.Add(a); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("adding past MaxTallied: %v", err)
	}
	tl.Reset()
	if tl.Filters() != 0 {
		t.Errorf("Filters() = %d after Reset", tl.Filters())
	}
}

// BenchmarkTally measures adding a 4-bit filter of 2^15 counters to a tally
// beside the baseline of cloning it.
func BenchmarkTally(b *testing.B) {
	c, _ := New(1<<15, 6)
	for i := range 3000 {
		c.Insert(fmt.Appendf(nil, "b%d", i))
	}
	tl, _ := NewTally(c.Params())
	b.Run("add-remove", func(b *testing.B) {
		b.SetBytes(int64(c.Params().M))
		for b.Loop() {
			tl.Add(c)
			tl.Remove(c)
		}
	})
	b.Run("clone-baseline", func(b *testing.B) {
		b.SetBytes(int64(c.Params().M))
		for b.Loop() {
			_ = c.Clone()
		}
	})
	var buf [MaxK]uint32
	locs := c.Params().Locations(buf[:0], []byte("b7"))
	b.Run("count", func(b *testing.B) {
		for b.Loop() {
			_ = tl.CountLocations(locs)
		}
	})
}
