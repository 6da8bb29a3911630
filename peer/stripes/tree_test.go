package stripes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// swarm drives the Trees of a planned swarm as package peer does, without
// streams: peers are 1 to n (0 names none), the seed n, and an ask to be
// adopted is answered at once by the asked peer's Tree.
type swarm struct {
	trees map[int]*Tree[int]
	dead  map[int]bool
	seed  int
	now   time.Time
	// hops records, per ask, how many peers an orphan asked.
	hops []int
	// adopted and sentOn count the answers.
	adopted, sentOn int
}

// newSwarm plans k stripe trees over n-1 fetchers in a random order and
// gives every peer its Tree.
func newSwarm(t *testing.T, n, k int, rng *rand.Rand) *swarm {
	t.Helper()
	order := rng.Perm(n - 1)
	tr, err := Plan(Config{Peers: n, Stripes: k, Order: order, Seed: n - 1})
	if err != nil {
		t.Fatal(err)
	}
	// Plan numbers peers from 0, the seed n-1; here from 1, the seed n.
	parent := make([][]int, k) // per stripe, per peer (0-based), parent+1
	for s := range k {
		parent[s] = make([]int, n)
		parent[s][tr.Roots[s]] = n
		for p, kids := range tr.Kids[s] {
			for _, c := range kids {
				parent[s][c] = p + 1
			}
		}
	}
	w := &swarm{trees: map[int]*Tree[int]{}, dead: map[int]bool{}, seed: n, now: time.Unix(0, 0)}
	for p := range n {
		pl := Place[int]{Self: p + 1, Parents: make([]int, k), Children: make([][]int, k), Grandparents: make([]int, k), Blocks: 64 * k, RepairAfter: time.Second}
		for s := range k {
			if p == n-1 {
				pl.Children[s] = []int{tr.Roots[s] + 1}
				continue
			}
			pl.Parents[s] = parent[s][p]
			if gp := parent[s][p]; gp != n {
				pl.Grandparents[s] = parent[s][gp-1]
			}
			for _, c := range tr.Kids[s][p] {
				pl.Children[s] = append(pl.Children[s], int(c)+1)
			}
		}
		w.trees[p+1] = NewTree(pl, w.now)
	}
	// The seed's streams to the roots are up.
	for _, r := range w.trees[n].children {
		for _, c := range r {
			w.trees[n].SetUp(c, true)
		}
	}
	return w
}

// fail has the peers in ids leave: their parents' streams to them fail,
// and each of their children takes its parent as gone and asks to be
// adopted where it has children, as do the children those orphans let go,
// in a random order.
func (w *swarm) fail(rng *rand.Rand, ids ...int) {
	type ask struct{ peer, s int }
	var asks []ask
	gone := func(child, parent int) {
		for _, s := range w.trees[child].ParentFailed(parent, false) {
			asks = append(asks, ask{child, s})
		}
	}
	for _, id := range ids {
		w.dead[id] = true
		for p, tr := range w.trees {
			if w.dead[p] {
				continue
			}
			tr.StreamFailed(id)
			tr.DropAdoptee(id)
			if _, ok := tr.State(id); ok {
				gone(p, id)
			}
		}
	}
	for len(asks) > 0 {
		k := rng.IntN(len(asks))
		a := asks[k]
		asks = slices.Delete(asks, k, k+1)
		if w.ask(a.peer, a.s) {
			for _, child := range w.trees[a.peer].Orphan(a.s) {
				if !w.dead[child] {
					gone(child, a.peer)
				}
			}
		}
	}
}

// ask runs orphan id's asks to be adopted in stripe s, as package peer's
// adopt does, and reports whether its children are to be let go.
func (w *swarm) ask(id, s int) (orphaned bool) {
	tr := w.trees[id]
	adopted := false
	target := tr.Grand(s)
	asked := map[int]bool{id: true}
	hops := 0
	for range AdoptHops {
		if target == 0 || asked[target] {
			break
		}
		asked[target] = true
		try, ok := tr.Try(s, target)
		if !ok {
			break
		}
		hops++
		if w.dead[target] {
			tr.Undo(try)
			break
		}
		at := w.trees[target]
		next, _, err := at.Adoptee(id, s, target == w.seed)
		if err == nil && next == 0 {
			adopted = true
			w.adopted++
			grand := at.ParentUp(s)
			if grand == id {
				grand = 0
			}
			tr.Adopted(try, grand, w.now)
			at.SetUp(id, true)
			break
		}
		tr.Undo(try)
		if err != nil {
			break
		}
		w.sentOn++
		target = next
	}
	w.hops = append(w.hops, hops)
	return tr.AskEnded(s, adopted)
}

