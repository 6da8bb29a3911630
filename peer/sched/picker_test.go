package sched

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestPickerClaims(t *testing.T) {
	held := map[int]bool{2: true}
	pk := NewPicker[string](func(i int) bool { return held[i] }, 100)
	var a, b Offers
	pk.Offer(&a, []int{0, 1, 2, 3, 4})
	pk.Offer(&b, []int{3, 4, 5})
	if got := pk.Claim("a", &a, 3); !slices.Equal(got, []int{0, 1, 3}) {
		t.Fatalf("a claims %v, want [0 1 3] (2 is held)", got)
	}
	if got := pk.Claim("b", &b, 10); !slices.Equal(got, []int{4, 5}) {
		t.Fatalf("b claims %v, want [4 5] (3 is a's)", got)
	}
	if pk.Claimable(&b) {
		t.Fatal("b's deferred 3 is still claimed by a")
	}
	// a stalls on 3: it goes back, and b may take it.
	pk.Unclaim("a", &a, []int{3})
	if !pk.Claimable(&b) {
		t.Fatal("3 is free again, b should see it")
	}
	if got := pk.Claim("b", &b, 10); !slices.Equal(got, []int{3}) {
		t.Fatalf("b claims %v after a released 3, want [3]", got)
	}
	// a's own offers still hold 4 (claimed by b: deferred) and 3 (b's now).
	if got := pk.Claim("a", &a, 10); len(got) != 0 {
		t.Fatalf("a claims %v, want nothing: every unit left is b's", got)
	}
	pk.Done(3, false)
	pk.Done(4, false)
	pk.Done(5, false)
	held[3], held[4], held[5] = true, true, true
	if pk.InFlight() != 2 {
		t.Fatalf("%d in flight, want 2 (0 and 1)", pk.InFlight())
	}
}

func TestPickerLimit(t *testing.T) {
	pk := NewPicker[string](func(int) bool { return false }, 4)
	var a, b Offers
	pk.Offer(&a, []int{0, 1, 2, 3, 4, 5})
	pk.Offer(&b, []int{6, 7, 8})
	if got := pk.Claim("a", &a, 3); len(got) != 3 {
		t.Fatalf("a got %v", got)
	}
	if got := pk.Claim("b", &b, 3); len(got) != 1 {
		t.Fatalf("b got %v, want 1: the limit is 4 in flight", got)
	}
	pk.Done(0, false)
	if got := pk.Claim("b", &b, 3); len(got) != 1 {
		t.Fatalf("b got %v, want 1 after one arrived", got)
	}
}

func TestPickerDrop(t *testing.T) {
	pk := NewPicker[string](func(int) bool { return false }, 10)
	var a, b Offers
	pk.Offer(&a, []int{0})
	pk.Offer(&b, []int{0})
	pk.Claim("a", &a, 1)
	if got := pk.Claim("b", &b, 1); len(got) != 0 {
		t.Fatalf("b got %v while a holds 0", got)
	}
	pk.Drop("a", 0) // a lacks it after all
	if got := pk.Claim("b", &b, 1); !slices.Equal(got, []int{0}) {
		t.Fatalf("b got %v, want [0]", got)
	}
	if got := pk.Claim("a", &a, 1); len(got) != 0 {
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
		pk := NewPicker[string](func(i int) bool { return held[i] }, 1+r.IntN(20))
		ids := []string{"a", "b", "c", "d"}
		offs := make([]Offers, len(ids))
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
			pk.Offer(&offs[s], units)
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
			got := pk.Claim(ids[s], &offs[s], 1+r.IntN(4))
			for _, i := range got {
				if owner := pk.Claimed[i]; owner != ids[s] {
					t.Fatalf("seed %d: unit %d claimed by %s, handed to %s", seed, i, owner, ids[s])
				}
				switch {
				case lacks[s][i]:
					pk.Drop(ids[s], i)
				case r.IntN(4) == 0:
					pk.Unclaim(ids[s], &offs[s], []int{i})
				default:
					held[i] = true
					pk.Done(i, false)
				}
			}
			if step == 99999 {
				t.Fatalf("seed %d: not every unit delivered", seed)
			}
		}
		if pk.InFlight() != 0 {
			t.Fatalf("seed %d: %d still claimed", seed, pk.InFlight())
		}
	}
}

