package swarm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// FuzzDecodeAdopt: whatever an orphan sends, the request decodes to at
// least one and at most max blocks, all below the block count and of one
// stripe, or to an error; never a panic.
func FuzzDecodeAdopt(f *testing.F) {
	f.Add(wire.AppendWant(nil, []int{1, 5, 9}))
	f.Add(wire.AppendWant(nil, []int{1, 2}))
	f.Add(wire.AppendWant(nil, nil))
	f.Add(wire.AppendWant(nil, []int{1000}))
	f.Add([]byte{wire.TypeWant, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, in []byte) {
		const max, blocks, stripes = 8, 100, 4
		s, lacks, err := decodeAdopt(in, max, blocks, func(i int) int { return i % stripes })
		if err != nil {
			return
		}
		if len(lacks) == 0 || len(lacks) > max || s < 0 || s >= stripes {
			t.Fatalf("stripe %d, %d blocks", s, len(lacks))
		}
		for _, i := range lacks {
			if i < 0 || i >= blocks || i%stripes != s {
				t.Fatalf("block %d in a request of stripe %d", i, s)
			}
		}
	})
}

// TestDecodeAdopt checks decodeAdopt's answers to requests good and bad.
func TestDecodeAdopt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    []byte
		s     int
		lacks []int
		ok    bool
	}{
		{"one stripe", wire.AppendWant(nil, []int{1, 5, 9}), 1, []int{1, 5, 9}, true},
		{"two stripes", wire.AppendWant(nil, []int{1, 2}), 0, nil, false},
		{"empty", wire.AppendWant(nil, nil), 0, nil, false},
		{"out of range", wire.AppendWant(nil, []int{100}), 0, nil, false},
		{"too many", wire.AppendWant(nil, []int{0, 4, 8, 12, 16, 20, 24, 28, 32}), 0, nil, false},
		{"a have frame", wire.AppendHave(nil, []int{1}), 0, nil, false},
	} {
		s, lacks, err := decodeAdopt(tc.in, 8, 100, func(i int) int { return i % 4 })
		if (err == nil) != tc.ok || (tc.ok && (s != tc.s || !slices.Equal(lacks, tc.lacks))) {
			t.Errorf("%s: stripe %d, blocks %v, %v", tc.name, s, lacks, err)
		}
	}
}