// cycle returns a stripe and a peer of a cycle of live peers' parents, or
// -1.
func (w *swarm) cycle() (int, int) {
	for s := range w.trees[w.seed].Stripes() {
		for id := range w.trees {
			seen := map[int]bool{}
			for p := id; p != 0 && !w.dead[p]; p = w.trees[p].Parent(s) {
				if seen[p] {
					return s, p
				}
				seen[p] = true
			}
		}
	}
	return -1, -1
}

// home reports whether live peer id hears stripe s from the seed: its
// parents up to the seed are live, and each is up in its child's view.
func (w *swarm) home(id, s int) bool {
	for p := id; p != w.seed; {
		tr := w.trees[p]
		up := tr.ParentUp(s)
		if up == 0 || w.dead[up] {
			return false
		}
		p = up
	}
	return true
}

// TestAdoptionSwarm: whichever inner peer of a planned swarm leaves, each
// of its orphans (its children with children of their own) is adopted
// within AdoptHops asks, so that every live peer but its leaves (which
// fetch) still hears every stripe from the seed; with several leaving at once, an orphan still asks at
// most AdoptHops peers, no peer adopts more than AdoptMax orphans of a
// stripe, and adoption never makes a cycle in a stripe.
func TestAdoptionSwarm(t *testing.T) {
	for _, tc := range []struct{ n, k, leave int }{
		{8, 2, 1}, {30, 4, 1}, {60, 4, 1}, {200, 16, 1},
		{30, 4, 3}, {60, 4, 6}, {200, 16, 20}, {200, 16, 60},
	} {
		adopted, sentOn := 0, 0
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, uint64(tc.n*tc.k+tc.leave)))
			w := newSwarm(t, tc.n, tc.k, rng)
			var leave []int
			for _, id := range rng.Perm(tc.n - 1)[:tc.leave] {
				leave = append(leave, id+1)
			}
			if tc.leave == 1 {
				// An inner peer of some stripe: it has children.
				for id := range tc.n - 1 {
					if id := id + 1; slices.ContainsFunc(w.trees[id].children, func(k []int) bool { return len(k) > 0 }) {
						leave = []int{id}
						if rng.IntN(2) == 0 {
							break
						}
					}
				}
			}
			w.fail(rng, leave...)
			name := fmt.Sprintf("%d peers, %d stripes, %v leave (seed %d)", tc.n, tc.k, leave, seed)
			if s, p := w.cycle(); s >= 0 {
				t.Fatalf("%s: a cycle through peer %d in stripe %d", name, p, s)
			}
			for _, h := range w.hops {
				if h > AdoptHops {
					t.Fatalf("%s: an orphan asked %d peers", name, h)
				}
			}
			for id, tr := range w.trees {
				for s := range tc.k {
					if id != w.seed && len(tr.Adoptees(s)) > AdoptMax {
						t.Fatalf("%s: peer %d adopted %v in stripe %d", name, id, tr.Adoptees(s), s)
					}
					// A leaf whose parent left repairs by fetching.
					leaf := w.dead[tr.Parent(s)] && len(tr.Children(s)) == 0
					if tc.leave == 1 && !w.dead[id] && id != w.seed && !leaf && !w.home(id, s) {
						t.Fatalf("%s: peer %d does not hear stripe %d from the seed (parent %d, orphaned %t)", name, id, s, tr.Parent(s), tr.Orphaned(s))
					}
				}
			}
			adopted, sentOn = adopted+w.adopted, sentOn+w.sentOn
		}
		t.Logf("%d peers, %d stripes, %d leave: %d adopted, %d sent on in 20 runs", tc.n, tc.k, tc.leave, adopted, sentOn)
		if adopted == 0 || tc.n > 8 && sentOn == 0 {
			t.Errorf("%d peers, %d stripes, %d leave: %d adopted, %d sent on; want both", tc.n, tc.k, tc.leave, adopted, sentOn)
		}
	}
}