// TestWaitsAllowed: a wait is bounded by the cap until MinWaits waits
// are known, then by StallFactor times their P99, at least the floor (and
// StallFloor), at most the cap; a slow source's long waits, once they are
// more than a hundredth of the waits, raise the P99 to themselves.
func TestWaitsAllowed(t *testing.T) {
	var w Waits
	limit := 10 * time.Second
	if got := w.Allowed(0, limit); got != limit {
		t.Fatalf("no wait known: %v", got)
	}
	for range 100 {
		w.Add(10 * time.Millisecond)
	}
	if got := w.Allowed(0, limit); got != 40*time.Millisecond {
		t.Fatalf("10 ms waits: %v, want 40ms", got)
	}
	if got := w.Allowed(time.Second, limit); got != time.Second {
		t.Fatalf("floor 1s: %v", got)
	}
	if got := w.Allowed(0, 30*time.Millisecond); got != 30*time.Millisecond {
		t.Fatalf("cap 30ms: %v", got)
	}
	var q Waits
	for range 100 {
		q.Add(time.Microsecond)
	}
	if got := q.Allowed(0, limit); got != StallFloor {
		t.Fatalf("1 µs waits: %v, want StallFloor", got)
	}
	// One slow source among ten fast ones: its waits are a tenth of them.
	for i := range WaitSamples {
		if i%10 == 0 {
			w.Add(100 * time.Millisecond)
		} else {
			w.Add(10 * time.Millisecond)
		}
	}
	if p, _ := w.P99(); p != 100*time.Millisecond {
		t.Fatalf("P99 with a slow source: %v, want its 100ms", p)
	}
}

