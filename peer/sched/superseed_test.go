package sched

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func allBlocks(n int) []uint32 {
	idx := make([]uint32, n)
	for i := range idx {
		idx[i] = uint32(i)
	}
	return idx
}

// TestSuperSeedFirstCopies checks that a super-seed offers every block to
// one peer before offering any to a second, offers nothing while the rest
// are out, and then the least sent.
func TestSuperSeedFirstCopies(t *testing.T) {
	const n = 10
	now := time.Unix(1000, 0)
	ss := NewSuperSeed[string](n, SuperSeedHold, func() time.Time { return now })
	seen := map[uint32]int{}
	for range 3 { // 4 + 4 + 2 blocks
		got := ss.Trim(allBlocks(n))
		if !slices.IsSorted(got) || len(got) > SuperSeedOffer || len(got) == 0 {
			t.Fatalf("offer %v: want 1..%d increasing blocks", got, SuperSeedOffer)
		}
		for _, i := range got {
			seen[i]++
		}
	}
	if len(seen) != n {
		t.Fatalf("three offers covered %d distinct blocks, want all %d: %v", len(seen), n, seen)
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("block %d offered %d times before every block was offered once", i, c)
		}
	}
	if got := ss.Trim(allBlocks(n)); len(got) != 0 {
		t.Fatalf("offered %v while every block is out and none was sent", got)
	}
	// The offers expire; block 3 is being sent, the others not asked for.
	now = now.Add(SuperSeedHold)
	ss.Ask("p", []int{3})
	for range 3 {
		if got := ss.Trim(allBlocks(n)); slices.Contains(got, 3) {
			t.Fatalf("offered block 3 while it is being sent: %v", got)
		}
	}
	ss.NoteSent("p", 3)
	ss.Done("p", []int{3})
	// Until every block was sent once, only unsent ones are offered.
	now = now.Add(SuperSeedHold)
	for i := range n - 1 {
		if i != 3 {
			ss.NoteSent("p", i)
		}
	}
	if got := ss.Trim(allBlocks(n)); !slices.Equal(got, []uint32{n - 1}) {
		t.Fatalf("offer %v, want only the unsent block %d", got, n-1)
	}
	ss.NoteSent("p", n-1)
	ss.NoteSent("p", n-1)
	// Every block sent: the least sent first (block n-1, sent twice, last).
	now = now.Add(SuperSeedHold)
	got := ss.Trim(allBlocks(n))
	if len(got) != SuperSeedOffer || slices.Contains(got, n-1) {
		t.Fatalf("offer %v, want %d blocks sent once", got, SuperSeedOffer)
	}
	// Only what the fetcher lacks is offered.
	now = now.Add(SuperSeedHold)
	if got := ss.Trim([]uint32{n - 1}); !slices.Equal(got, []uint32{n - 1}) {
		t.Fatalf("offer %v of a fetcher lacking block %d only", got, n-1)
	}
	if got := ss.Trim([]uint32{n + 5}); len(got) != 0 {
		t.Fatalf("offered %v out of range", got)
	}
}

// TestSuperSeedSendsOnce runs a super-seed with fetchers that ask for what
// they are offered: no block is sent twice before every block is sent once.
func TestSuperSeedSendsOnce(t *testing.T) {
	const n, fetchers = 64, 20
	now := time.Unix(1000, 0)
	ss := NewSuperSeed[string](n, SuperSeedHold, func() time.Time { return now })
	sent := 0
	for round := 0; sent < n; round++ {
		if round > 1000 {
			t.Fatalf("only %d of %d blocks sent after 1000 rounds", sent, n)
		}
		for range fetchers {
			offer := ss.Trim(allBlocks(n))
			asked := make([]int, len(offer))
			for k, i := range offer {
				asked[k] = int(i)
			}
			ss.Ask("p", asked)
			for _, i := range asked {
				if ss.sent[i] > 0 && ss.unsent > 0 {
					t.Fatalf("block %d sent twice while %d blocks were never sent", i, ss.unsent)
				}
				if ss.sent[i] == 0 {
					sent++
				}
				ss.NoteSent("p", i)
			}
			ss.Done("p", asked)
		}
		now = now.Add(100 * time.Millisecond)
	}
}