// TestAdoptee checks how a peer answers adoption requests: it adopts the
// first two orphans of a stripe (a seed one), sends the next ones on to
// those that asked before, two to each (a binary tree), adopts one that
// asks again (what it was given failed) up to four in all, sends no more
// orphans to a peer one complained of (it asked again after being sent on
// to it), cuts an adoptee two complained of, and refuses when it does not
// get the stripe itself; a seed asked by two orphans of a stripe stops
// pushing it to the stripe's root.
func TestAdoptee(t *testing.T) {
	dir := t.TempDir()
	m := manifestOf(t, writeRandomFile(t, dir, "data.bin", 64<<10, 3))
	c := emptyContent(t, m, filepath.Join(dir, "out"))
	p := newTestNode(t)
	type ask struct {
		orphan lpeer.ID
		next   lpeer.ID // "": adopted
		bad    bool
	}
	check := func(name string, tr *Trees, asks []ask, adoptees []lpeer.ID) {
		for k, tc := range asks {
			next, _, _, err := tr.adoptee(tc.orphan, 0, []int{0})
			if (err != nil) != tc.bad || !tc.bad && next != tc.next {
				t.Errorf("%s: request %d, of %s: sent on to %q, %v; want %q (refused: %t)", name, k, tc.orphan, next, err, tc.next, tc.bad)
			}
		}
		tr.mu.Lock()
		got := slices.Clone(tr.tree.Adoptees(0))
		tr.mu.Unlock()
		if !slices.Equal(got, adoptees) {
			t.Errorf("%s: adoptees %v, want %v", name, got, adoptees)
		}
	}
	seed := NewTrees(p, c, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{"root"}}}, time.Second)
	check("seed", seed, []ask{
		{orphan: "s1"},
		{orphan: "s2", next: "s1"},
		{orphan: "s3", next: "s1"},
		{orphan: "s4", next: "s2"},
		{orphan: "s5", next: "s2"},
		{orphan: "s2"},             // again, s1 failed it: adopted
		{orphan: "s6", next: "s3"}, // s1 complained of: passed over
		{orphan: "s3"},             // again, s1 failed it: s1 is cut
		{orphan: "s1", bad: true},  // cut: adopted no more
		{orphan: "s4"},             // s2 failed it
		{orphan: "s5"},             // s2 cut
		{orphan: "s7", next: "s3"},
		{orphan: "s8", next: "s4"},
		{orphan: "s6"},             // again: s3 complained of once
		{orphan: "s7"},             // s3 cut
		{orphan: "s8", next: "s5"}, // again, at the seed's most: to an adoptee none complained of
	}, []lpeer.ID{"s4", "s5", "s6", "s7"})
	// Two orphans of the stripe asked the seed: their root is cut.
	seed.mu.Lock()
	kids := slices.Clone(seed.tree.Children(0))
	seed.mu.Unlock()
	if !slices.Equal(kids, []lpeer.ID{"s4", "s5", "s6", "s7"}) {
		t.Errorf("the seed pushes stripe 0 to %v, want its adoptees only (the root cut)", kids)
	}
	// A seed whose root still takes its pushes doubts a first orphan (a
	// liar its root banned): adopted apart, no orphan is sent on to it.
	rootUp := func() *Trees {
		tr := NewTrees(p, c, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{"root"}}}, time.Second)
		tr.outs["root"] = &pushOut{wake: make(chan struct{}, 1)}
		tr.tree.SetUp("root", true)
		return tr
	}
	banned := rootUp()
	check("seed, an orphan its root banned", banned, []ask{{orphan: "liar"}}, []lpeer.ID{"liar"})
	banned.mu.Lock()
	banned.tree.SetUp("root", false) // the root left
	banned.mu.Unlock()
	check("seed, its root left", banned, []ask{
		{orphan: "h1"},             // adopted: the doubted one is not counted
		{orphan: "h2", next: "h1"}, // not to the doubted one; the root is cut
		{orphan: "h3", next: "h1"},
		{orphan: "h4", next: "h2"},
		{orphan: "liar"}, // asks again: kept, apart
	}, []lpeer.ID{"liar", "h1"})
	// Two orphans that ask while the root takes pushes corroborate each
	// other (the root is cut), until the root's stream fails: it left,
	// so it was there for them (and banned them).
	twoBanned := rootUp()
	check("seed, two orphans its root banned", twoBanned, []ask{
		{orphan: "liar1"},                // doubted
		{orphan: "liar2", next: "liar1"}, // corroborates it
	}, []lpeer.ID{"liar1"})
	twoBanned.mu.Lock()
	twoBanned.tree.StreamFailed("root")
	twoBanned.mu.Unlock()
	check("seed, the root of two it doubted left", twoBanned, []ask{
		{orphan: "h1"}, // adopted: neither liar counts
		{orphan: "h2", next: "h1"},
		{orphan: "h3", next: "h1"},
		{orphan: "h4", next: "h2"},
	}, []lpeer.ID{"liar1", "h1"})
	phantom := rootUp()
	check("seed, a root that passes nothing on", phantom, []ask{
		{orphan: "o1"},             // doubted
		{orphan: "o2", next: "o1"}, // corroborates it: the root is cut
		{orphan: "o3", next: "o1"},
		{orphan: "o4", next: "o2"},
	}, []lpeer.ID{"o1"})
	for _, tc := range []struct {
		name string
		tr   *Trees
		want []lpeer.ID
	}{{"an orphan its root banned", banned, []lpeer.ID{"liar", "h1"}}, {"two orphans its root banned", twoBanned, []lpeer.ID{"liar1", "h1"}}, {"a root that passes nothing on", phantom, []lpeer.ID{"o1"}}} {
		tc.tr.mu.Lock()
		kids := slices.Clone(tc.tr.tree.Children(0))
		tc.tr.mu.Unlock()
		if !slices.Equal(kids, tc.want) {
			t.Errorf("seed, %s: pushes stripe 0 to %v, want %v (the root cut)", tc.name, kids, tc.want)
		}
	}
	tr := NewTrees(p, c, Stripes{Parents: []lpeer.ID{"par", "par"}}, time.Second)
	check("peer", tr, []ask{
		{orphan: "o1"},
		{orphan: "o2"},
		{orphan: "o3", next: "o1"},
		{orphan: "o4", next: "o1"},
		{orphan: "o5", next: "o2"},
		{orphan: "o6", next: "o2"},
		{orphan: "o7", next: "o3"},
		{orphan: "o3"},             // again, o1 failed it: adopted
		{orphan: "o5"},             // o2 failed it
		{orphan: "o7", next: "o5"}, // o3 failed it; at its most: to an adoptee none complained of
		{orphan: "o6"},             // o2 failed it: o2 is cut, o6 adopted
		{orphan: "o1"},             // an adoptee asking again: kept
		{orphan: "par", bad: true}, // its own parent
	}, []lpeer.ID{"o1", "o3", "o5", "o6"})
	// Stripe 1 is its own: a first orphan there is adopted.
	if next, adopted, _, err := tr.adoptee("o9", 1, []int{1}); next != "" || !adopted || err != nil {
		t.Errorf("stripe 1: sent on to %q, adopted %t, %v; want adopted", next, adopted, err)
	}
	// Its parent gone, it gets neither stripe: refused.
	tr.ParentFailed("par", false)
	if _, _, _, err := tr.adoptee("o6", 0, []int{0}); !errors.Is(err, errNoStripe) {
		t.Errorf("without its parent: %v, want errNoStripe", err)
	}
}