// TestPickerRarest: with BlockRarest a source is asked first for the units
// the fewest sources offered; ties come in random order, and the counts
// follow the sources' offers as they change and as sources leave.
func TestPickerRarest(t *testing.T) {
	tests := []struct {
		name   string
		offers [][]int // per source; source 0 claims
		n      int
		want   []int // the units claimed, in any order
	}{
		{"only the claimer has them", [][]int{{0, 1, 2, 3, 4, 5}, {0, 1, 2}, {0, 1}}, 3, []int{3, 4, 5}},
		{"then the next rarest", [][]int{{0, 1, 2, 3, 4, 5}, {0, 1, 2}, {0, 1}}, 4, []int{2, 3, 4, 5}},
		{"all as rare: any", [][]int{{7, 8, 9}, {7, 8, 9}}, 3, []int{7, 8, 9}},
		{"one source", [][]int{{4, 1, 3}}, 2, nil}, // any two of them
		{"held units skipped", [][]int{{0, 1, 10, 11}, {0, 1}}, 2, []int{11, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pk := NewPicker[string](func(i int) bool { return i == 10 }, 100)
			pk.SetChoice(BlockRarest, rand.New(rand.NewPCG(1, 2)))
			offs := make([]Offers, len(tc.offers))
			for s, u := range tc.offers {
				pk.Offer(&offs[s], slices.Clone(u))
			}
			got := pk.Claim("a", &offs[0], tc.n)
			if len(got) != tc.n {
				t.Fatalf("claimed %v, want %d units", got, tc.n)
			}
			if tc.want == nil {
				return
			}
			if tc.name == "held units skipped" {
				// 11 (rarity 1) first, then 0 or 1 (rarity 2): 10 is held.
				if got[0] != 11 || (got[1] != 0 && got[1] != 1) {
					t.Fatalf("claimed %v, want 11 then 0 or 1", got)
				}
				return
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("claimed %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("ties in random order", func(t *testing.T) {
		firsts := map[int]bool{}
		for seed := range uint64(40) {
			pk := NewPicker[string](func(int) bool { return false }, 100)
			pk.SetChoice(BlockRarest, rand.New(rand.NewPCG(seed, 3)))
			var a Offers
			pk.Offer(&a, []int{0, 1, 2, 3, 4, 5, 6, 7})
			firsts[pk.Claim("a", &a, 1)[0]] = true
		}
		if len(firsts) < 4 {
			t.Fatalf("first claims over 40 seeds: %v; ties should be broken at random", firsts)
		}
	})
	t.Run("counts follow offers", func(t *testing.T) {
		pk := NewPicker[string](func(int) bool { return false }, 100)
		pk.SetChoice(BlockRarest, nil)
		var a, b Offers
		pk.Offer(&a, []int{0, 1})
		pk.Offer(&b, []int{1, 2})
		if pk.Rarity(1) != 2 || pk.Rarity(0) != 1 || pk.Rarity(3) != 0 {
			t.Fatalf("rarities %d %d %d, want 2 1 0", pk.Rarity(1), pk.Rarity(0), pk.Rarity(3))
		}
		pk.Offer(&b, []int{2, 3}) // b reconciled again
		if pk.Rarity(1) != 1 || pk.Rarity(3) != 1 {
			t.Fatalf("after b's new offer: rarities of 1 and 3 are %d %d, want 1 1", pk.Rarity(1), pk.Rarity(3))
		}
		pk.Forget(&b) // b left
		if pk.Rarity(2) != 0 || len(pk.count) != 2 {
			t.Fatalf("after b left: count %v, want 0 and 1 once each", pk.count)
		}
	})
}

// TestPickerRarestProperty: with BlockRarest, random offers, stalls and
// lacks, no unit is claimed twice, every offered unit is delivered, the
// counts always equal the sources' current offers, and every claim takes
// units no rarer-than-needed: none left in the claimer's queue (free and
// needed) is rarer than a unit it was given.
func TestPickerRarestProperty(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 11))
		n := 1 + r.IntN(60)
		held := make([]bool, n)
		pk := NewPicker[string](func(i int) bool { return held[i] }, 1+r.IntN(20))
		pk.SetChoice(BlockRarest, rand.New(rand.NewPCG(seed, 12)))
		ids := []string{"a", "b", "c", "d"}
		offs := make([]Offers, len(ids))
		current := make([][]int, len(ids))
		reoffer := func(s int) {
			var units []int
			for i := range n {
				if !held[i] && (r.IntN(3) > 0 || s == 0) {
					units = append(units, i)
				}
			}
			current[s] = slices.Clone(units)
			pk.Offer(&offs[s], units)
		}
		for s := range ids {
			reoffer(s)
		}
		for step := 0; ; step++ {
			if !slices.Contains(held, false) {
				break
			}
			if step == 100000 {
				t.Fatalf("seed %d: not every unit delivered", seed)
			}
			s := r.IntN(len(ids))
			if r.IntN(20) == 0 {
				reoffer(s)
			}
			want := map[int]int32{}
			for _, u := range current {
				for _, i := range u {
					want[i]++
				}
			}
			if !maps.Equal(want, pk.count) {
				t.Fatalf("seed %d: counts %v, want %v", seed, pk.count, want)
			}
			got := pk.Claim(ids[s], &offs[s], 1+r.IntN(4))
			worst := -1
			for _, i := range got {
				if owner := pk.Claimed[i]; owner != ids[s] {
					t.Fatalf("seed %d: unit %d claimed by %s, handed to %s", seed, i, owner, ids[s])
				}
				worst = max(worst, pk.Rarity(i))
			}
			if len(got) > 0 {
				for _, i := range offs[s].Queue {
					if _, c := pk.Claimed[i]; !c && !held[i] && pk.Rarity(i) < worst {
						t.Fatalf("seed %d: %s was given %v (rarity up to %d) while %d (rarity %d) waited", seed, ids[s], got, worst, i, pk.Rarity(i))
					}
				}
			}
			for _, i := range got {
				switch {
				case r.IntN(4) == 0:
					pk.Unclaim(ids[s], &offs[s], []int{i})
				default:
					held[i] = true
					pk.Done(i, false)
				}
			}
		}
		if pk.InFlight() != 0 {
			t.Fatalf("seed %d: %d still claimed", seed, pk.InFlight())
		}
	}
}