// TestCutRoot: a root that passes nothing on (a phantom: its stream to
// the seed stays up) is cut by the seed once two of its children ask to
// be adopted, and all its children with children of their own are
// re-homed under the seed, the root in none of their chains.
func TestCutRoot(t *testing.T) {
	// The seed 9 pushes stripe 0 to root 1, whose children 2, 3 and 4
	// each have two leaves.
	const seed, root = 9, 1
	trees := map[int]*Tree[int]{
		seed: NewTree(Place[int]{Self: seed, Parents: []int{0}, Children: [][]int{{root}}}, time.Time{}),
		root: NewTree(Place[int]{Self: root, Parents: []int{seed}, Children: [][]int{{2, 3, 4}}}, time.Time{}),
	}
	trees[seed].SetUp(root, true)
	for _, o := range []int{2, 3, 4} {
		trees[o] = NewTree(Place[int]{Self: o, Parents: []int{root}, Grandparents: []int{seed}, Children: [][]int{{10 * o, 10*o + 1}}}, time.Time{})
	}
	w := &swarm{trees: trees, dead: map[int]bool{}, seed: seed}
	for _, o := range []int{2, 3, 4} {
		if s := trees[o].ParentFailed(root, true); !slices.Equal(s, []int{0}) {
			t.Fatalf("orphan %d asks in stripes %v, want [0]", o, s)
		}
		if w.ask(o, 0) {
			t.Errorf("orphan %d lets its children go", o)
		}
	}
	if kids := trees[seed].Children(0); slices.Contains(kids, root) {
		t.Errorf("the seed still pushes stripe 0 to its root: %v", kids)
	}
	for _, o := range []int{2, 3, 4} {
		for p := o; p != seed; p = trees[p].ParentUp(0) {
			if p == root || p == 0 {
				t.Errorf("orphan %d: parents %d, %d hear from the root or none", o, trees[o].Parent(0), p)
				break
			}
		}
	}
}

// TestAdopteeTable: how a peer and a seed answer orphans (as package
// peer's TestAdoptee, without streams).
func TestAdopteeTable(t *testing.T) {
	type ask struct {
		orphan string
		next   string // "": adopted
		err    error
	}
	for _, tc := range []struct {
		name     string
		place    Place[string]
		rootUp   bool
		asks     []ask
		adoptees []string
		children []string
	}{
		{"a peer", Place[string]{Parents: []string{"par"}}, false, []ask{
			{"o1", "", nil}, {"o2", "", nil},
			{"o3", "o1", nil}, {"o4", "o1", nil}, {"o5", "o2", nil}, {"o6", "o2", nil}, {"o7", "o3", nil},
			{"o3", "", nil}, // again, o1 failed it: adopted
			{"par", "", ErrOwnParent},
		}, []string{"o1", "o2", "o3"}, []string{"o1", "o2", "o3"}},
		{"a seed", Place[string]{Parents: []string{""}, Children: [][]string{{"root"}}}, false, []ask{
			{"s1", "", nil}, {"s2", "s1", nil}, {"s3", "s1", nil}, {"s4", "s2", nil}, {"s5", "s2", nil},
			{"s2", "", nil},   // again, s1 failed it: adopted
			{"s6", "s3", nil}, // s1 complained of: passed over
			{"s3", "", nil},   // again, s1 failed it: s1 is cut
			{"s1", "", ErrFailedOrphans},
			{"s4", "", nil}, {"s5", "", nil}, // s2 failed them: s2 is cut
			{"s7", "s3", nil}, {"s8", "s4", nil},
			{"s6", "", nil}, {"s7", "", nil}, // s3 failed them: s3 is cut
			{"s8", "s5", nil}, // again, at the seed's most: to an adoptee none complained of
		}, []string{"s4", "s5", "s6", "s7"}, []string{"s4", "s5", "s6", "s7"}},
		{"a seed, its root up", Place[string]{Parents: []string{""}, Children: [][]string{{"root"}}}, true, []ask{
			{"liar", "", nil},   // doubted: adopted apart
			{"o2", "liar", nil}, // corroborates it: the root is cut
			{"o3", "liar", nil}, // liar's second
			{"o4", "o2", nil},
		}, []string{"liar"}, []string{"liar"}},
	} {
		tr := NewTree(tc.place, time.Time{})
		if tc.rootUp {
			tr.SetUp("root", true)
		}
		for k, a := range tc.asks {
			if next, _, err := tr.Adoptee(a.orphan, 0, false); err != a.err || next != a.next {
				t.Errorf("%s: ask %d of %s: sent on to %q, %v; want %q, %v", tc.name, k, a.orphan, next, err, a.next, a.err)
			}
		}
		if got := tr.Adoptees(0); !slices.Equal(got, tc.adoptees) {
			t.Errorf("%s: adoptees %v, want %v", tc.name, got, tc.adoptees)
		}
		if got := tr.Children(0); !slices.Equal(got, tc.children) {
			t.Errorf("%s: children %v, want %v", tc.name, got, tc.children)
		}
	}
	// Its parent gone, a peer gets no stripe.
	tr := NewTree(Place[string]{Parents: []string{"par"}, Grandparents: []string{"gp"}, Children: [][]string{{"kid"}}}, time.Time{})
	if ask := tr.ParentFailed("par", false); !slices.Equal(ask, []int{0}) {
		t.Errorf("its parent gone: asks in %v, want [0]", ask)
	}
	if _, _, err := tr.Adoptee("o", 0, false); err != ErrNoStripe {
		t.Errorf("its parent gone: %v, want ErrNoStripe", err)
	}
	if _, _, err := tr.Adoptee("o", 0, true); err != nil {
		t.Errorf("its parent gone, the content whole: %v, want adopted", err)
	}
}