// TestAdopteeLacks: a peer asked by a child to catch it up pushes the
// blocks of the request it has passed on, and names in elsewhere those it
// has not gained yet that two or more of its watchers hold (the child
// fetches them rather than wait); one it lacks that no one holds, and one
// it stored but has not passed on yet, it pushes as it passes them on. An
// orphan it adopts is named none: it waits for its adopter's pushes.
func TestAdopteeLacks(t *testing.T) {
	dir := t.TempDir()
	src := writeRandomFile(t, dir, "data.bin", 16*16<<10, 5) // 16 blocks, 2 stripes
	m := manifestOf(t, src)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	c := emptyContent(t, m, filepath.Join(dir, "out"))
	p := newTestNode(t)
	tr := NewTrees(p, c, Stripes{Parents: []lpeer.ID{"par", "par"}, Children: [][]lpeer.ID{{"kid"}}}, time.Second)
	// It passed on block 0 and stored block 6; two watchers hold blocks
	// 0, 2 and 6, one holds block 4, none block 8.
	for _, i := range []int{0, 6} {
		if err := c.Store.PutBlock(i, data[i*16<<10:(i+1)*16<<10]); err != nil {
			t.Fatal(err)
		}
	}
	tr.tree.Know(0)
	for _, w := range []string{"w1", "w2"} {
		c.Tally.Set(lpeer.ID(w), watchFilter(t, c.Tally.U, []int{0, 2, 6}))
	}
	c.Tally.Set("w3", watchFilter(t, c.Tally.U, []int{4}))
	for _, tc := range []struct {
		name      string
		id        lpeer.ID
		adopted   bool
		elsewhere []int
	}{
		{"an orphan", "orphan", true, nil},
		{"a child catching up", "kid", false, []int{2}},
	} {
		next, adopted, elsewhere, err := tr.adoptee(tc.id, 0, []int{0, 2, 4, 6, 8})
		if next != "" || adopted != tc.adopted || err != nil {
			t.Fatalf("%s: sent on to %q, adopted %t, %v; want %t", tc.name, next, adopted, err, tc.adopted)
		}
		tr.mu.Lock()
		queued := slices.Clone(tr.outs[tc.id].q)
		tr.mu.Unlock()
		if !slices.Equal(elsewhere, tc.elsewhere) || !slices.Equal(queued, []int{0}) {
			t.Errorf("%s: elsewhere %v, queued %v; want %v and [0]", tc.name, elsewhere, queued, tc.elsewhere)
		}
	}
}

// TestAdopteeBounded: orphans without end (as many identities as a
// hostile peer makes) are sent on or refused, and what the adopter keeps of
// them stays bounded.
func TestAdopteeBounded(t *testing.T) {
	dir := t.TempDir()
	m := manifestOf(t, writeRandomFile(t, dir, "data.bin", 64<<10, 3))
	c := emptyContent(t, m, filepath.Join(dir, "out"))
	p := newTestNode(t)
	seed := NewTrees(p, c, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{"root"}}}, time.Second)
	sentOn, refused := 0, 0
	for k := range 3 * MaxPushChildren {
		next, _, _, err := seed.adoptee(lpeer.ID(fmt.Sprint("orphan", k)), 0, []int{0})
		switch {
		case err != nil:
			refused++
		case next != "":
			sentOn++
		}
	}
	seed.mu.Lock()
	defer seed.mu.Unlock()
	if line, sentOn, fwds := seed.tree.Kept(0); line > MaxPushChildren || sentOn > MaxPushChildren || fwds > MaxPushChildren {
		t.Errorf("kept %d in line, %d sent on, %d forwarders; want at most %d each", line, sentOn, fwds, MaxPushChildren)
	}
	if sentOn != 2*MaxPushChildren || refused != 3*MaxPushChildren-1-sentOn {
		t.Errorf("%d sent on, %d refused; want %d sent on (two to each in line), the rest refused", sentOn, refused, 2*MaxPushChildren)
	}
}