// TestPickerSparesSeed: while one source is full (the seed), BlockRarest
// gives it only units no other source offered; once a second source is full,
// none is spared; BlockInOrder never spares.
func TestPickerSparesSeed(t *testing.T) {
	pk := NewPicker[string](func(int) bool { return false }, 100)
	pk.SetChoice(BlockRarest, nil)
	var seed, a, b Offers
	pk.OfferFrom(&seed, []int{0, 1, 2, 3}, true)
	pk.OfferFrom(&a, []int{0, 1}, false)
	got := pk.Claim("seed", &seed, 4)
	slices.Sort(got)
	if !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("the seed was given %v, want [2 3]: a offered 0 and 1", got)
	}
	pk.Releases++ // another source let go of something
	if pk.Claimable(&seed) {
		t.Fatal("the seed's spared units 0 and 1 count as claimable")
	}
	pk.OfferFrom(&b, []int{0, 1, 2, 3}, true) // a second full source
	pk.OfferFrom(&seed, []int{0, 1}, true)    // the seed reconciles again
	if got := pk.Claim("seed", &seed, 4); len(got) != 2 {
		t.Fatalf("with two full sources the seed was given %v, want 0 and 1", got)
	}
	in := NewPicker[string](func(int) bool { return false }, 100)
	var s2, a2 Offers
	in.OfferFrom(&s2, []int{0, 1}, true)
	in.OfferFrom(&a2, []int{0, 1}, false)
	if got := in.Claim("seed", &s2, 2); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("in order: the seed was given %v, want [0 1]", got)
	}
}

// TestPickerEndgame: once the units a fetch lacks are all claimed and few, a
// source that offered one claimed by another is given it too, once; the
// first copy ends both claims, and a first claimant that lets go hands its
// claim to the second.
func TestPickerEndgame(t *testing.T) {
	held := map[int]bool{}
	pk := NewPicker[string](func(i int) bool { return held[i] }, 100)
	var a, b, c Offers
	pk.Offer(&a, []int{0, 1})
	pk.Offer(&b, []int{0, 1})
	pk.Offer(&c, []int{1})
	if got := pk.Endgame("b", &b, 2, 2, nil); len(got) != 0 {
		t.Fatalf("endgame before everything is claimed gave %v", got)
	}
	pk.Claim("a", &a, 2)
	if got := pk.Endgame("b", &b, 2, EndgameBlocks+1, nil); len(got) != 0 {
		t.Fatalf("endgame with too many units missing gave %v", got)
	}
	if got := pk.Endgame("a", &a, 2, 2, nil); len(got) != 0 {
		t.Fatalf("a was given its own claims again: %v", got)
	}
	if got := pk.Endgame("b", &b, 2, 2, func(c string) bool { return c != "a" }); len(got) != 0 {
		t.Fatalf("b was given claims of a, a claimant it does not outpace: %v", got)
	}
	got := pk.Endgame("b", &b, 2, 2, func(c string) bool { return c == "a" })
	if slices.Sort(got); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("b's endgame: %v, want [0 1]", got)
	}
	if got := pk.Endgame("c", &c, 2, 2, nil); len(got) != 0 {
		t.Fatalf("a third claim on 1: %v", got)
	}
	// 0 arrives from a: both claims end.
	held[0] = true
	pk.Done(0, false)
	if _, ok := pk.second[0]; ok || pk.InFlight() != 1 {
		t.Fatalf("after 0 arrived: second %v, %d in flight", pk.second, pk.InFlight())
	}
	// a stalls on 1: b, which asked for it too, holds the claim now.
	pk.Unclaim("a", &a, []int{1})
	if pk.Claimed[1] != "b" || len(pk.second) != 0 {
		t.Fatalf("after a let go of 1: claimed %v, second %v", pk.Claimed, pk.second)
	}
	if pk.Redundant != 2 {
		t.Fatalf("%d second claims counted, want 2", pk.Redundant)
	}
}

// TestPickerPrefersDirect: a source reached through a relay only is not
// given the units a direct source offers, only the others; once the direct
// source leaves and a release comes, it is given the rest.
func TestPickerPrefersDirect(t *testing.T) {
	pk := NewPicker[string](func(int) bool { return false }, 100)
	var direct, relayed Offers
	relayed.Relayed = true
	pk.OfferFrom(&direct, []int{0, 1, 2, 3}, false)
	pk.OfferFrom(&relayed, []int{0, 1, 2, 3, 4, 5}, false)
	got := pk.Claim("relayed", &relayed, 10)
	slices.Sort(got)
	if !slices.Equal(got, []int{4, 5}) {
		t.Fatalf("the relayed source claimed %v, want only [4 5], which no direct source offers", got)
	}
	if got := pk.Claim("direct", &direct, 10); len(got) != 4 {
		t.Fatalf("the direct source claimed %v, want 0-3", got)
	}
	for _, i := range []int{0, 1} {
		pk.Unclaim("direct", &direct, []int{i})
	}
	pk.Forget(&direct)
	pk.Releases++
	if !pk.Claimable(&relayed) {
		t.Fatal("with the direct source gone, the relayed one has nothing claimable")
	}
	got = pk.Claim("relayed", &relayed, 10)
	slices.Sort(got)
	if !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("after the direct source left, the relayed one claimed %v, want [0 1]", got)
	}
}