// TestParents: a parent's pushes are taken while it is the stripe's
// parent and not refused; the stripe is held for them a repair time; a
// parent gone and back is asked to catch up; an adopter's pushes replace
// the planned parent's, which are dropped, not refused.
func TestParents(t *testing.T) {
	t0 := time.Unix(100, 0)
	tr := NewTree(Place[string]{Self: "me", Parents: []string{"a", "b"}, Grandparents: []string{"g", ""}, Children: [][]string{{"c"}}, RepairAfter: time.Second}, t0)
	held := func(at time.Duration) []bool { return tr.Held(t0.Add(at), nil) }
	if h := held(time.Second / 2); !slices.Equal(h, []bool{true, true}) {
		t.Errorf("held %v within the repair time, want both", h)
	}
	if v := tr.PushedBy("a", 2, t0.Add(time.Second)); v != Taken {
		t.Errorf("a's push of block 2: %v, want Taken", v)
	}
	if v := tr.PushedBy("a", 1, t0); v != NotTheirs {
		t.Errorf("a's push of block 1: %v, want NotTheirs", v)
	}
	if h := held(3 * time.Second / 2); !slices.Equal(h, []bool{true, false}) {
		t.Errorf("held %v: want stripe 0 (a pushed), not 1", h)
	}
	if ask := tr.ParentFailed("a", false); !slices.Equal(ask, []int{0}) {
		t.Errorf("a gone: asks in %v, want [0]", ask)
	}
	if h := held(time.Second); h[0] {
		t.Error("stripe 0 held for a parent gone")
	}
	try, ok := tr.Try(0, "g")
	if !ok || tr.Parent(0) != "g" {
		t.Fatalf("trying g: %t, parent %q", ok, tr.Parent(0))
	}
	tr.Adopted(try, "gg", t0.Add(time.Second))
	if tr.AskEnded(0, true) || tr.Grand(0) != "gg" {
		t.Errorf("adopted by g: grandparent %q, want gg", tr.Grand(0))
	}
	if v := tr.PushedBy("a", 0, t0); v != NotNow {
		t.Errorf("the planned parent's push after g adopted: %v, want NotNow", v)
	}
	if taken, _ := tr.Accepts("a"); taken {
		t.Error("a's pushes taken after g adopted")
	}
	if taken, catchUp := tr.Accepts("b"); !taken || catchUp {
		t.Errorf("b: taken %t, catch up %t; want taken only", taken, catchUp)
	}
	tr.ParentFailed("b", false)
	if taken, catchUp := tr.Accepts("b"); !taken || !catchUp {
		t.Errorf("b back: taken %t, catch up %t; want both", taken, catchUp)
	}
	tr.CatchUpRefused("b")
	if _, catchUp := tr.Accepts("b"); !catchUp || tr.Behind("b") {
		t.Error("b refused a catch-up: not asked again when it pushes")
	}
	tr.ParentFailed("b", true)
	if v := tr.PushedBy("b", 1, t0); v != Refused {
		t.Errorf("b refused: its push %v, want Refused", v)
	}
	if taken, _ := tr.Accepts("b"); taken {
		t.Error("b refused: its pushes taken")
	}
}

