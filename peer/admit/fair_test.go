package admit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestFairPool: a peer alone may take everything; once the pool is full, a
// newcomer under its share evicts the oldest holding of the largest holder,
// and a holder over its share is refused (with a done context) rather than
// taking anyone's room.
func TestFairPool(t *testing.T) {
	fp := NewFairPool(8)
	var evicted []string
	take := func(key string, n int64) (*Holding, error) {
		var h *Holding
		name := fmt.Sprintf("%s%d", key, fp.UsedBy(key))
		h, err := fp.Acquire(alreadyDone, key, n, func() { evicted = append(evicted, name) })
		return h, err
	}
	var a []*Holding
	for i := range 8 {
		h, err := take("a", 1)
		if err != nil {
			t.Fatalf("a alone, holding %d: %v", i, err)
		}
		a = append(a, h)
	}
	if _, err := take("a", 1); err == nil {
		t.Fatal("a took more than the capacity")
	}
	// b is under its share (4 of 8 with two keys): it evicts a's oldest.
	for i := range 4 {
		if _, err := take("b", 1); err != nil {
			t.Fatalf("b's holding %d: %v", i, err)
		}
	}
	if got := fmt.Sprint(evicted); got != "[a0 a1 a2 a3]" {
		t.Fatalf("evicted %s, want a's four oldest", got)
	}
	// b at its share: no more eviction for it.
	if _, err := take("b", 1); err == nil {
		t.Fatal("b took beyond its share")
	}
	// A third key's share is 8/3 = 2: it evicts from the largest (a or b).
	for i := range 2 {
		if _, err := take("c", 1); err != nil {
			t.Fatalf("c's holding %d: %v", i, err)
		}
	}
	if fp.UsedBy("a")+fp.UsedBy("b")+fp.UsedBy("c") != 8 || fp.UsedBy("c") != 2 {
		t.Fatalf("a %d, b %d, c %d", fp.UsedBy("a"), fp.UsedBy("b"), fp.UsedBy("c"))
	}
	// Released twice counts once; evicted holdings were released already.
	for _, h := range a {
		h.Release()
		h.Release()
	}
	if fp.UsedBy("a") != 0 {
		t.Fatalf("a holds %d after releasing everything", fp.UsedBy("a"))
	}
}

// TestFairPoolWaits: a holder over its share waits for room and gets it when
// another releases, within its context.
func TestFairPoolWaits(t *testing.T) {
	fp := NewFairPool(2)
	h1, _ := fp.Acquire(alreadyDone, "a", 1, nil)
	h2, _ := fp.Acquire(alreadyDone, "a", 1, nil)
	go func() {
		time.Sleep(20 * time.Millisecond)
		h1.Release()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h3, err := fp.Acquire(ctx, "a", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	h2.Release()
	h3.Release()
	if fp.used != 0 || len(fp.keys) != 0 {
		t.Fatalf("used %d by %d keys after every release", fp.used, len(fp.keys))
	}
}

// TestFairPoolProperty: over random acquires and releases by several keys,
// the pool never holds more than its capacity, its count matches its
// holdings, and a key under its fair share is never refused while a key over
// its share holds evictable room.
func TestFairPoolProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		capacity := int64(1 + r.IntN(20))
		fp := NewFairPool(capacity)
		var live []*Holding
		for range 300 {
			if len(live) > 0 && r.IntN(3) == 0 {
				i := r.IntN(len(live))
				live[i].Release()
				live = append(live[:i], live[i+1:]...)
				continue
			}
			key := fmt.Sprint("k", r.IntN(5))
			n := int64(1 + r.IntN(3))
			fp.mu.Lock()
			share := fp.shareLocked(key)
			mine := int64(0)
			if pk := fp.keys[key]; pk != nil {
				mine = pk.used
			}
			overShare := false
			for k, pk := range fp.keys {
				if k != key && pk.used > share {
					overShare = true
				}
			}
			fp.mu.Unlock()
			h, err := fp.Acquire(alreadyDone, key, n, func() {})
			if err == nil {
				live = append(live, h)
			} else if mine+n <= share && overShare && n <= capacity {
				t.Fatalf("round %d: %s holding %d under its share %d was refused %d while another was over", round, key, mine, share, n)
			}
			// Drop the evicted ones from live.
			kept := live[:0]
			for _, x := range live {
				if !x.done {
					kept = append(kept, x)
				}
			}
			live = kept
			var sum int64
			for _, x := range live {
				sum += x.n
			}
			if fp.used > capacity || fp.used != sum {
				t.Fatalf("round %d: pool counts %d of %d, holdings %d", round, fp.used, capacity, sum)
			}
		}
	}
}

// alreadyDone is a context that has ended: an acquire with it takes room
// only if there is some (or may be made) at once.
var alreadyDone = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