// TestPickerSourceLeaves: units a spared seed or a relayed source deferred
// because another source offered them come back to it once that source
// leaves (Forget) without ever sending them, with no other release: else a
// fetch whose partial sources all left waits on the seed for nothing (bench
// swarm --leave --super-seed=false: the last fetcher gave up on its last
// blocks with the seed connected).
func TestPickerSourceLeaves(t *testing.T) {
	pk := NewPicker[string](func(int) bool { return false }, 100)
	pk.SetChoice(BlockRarest, nil)
	var seed, a, relayed, direct Offers
	relayed.Relayed = true
	pk.OfferFrom(&seed, []int{0, 1, 2, 3}, true)
	pk.OfferFrom(&a, []int{0, 1}, false)
	pk.OfferFrom(&direct, []int{4}, false)
	pk.OfferFrom(&relayed, []int{4}, false)
	if got := pk.Claim("seed", &seed, 4); len(got) != 2 {
		t.Fatalf("the seed was given %v, want [2 3]", got)
	}
	if got := pk.Claim("relayed", &relayed, 4); len(got) != 0 {
		t.Fatalf("the relayed source was given %v, want nothing", got)
	}
	pk.Forget(&a)
	if !pk.Claimable(&seed) {
		t.Fatal("a left: the seed has nothing claimable")
	}
	got := pk.Claim("seed", &seed, 4)
	if slices.Sort(got); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("after a left the seed was given %v, want [0 1]", got)
	}
	pk.Forget(&direct)
	if got := pk.Claim("relayed", &relayed, 4); !slices.Equal(got, []int{4}) {
		t.Fatalf("after the direct source left the relayed one was given %v, want [4]", got)
	}
}

// TestPickerAway: a source that answered busy (or failed) spares neither the
// seed nor holds back a relayed source: the units only it offered besides
// them are theirs while it is away, and it counts again once back.
func TestPickerAway(t *testing.T) {
	pk := NewPicker[string](func(int) bool { return false }, 100)
	pk.SetChoice(BlockRarest, nil)
	var seed, a, relayed Offers
	relayed.Relayed = true
	pk.OfferFrom(&seed, []int{0, 1, 2, 3}, true)
	pk.OfferFrom(&a, []int{0, 1, 4}, false)
	pk.OfferFrom(&relayed, []int{4}, false)
	if got := pk.Claim("seed", &seed, 4); len(got) != 2 {
		t.Fatalf("the seed was given %v, want [2 3]", got)
	}
	if got := pk.Claim("relayed", &relayed, 4); len(got) != 0 {
		t.Fatalf("the relayed source was given %v, want nothing", got)
	}
	if !pk.Away(&a, true) {
		t.Fatal("a is away, and no unit came free")
	}
	if pk.Away(&a, true) {
		t.Fatal("a second Away(true) freed units again")
	}
	if !pk.Claimable(&seed) {
		t.Fatal("a is busy: the seed has nothing claimable")
	}
	got := pk.Claim("seed", &seed, 1)
	if !slices.Equal(got, []int{0}) && !slices.Equal(got, []int{1}) {
		t.Fatalf("with a away the seed was given %v, want 0 or 1", got)
	}
	if got := pk.Claim("relayed", &relayed, 4); !slices.Equal(got, []int{4}) {
		t.Fatalf("with a away the relayed source was given %v, want [4]", got)
	}
	if pk.Away(&a, false) {
		t.Fatal("a came back, and units came free")
	}
	if got := pk.Claim("seed", &seed, 4); len(got) != 0 {
		t.Fatalf("with a back the seed was given %v, want nothing (a offers the last unit too)", got)
	}
	pk.Forget(&a) // the counts stay consistent: a's offers are taken out once
	if pk.partial[0] != 0 || pk.partial[1] != 0 || pk.direct[4] != 0 {
		t.Fatalf("after a left: partial %v, direct %v", pk.partial, pk.direct)
	}
}