// TestOrphan: a peer left without a parent lets its children go (their
// streams to be reset once) and passes nothing on until a parent pushes
// again.
func TestOrphan(t *testing.T) {
	tr := NewTree(Place[string]{Parents: []string{"a"}, Grandparents: []string{"g"}, Children: [][]string{{"c1", "c2"}}, Blocks: 8}, time.Time{})
	tr.ParentFailed("a", false)
	try, _ := tr.Try(0, "g")
	tr.Undo(try)
	if tr.Parent(0) != "a" {
		t.Errorf("g refused: parent %q, want a back", tr.Parent(0))
	}
	if !tr.AskEnded(0, false) {
		t.Fatal("no peer adopted it: not orphaned")
	}
	if kids := tr.Orphan(0); !slices.Equal(kids, []string{"c1", "c2"}) || tr.Orphan(0) != nil {
		t.Errorf("let go %v, want c1 and c2 once", kids)
	}
	if kids := tr.Gained(0); kids != nil {
		t.Errorf("an orphan passes block 0 on to %v", kids)
	}
	if !tr.TakeCut("c1") || tr.TakeCut("c1") {
		t.Error("c1's stream not reset once")
	}
	tr.Accepts("a")
	if tr.Orphaned(0) || tr.TakeCut("c2") {
		t.Error("a back: still orphaned, or c2 still to be cut")
	}
	if kids := tr.Gained(4); !slices.Equal(kids, []string{"c1", "c2"}) {
		t.Errorf("a back: block 4 passed on to %v", kids)
	}
	// What it gained while orphaned is known: pushed to a child catching up.
	push, _ := tr.Catch([]int{0, 2, 4}, false, func(int) bool { return false }, func(int) bool { return false })
	if !slices.Equal(push, []int{0, 4}) {
		t.Errorf("catch-up pushes %v, want [0 4]", push)
	}
}

// TestBacklog: a child's backlog over Backlog blocks is shed of what
// others hold only once it has lasted a repair time, and a seed's first
// copies hold while a child whose stream is up waits for them.
func TestBacklog(t *testing.T) {
	t0 := time.Unix(0, 0)
	tr := NewTree(Place[string]{Parents: []string{""}, Children: [][]string{{"c"}}, RepairAfter: time.Second, Blocks: 64,
		Spare: func(i int) bool { return i%2 == 0 }}, t0)
	q := make([]int, Backlog+4)
	for i := range q {
		q[i] = i
	}
	tr.Queue(q...)
	if tr.FirstCopies([]int{0}, t0) {
		t.Error("first copies held for a child not there")
	}
	tr.SetUp("c", true)
	if !tr.FirstCopies([]int{0}, t0) || tr.FirstCopies([]int{40}, t0) {
		t.Error("first copies: not held for block 0 queued for c, or held for 40 before c's queue moved")
	}
	for _, tc := range []struct {
		at    time.Duration
		taken bool
		shed  []int
	}{{0, true, nil}, {time.Second / 2, true, nil}, {time.Second, true, []int{0, 2}}, {2 * time.Second, false, nil}} {
		push, shed := tr.Batch("c", slices.Clone(q), tc.taken, t0.Add(tc.at))
		if !slices.Equal(shed, tc.shed) || len(push)+len(shed) != len(q) {
			t.Errorf("at %v: pushed %v, shed %v; want %v shed", tc.at, push, shed, tc.shed)
		}
	}
	if tr.Pending(0) != 0 || tr.Pending(1) != 1 {
		t.Errorf("pending: block 0 %d, 1 %d; want 0 (shed) and 1", tr.Pending(0), tr.Pending(1))
	}
}

// TestFirstCopies: a seed answers busy a request for a block still
// queued for a child that is there, and any request while a child's queue
// moves; a stalled child holds only its own blocks, and nothing holds once
// every queued block is written.
func TestFirstCopies(t *testing.T) {
	t0 := time.Unix(0, 0)
	tr := NewTree(Place[string]{Parents: []string{"", ""}, Children: [][]string{{"c"}, {"d"}}, RepairAfter: time.Second, Blocks: 4}, t0)
	tr.Queue(0, 2) // stripe 0, c's
	tr.SetUp("c", true)
	tr.Moved("c", t0)
	tr.Moved("x", t0) // no child: ignored
	for _, tc := range []struct {
		idx  []int
		at   time.Duration
		want bool
	}{
		{[]int{0}, 0, true},               // queued for c
		{[]int{1}, 0, true},               // written already, while c's queue moves
		{[]int{1}, time.Second / 2, true}, // within the repair time
		{[]int{1}, time.Second, false},    // c stalled a repair time: served
		{[]int{2}, time.Second, true},     // but c's own blocks wait for it
	} {
		if got := tr.FirstCopies(tc.idx, t0.Add(tc.at)); got != tc.want {
			t.Errorf("FirstCopies(%v) at %v = %t, want %t", tc.idx, tc.at, got, tc.want)
		}
	}
	tr.Dequeue(0, 2)
	if tr.FirstCopies([]int{0, 1}, t0) {
		t.Error("first copies held once every queued block was written")
	}
	tr.Queue(1) // stripe 1: d's, its stream not up
	tr.Moved("d", t0)
	if tr.FirstCopies([]int{0}, t0) {
		t.Error("first copies held for a child whose stream is not up")
	}
}