// TestSuperSeedWatchers: a super-seed deals its blocks out over its
// watchers: each holds at most SuperOpen offers it has not asked for (a
// lone watcher more, SuperOpen more than it was sent), no
// block is offered to two watchers or sent twice while some block was never
// sent, a watcher that asks gets the next offer at once, one that neither
// asks nor is sent a block for superSeedHold loses its offers, and one that
// tells the seed it got a block elsewhere is not offered it.
func TestSuperSeedWatchers(t *testing.T) {
	const n, watchers = 64, 10
	now := time.Unix(1000, 0)
	ss := NewSuperSeed[string](n, SuperSeedHold, func() time.Time { return now })
	ws := make([]*SuperWatch[string], watchers)
	open := map[int]int{} // block -> watcher it is offered to
	for k := range ws {
		var first []uint32
		ws[k], first = ss.Watch(string(fmt.Sprint("w", k)), allBlocks(n))
		if want := SuperOpen; len(first) != want {
			t.Fatalf("watcher %d was first offered %v, want %d blocks", k, first, want)
		}
		for _, i := range first {
			if w, ok := open[int(i)]; ok {
				t.Fatalf("block %d offered to watchers %d and %d", i, w, k)
			}
			open[int(i)] = k
		}
	}
	sent := make([]int, n)
	for round := 0; ; round++ {
		if round > 1000 {
			t.Fatal("blocks left unsent after 1000 rounds")
		}
		unsent := 0
		for _, c := range sent {
			if c == 0 {
				unsent++
			}
		}
		if unsent == 0 {
			break
		}
		// Each watcher asks for one of its offers; the seed sends it.
		for k, w := range ws {
			var i int
			var ok bool
			for b, o := range open {
				if o == k {
					i, ok = b, true
					break
				}
			}
			if !ok {
				continue
			}
			delete(open, i)
			id := string(fmt.Sprint("w", k))
			ss.Ask(id, []int{i})
			if sent[i] > 0 {
				t.Fatalf("block %d sent twice while %d were never sent", i, unsent)
			}
			sent[i]++
			ss.NoteSent(id, i)
			ss.Done(id, []int{i})
			for _, b := range ss.Take(w) {
				if o, dup := open[b]; dup {
					t.Fatalf("block %d offered to watchers %d and %d", b, o, k)
				}
				open[b] = k
			}
			if got := len(w.open); got > SuperOpen {
				t.Fatalf("watcher %d holds %d offers", k, got)
			}
		}
	}
	// A watcher idle for superSeedHold loses its offers; one that got a
	// block elsewhere is not offered it.
	w0 := ws[0]
	ss.Pump()
	if len(w0.open) == 0 {
		t.Fatal("watcher 0 holds no offer after every block was sent once")
	}
	now = now.Add(SuperSeedHold)
	held := make([]int, 0, n)
	for i := range n {
		held = append(held, i)
	}
	ss.Has(ws[1], held)
	ss.Pump()
	for _, w := range ws {
		for i, at := range w.open {
			if !at.Equal(now) {
				t.Errorf("watcher %s still holds offer %d from %v after being idle", w.id, i, at)
			}
		}
	}
	if len(ws[1].open) != 0 {
		t.Errorf("a watcher that holds every block is offered %v", ws[1].open)
	}
	ss.Unwatch(w0)
	for i, c := range ss.offers {
		want := int32(0)
		for _, w := range ws[1:] {
			if _, ok := w.open[i]; ok {
				want++
			}
		}
		if c != want {
			t.Fatalf("block %d counted offered %d times, held by %d watchers", i, c, want)
		}
	}
}

// TestSuperSeedLone: a lone watcher's open offers grow with the blocks it
// was sent (SuperOpen more, up to SuperOpenAlone), so a lone fetch keeps
// its window full; once a second watcher comes, the first's offers beyond
// SuperOpen go back and are offered to the second.
func TestSuperSeedLone(t *testing.T) {
	const n = 256
	now := time.Unix(1000, 0)
	ss := NewSuperSeed[string](n, SuperSeedHold, func() time.Time { return now })
	w, first := ss.Watch("a", allBlocks(n))
	if len(first) != SuperOpen {
		t.Fatalf("a lone watcher was first offered %d blocks, want %d", len(first), SuperOpen)
	}
	offered := first
	for sent := 1; sent <= 40; sent++ {
		i := int(offered[0])
		offered = offered[1:]
		ss.Ask("a", []int{i})
		ss.NoteSent("a", i)
		ss.Done("a", []int{i})
		for _, b := range ss.Take(w) {
			offered = append(offered, uint32(b))
		}
		if want := min(SuperOpenAlone, SuperOpen+sent); len(w.open) != want {
			t.Fatalf("after %d blocks sent, the lone watcher holds %d offers, want %d", sent, len(w.open), want)
		}
	}
	w2, first2 := ss.Watch("b", allBlocks(n))
	if len(w.open) != SuperOpen {
		t.Fatalf("the first watcher holds %d offers once a second watches, want %d", len(w.open), SuperOpen)
	}
	if len(first2) != SuperOpen || len(w2.open) != SuperOpen {
		t.Fatalf("the second watcher was offered %d blocks (holds %d), want %d", len(first2), len(w2.open), SuperOpen)
	}
	for _, i := range first2 {
		if _, dup := w.open[int(i)]; dup {
			t.Fatalf("block %d offered to both watchers", i)
		}
	}
}

// BenchmarkSuperSeedLone deals out a file of 65,536 blocks (1 GiB in 16 KiB
// blocks) to a lone watcher that asks for each offer as it comes: the
// seed's whole bookkeeping for one fetch.
func BenchmarkSuperSeedLone(b *testing.B) {
	const n = 1 << 16
	now := time.Unix(1000, 0)
	for b.Loop() {
		ss := NewSuperSeed[string](n, SuperSeedHold, func() time.Time { return now })
		w, offered := ss.Watch("a", allBlocks(n))
		queue := make([]int, 0, SuperOpenAlone)
		for _, i := range offered {
			queue = append(queue, int(i))
		}
		for sent := 0; len(queue) > 0; sent++ {
			i := queue[0]
			queue = queue[1:]
			ss.Ask("a", []int{i})
			ss.NoteSent("a", i)
			ss.Done("a", []int{i})
			queue = append(queue, ss.Take(w)...)
		}
	}
}

// TestSuperSeedLacksOnlySent: a watcher that lacks only a block another
// peer asked for (a fetch killed since), while most blocks were never
// sent (the watcher took them from its own files), is offered that block
// once it gained nothing for the hold time, and not before (an update's
// fetchers take a block sent once from each other); one that also lacks a
// never-sent block offered to another waits for it rather than be sent a
// block twice.
func TestSuperSeedLacksOnlySent(t *testing.T) {
	now := time.Unix(1000, 0)
	ss := NewSuperSeed[string](8, SuperSeedHold, func() time.Time { return now })
	ss.Ask("gone", []int{3})
	w, first := ss.Watch("resumed", []uint32{3})
	if len(first) != 0 {
		t.Fatalf("a watcher lacking only block 3, sent before, was offered %v at once", first)
	}
	now = now.Add(SuperSeedHold / 2)
	ss.Pump()
	if got := ss.Take(w); len(got) != 0 {
		t.Fatalf("offered %v after half the hold time", got)
	}
	now = now.Add(SuperSeedHold / 2)
	ss.Pump()
	if got := ss.Take(w); len(got) != 1 || got[0] != 3 {
		t.Fatalf("a watcher lacking only block 3 that gained nothing for the hold time was offered %v", got)
	}
	// A watcher that gains blocks elsewhere is not sent one twice.
	ss.Ask("gone", []int{4})
	w2, _ := ss.Watch("trading", []uint32{4, 6})
	ss.Ask("gone", []int{6})
	for range 3 {
		now = now.Add(SuperSeedHold / 2)
		ss.Has(w2, []int{6})
		if got := ss.Take(w2); len(got) != 0 {
			t.Fatalf("a watcher gaining blocks elsewhere was offered %v", got)
		}
	}
	ss2 := NewSuperSeed[string](8, SuperSeedHold, func() time.Time { return now })
	ss2.Ask("a", []int{3})
	ss2.NoteSent("a", 3)
	ss2.Done("a", []int{3})
	_, firstB := ss2.Watch("b", []uint32{5}) // block 5 is offered to b
	if len(firstB) != 1 || firstB[0] != 5 {
		t.Fatalf("b was offered %v, want [5]", firstB)
	}
	if _, first := ss2.Watch("c", []uint32{3, 5}); len(first) != 0 {
		t.Fatalf("c, lacking sent block 3 and unsent block 5 offered to b, was offered %v", first)
	}
}
