package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/internal/testkit"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/stripes"
	"github.com/reconcile-p2p/reconcile/peer/swarm"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// pushSwarm is a seed and fetchers that serve empty stores of the seed's
// file, ready to be given stripes and to fetch.
type pushSwarm struct {
	src    string
	man    *chunker.Manifest
	seed   *Peer
	peers  []*Peer
	stores []*chunker.Store
	dirs   []string
}

// newPushSwarm seeds a file of size bytes in blocks of 16 KiB, on a seed
// made with seedOpts, and makes n fetchers (connected to the seed and to
// each other) serve empty stores.
func newPushSwarm(ctx context.Context, t *testing.T, size, n int, seedOpts ...Option) *pushSwarm {
	t.Helper()
	dir := t.TempDir()
	w := &pushSwarm{src: writeRandomFile(t, dir, "data.bin", size, 11), seed: newTestPeer(t, seedOpts...)}
	tk, err := w.seed.Seed(ctx, w.src, WithBlockSize(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	if w.man = manifestOf(t, w.src); w.man.ID() != tk.Root {
		t.Fatal("the manifest is not the seed's")
	}
	for j := range n {
		p := newTestPeer(t)
		d := filepath.Join(dir, fmt.Sprint("out", j))
		st, err := chunker.CreateStore(ctx, d, w.man)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Serve(st); err != nil {
			t.Fatal(err)
		}
		if err := p.Host().Connect(ctx, w.seed.AddrInfo()); err != nil {
			t.Fatal(err)
		}
		for _, q := range w.peers {
			if err := p.Host().Connect(ctx, q.AddrInfo()); err != nil {
				t.Fatal(err)
			}
		}
		w.peers, w.stores, w.dirs = append(w.peers, p), append(w.stores, st), append(w.dirs, d)
	}
	return w
}

// manifestOf is testkit.ManifestOf.
var manifestOf = testkit.ManifestOf

// pushCorrupt waits until p's fetch of w's file runs, then pushes it block
// i, zeroed (corrupt), from h over ProtoPush.
func (w *pushSwarm) pushCorrupt(ctx context.Context, h, p *Peer, i int) error {
	root := w.man.ID()
	if err := w.fetching(ctx, p); err != nil {
		return err
	}
	s, err := h.Host().NewStream(ctx, p.ID(), ProtoPush)
	if err != nil {
		return err
	}
	defer s.Close()
	bw := bufio.NewWriter(s)
	for _, fr := range [][]byte{wire.Hello{Root: root[:]}.Append(nil), append(wire.AppendBlockHeader(nil, i), make([]byte, w.man.BlockLen(i))...)} {
		if err := wire.WriteFrame(bw, fr); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// emptyContent returns a content of m over a new empty store in dir,
// closed when the test ends.
func emptyContent(t testing.TB, m *chunker.Manifest, dir string) *serve.Content {
	t.Helper()
	st, err := chunker.CreateStore(context.Background(), dir, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := serve.NewContent(m, st)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fetchFromSeed runs p's fetch from the seed alone, giving the seed its
// place seed once the fetch runs (so that it counts every block pushed to
// it), and returns its summary.
func (w *pushSwarm) fetchFromSeed(ctx context.Context, t *testing.T, p *Peer, seed Stripes) *Summary {
	t.Helper()
	wait := w.startFetch(ctx, p)
	if err := w.fetching(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := w.seed.Push(w.man.ID(), seed); err != nil {
		t.Fatal(err)
	}
	sum, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// startFetch starts p's fetch from the seed alone and returns a function
// that waits for its end.
func (w *pushSwarm) startFetch(ctx context.Context, p *Peer) func() (*Summary, error) {
	var sum *Summary
	fetched := make(chan error, 1)
	go func() {
		var err error
		sum, err = p.FetchServed(ctx, w.man.ID(), WithSources(w.seed.ID()))
		fetched <- err
	}()
	return func() (*Summary, error) {
		err := <-fetched
		return sum, err
	}
}

// fetching waits until p's fetch of w's file runs.
func (w *pushSwarm) fetching(ctx context.Context, p *Peer) error {
	root := w.man.ID()
	for c := p.lib.Lookup(root[:]); c == nil || !swarm.FetchOf(c).Running(); c = p.lib.Lookup(root[:]) {
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// fetchAll runs every fetcher's FetchServed from all the others, gives
// the seed its place seed (unless it has no stripes) once they all run, so that
// each fetch counts every block pushed to it, and returns their summaries.
func (w *pushSwarm) fetchAll(ctx context.Context, t *testing.T, seed Stripes) []*Summary {
	t.Helper()
	sums := make([]*Summary, len(w.peers))
	errs := make(chan error, len(w.peers))
	for j, p := range w.peers {
		srcs := []lpeer.ID{w.seed.ID()}
		for k, q := range w.peers {
			if k != j {
				srcs = append(srcs, q.ID())
			}
		}
		go func() {
			s, err := p.FetchServed(ctx, w.man.ID(), WithSources(srcs...))
			sums[j] = s
			errs <- err
		}()
	}
	if len(seed.Parents) > 0 {
		for _, p := range w.peers {
			if err := w.fetching(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.seed.Push(w.man.ID(), seed); err != nil {
			t.Fatal(err)
		}
	}
	for range w.peers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range w.dirs {
		sameFile(t, w.src, filepath.Join(d, "data.bin"))
	}
	return sums
}

// pushShare returns the blocks peer id pushed in sum.
func pushShare(sum *Summary, id lpeer.ID) (pushed, rejected int) {
	for _, ps := range sum.Peers {
		if ps.Peer == id.String() {
			return ps.Pushed, ps.Rejected
		}
	}
	return 0, 0
}

// TestPushTrees: with two stripe trees over four fetchers (each the root of
// one stripe or an inner node, a leaf of the other), every block comes down
// the trees: nothing is fetched, nothing arrives twice, and the seed sends
// each block once.
func TestPushTrees(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 1<<20, 4)
	a, b, c, d := w.peers[0].ID(), w.peers[1].ID(), w.peers[2].ID(), w.peers[3].ID()
	repair := 10 * time.Second // nothing is repaired in this test
	// Stripe 0: seed -> a -> b, c; c -> d. Stripe 1: seed -> b -> a, d; a -> c.
	places := []Stripes{
		{Parents: []lpeer.ID{w.seed.ID(), b}, Children: [][]lpeer.ID{{b, c}, {c}}},
		{Parents: []lpeer.ID{a, w.seed.ID()}, Children: [][]lpeer.ID{nil, {a, d}}},
		{Parents: []lpeer.ID{a, a}, Children: [][]lpeer.ID{{d}}},
		{Parents: []lpeer.ID{c, b}},
	}
	for j, st := range places {
		st.RepairAfter = repair
		if err := w.peers[j].Push(w.man.ID(), st); err != nil {
			t.Fatal(err)
		}
	}
	sums := w.fetchAll(ctx, t, Stripes{Parents: make([]lpeer.ID, 2), Children: [][]lpeer.ID{{a}, {b}}})
	for j, s := range sums {
		if s.Pushed != s.Blocks || s.Fetched != s.Blocks || s.Redundant != 0 {
			t.Errorf("fetcher %d: %d of %d blocks pushed, %d fetched, %d twice; want all pushed, none twice", j, s.Pushed, s.Blocks, s.Fetched, s.Redundant)
		}
	}
	var served int64
	for _, n := range w.seed.ServedBytes(w.man.ID()) {
		served += n
	}
	if served != w.man.TotalSize() {
		t.Errorf("the seed sent %d bytes, want one copy (%d)", served, w.man.TotalSize())
	}
}

// TestPushRepair: a parent that never pushes (it has no stripes of its
// own) and a parent that pushes a corrupt block are repaired: the fetch
// asks its sources for their stripes' blocks, after the repair time or at
// once, and refuses the corrupt parent's pushes from then on.
func TestPushRepair(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 1<<20, 2)
	a, b := w.peers[0], w.peers[1]
	// a takes stripe 2 from q, which serves nothing and never pushes (nor
	// catches a up); a hostile peer h is the parent of b's stripe 0, the
	// seed of its stripes 1 and 2.
	h, q := connectedPeer(ctx, t, b), connectedPeer(ctx, t, a)
	if err := a.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{w.seed.ID(), w.seed.ID(), q.ID()}, RepairAfter: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := b.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{h.ID(), w.seed.ID(), w.seed.ID()}, RepairAfter: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// Once b's fetch runs, h pushes block 3 corrupt (stripe 0, its own).
	pushed := make(chan error, 1)
	go func() { pushed <- w.pushCorrupt(ctx, h, b, 3) }()
	sums := w.fetchAll(ctx, t, Stripes{Parents: make([]lpeer.ID, 3), Children: [][]lpeer.ID{{a.ID()}, {a.ID()}}})
	if sums[0].Pushed == 0 || sums[0].Pushed >= sums[0].Blocks {
		t.Errorf("a: %d of %d blocks pushed; want those of the seed's stripes only", sums[0].Pushed, sums[0].Blocks)
	}
	if p, r := pushShare(sums[1], h.ID()); p != 0 || r != 1 {
		t.Errorf("b took %d blocks from the corrupt parent and rejected %d; want 0 and 1", p, r)
	}
	if sums[1].Rejected != 1 {
		t.Errorf("b rejected %d blocks, want 1", sums[1].Rejected)
	}
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
}

// TestPushCatchUp: a peer that takes its place in a tree once its parent
// holds the whole stripe is pushed all of it on its catch-up request
// (pushes alone bring only what the parent gains from then on), and is
// not sent twice what its parent had queued for it.
func TestPushCatchUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 1<<20, 2)
	a, b := w.peers[0], w.peers[1]
	// Two stripes, each seed -> a -> b. The repair time is longer than
	// the test: b fetches nothing its parent is to push.
	repair := 5 * time.Minute
	if err := a.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{w.seed.ID(), w.seed.ID()}, Children: [][]lpeer.ID{{b.ID()}, {b.ID()}}, RepairAfter: repair}); err != nil {
		t.Fatal(err)
	}
	sa := w.fetchFromSeed(ctx, t, a, Stripes{Parents: make([]lpeer.ID, 2), Children: [][]lpeer.ID{{a.ID()}, {a.ID()}}})
	if sa.Pushed != sa.Blocks {
		t.Fatalf("a: %d of %d blocks pushed, want all", sa.Pushed, sa.Blocks)
	}
	// b joins late: a holds every block, and its pushes to b failed (b had
	// no place yet) and were dropped.
	if err := b.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{a.ID(), a.ID()}, RepairAfter: repair}); err != nil {
		t.Fatal(err)
	}
	sb, err := b.FetchServed(ctx, w.man.ID(), WithSources(a.ID(), w.seed.ID()))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := pushShare(sb, a.ID()); p != sb.Blocks || sb.Redundant != 0 {
		t.Errorf("b: %d of %d blocks pushed by a, %d twice; want all pushed once", p, sb.Blocks, sb.Redundant)
	}
	sameFile(t, w.src, filepath.Join(w.dirs[1], "data.bin"))
}

// TestPushCatchUpParentBack: a parent whose pushes come again after it
// was gone is asked for what it held meanwhile (it pushes only what it
// gains from then on).
func TestPushCatchUpParentBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 512<<10, 2)
	a, b := w.peers[0], w.peers[1]
	repair := 5 * time.Minute
	if err := a.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{w.seed.ID()}, Children: [][]lpeer.ID{{b.ID()}}, RepairAfter: repair}); err != nil {
		t.Fatal(err)
	}
	w.fetchFromSeed(ctx, t, a, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{a.ID()}}})
	// b takes its place with no fetch running (so it asks nothing yet);
	// its parent was gone and pushes again: b asks it to catch up.
	if err := b.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{a.ID()}, RepairAfter: repair}); err != nil {
		t.Fatal(err)
	}
	root := w.man.ID()
	tr := swarm.TreesOf(b.lib.Lookup(root[:]))
	tr.ParentFailed(a.ID(), false)
	if !tr.Accepts(a.ID()) {
		t.Fatal("a parent back is not taken")
	}
	for !w.stores[1].Complete() {
		if ctx.Err() != nil {
			t.Fatalf("b holds %d of %d blocks; want all, pushed by its parent back", w.stores[1].HeldCount(), w.man.BlockCount())
		}
		time.Sleep(5 * time.Millisecond)
	}
	sameFile(t, w.src, filepath.Join(w.dirs[1], "data.bin"))
}

// TestPushCatchUpParentAway: a peer whose parent cannot be reached as its
// fetch starts (it left before this peer joined) takes it as gone and
// fetches its stripes at once, instead of holding them for its pushes for
// a repair time.
func TestPushCatchUpParentAway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 512<<10, 2)
	a, b := w.peers[0], w.peers[1]
	// The repair time is longer than the test: b holds what a is to push
	// until it takes a as gone.
	if err := b.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{a.ID(), a.ID()}, RepairAfter: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	sb, err := b.FetchServed(ctx, w.man.ID(), WithSources(w.seed.ID()))
	if err != nil {
		t.Fatalf("b, its parent away: %v", err)
	}
	if sb.Pushed != 0 {
		t.Errorf("b: %d blocks pushed, want none (its parent is away)", sb.Pushed)
	}
	sameFile(t, w.src, filepath.Join(w.dirs[1], "data.bin"))
}

// TestPushCatchUpRefusedFirst: a parent that refused a catch-up request
// (it had no place in the trees yet) is asked again once its pushes come,
// and pushes what it held before as well as what it gains.
func TestPushCatchUpRefusedFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 512<<10, 2)
	a, b := w.peers[0], w.peers[1]
	// a holds the first half of the blocks, and has no place yet.
	root := w.man.ID()
	seedStore := w.seed.lib.Lookup(root[:]).Store
	for i := range w.man.BlockCount() / 2 {
		data, err := seedStore.ReadBlock(i, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.stores[0].PutBlock(i, data); err != nil {
			t.Fatal(err)
		}
	}
	repair := 5 * time.Minute
	if err := b.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{a.ID(), a.ID()}, RepairAfter: repair}); err != nil {
		t.Fatal(err)
	}
	waitB := w.startFetch(ctx, b)
	// b asks a to catch it up as its fetch starts, and a refuses.
	for {
		tr := swarm.TreesOf(b.lib.Lookup(root[:]))
		tr.Lock()
		refused := tr.Tree().Behind(a.ID())
		tr.Unlock()
		if refused {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("b's catch-up request was not refused, or not remembered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// a takes its place and fetches the second half: it pushes those to b
	// as it gains them, and b asks again for the first.
	if err := a.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{w.seed.ID(), w.seed.ID()}, Children: [][]lpeer.ID{{b.ID()}, {b.ID()}}, RepairAfter: repair}); err != nil {
		t.Fatal(err)
	}
	w.fetchFromSeed(ctx, t, a, Stripes{Parents: make([]lpeer.ID, 2), Children: [][]lpeer.ID{{a.ID()}, {a.ID()}}})
	sb, err := waitB()
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := pushShare(sb, a.ID()); p != sb.Blocks {
		t.Errorf("b: %d of %d blocks pushed by a, want all", p, sb.Blocks)
	}
	sameFile(t, w.src, filepath.Join(w.dirs[1], "data.bin"))
}

// TestPushRefused: pushes from a peer that is no parent, of a block of
// another parent's stripe, of a "missing" frame or of a block out of range
// store nothing and end the stream, and the parent that sent them is
// refused from then on; a content without stripes takes no push.
func TestPushRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// push writes the hello to a as h and, once a has answered, frames;
	// it returns a's answer and how the stream ended after.
	push := func(h, a *Peer, root chunker.ID, frames ...[]byte) (answer []byte, end error) {
		s, err := h.Host().NewStream(ctx, a.ID(), ProtoPush)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Reset()
		bw := bufio.NewWriter(s)
		_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
		fr := wire.NewReader(s)
		for k, f := range append([][]byte{wire.Hello{Root: root[:]}.Append(nil)}, frames...) {
			if err := wire.WriteFrame(bw, f); err != nil {
				t.Fatal(err)
			}
			if err := bw.Flush(); err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				if answer, err = fr.Next(1 << 10); err != nil {
					t.Fatalf("no answer to the hello: %v", err)
				}
			}
		}
		_, end = fr.Next(1 << 10)
		return answer, end // the stream's end: closed or reset by a, or a deadline
	}
	refused := func(answer []byte) bool {
		err := wire.DecodeError(answer)
		return err != nil && strings.Contains(err.Error(), "not a parent")
	}
	for _, tc := range []struct {
		name  string
		frame func(m *chunker.Manifest, data []byte) []byte
	}{
		{"block of the other parent's stripe", func(m *chunker.Manifest, data []byte) []byte {
			return append(wire.AppendBlockHeader(nil, 0), data[:m.BlockLen(0)]...)
		}},
		{"missing", func(*chunker.Manifest, []byte) []byte { return wire.AppendMissing(nil, 1) }},
		{"index out of range", func(*chunker.Manifest, []byte) []byte { return wire.AppendBlockHeader(nil, 1000) }},
		{"corrupt", func(m *chunker.Manifest, _ []byte) []byte {
			return append(wire.AppendBlockHeader(nil, 1), make([]byte, m.BlockLen(1))...)
		}},
	} {
		w := newPushSwarm(ctx, t, 64<<10, 1)
		a, root := w.peers[0], w.man.ID()
		h := connectedPeer(ctx, t, a)
		data, err := os.ReadFile(w.src)
		if err != nil {
			t.Fatal(err)
		}
		// No stripes yet: refused with an error frame.
		if answer, _ := push(h, a, root, tc.frame(w.man, data)); !refused(answer) {
			t.Errorf("%s: a push to a content without stripes: answered %q, want an error", tc.name, answer)
		}
		if err := a.Push(root, Stripes{Parents: []lpeer.ID{w.seed.ID(), h.ID()}}); err != nil {
			t.Fatal(err)
		}
		answer, end := push(h, a, root, tc.frame(w.man, data))
		if len(answer) == 0 || answer[0] != wire.TypeHave || end == nil || errors.Is(end, os.ErrDeadlineExceeded) {
			t.Errorf("%s: answered %q, then %v; want taken, then the stream reset", tc.name, answer, end)
		}
		// Its next push, of a good block of its stripe, is refused.
		if answer, _ := push(h, a, root, append(wire.AppendBlockHeader(nil, 1), data[w.man.BlockSize():][:w.man.BlockLen(1)]...)); !refused(answer) {
			t.Errorf("%s: then a good push: answered %q, want refused", tc.name, answer)
		}
		if n := w.stores[0].HeldCount(); n != 0 {
			t.Errorf("%s: a stored %d blocks, want none", tc.name, n)
		}
	}
}

// TestPushChecked: Push refuses stripes that cannot be meant.
func TestPushChecked(t *testing.T) {
	ctx := context.Background()
	w := newPushSwarm(ctx, t, 64<<10, 1)
	a, self := w.peers[0], w.peers[0].ID()
	other := w.seed.ID()
	root := w.man.ID()
	for _, tc := range []struct {
		name string
		root chunker.ID
		st   Stripes
	}{
		{"no stripes", root, Stripes{}},
		{"too many stripes", root, Stripes{Parents: make([]lpeer.ID, swarm.MaxStripes+1)}},
		{"children of more stripes than parents", root, Stripes{Parents: []lpeer.ID{other}, Children: [][]lpeer.ID{nil, {other}}}},
		{"own child", root, Stripes{Parents: []lpeer.ID{other}, Children: [][]lpeer.ID{{self}}}},
		{"child twice", root, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{other, other}}}},
		{"own parent", root, Stripes{Parents: []lpeer.ID{self}}},
		{"negative repair", root, Stripes{Parents: []lpeer.ID{other}, RepairAfter: -1}},
		{"content not served", chunker.ID{1}, Stripes{Parents: []lpeer.ID{other}}},
	} {
		if err := a.Push(tc.root, tc.st); err == nil {
			t.Errorf("%s: Push took it", tc.name)
		}
	}
	if err := a.Push(root, Stripes{Parents: []lpeer.ID{other}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Push(root, Stripes{Parents: []lpeer.ID{other}}); err == nil {
		t.Error("a second Push took it")
	}
	// The Byers baseline's coded blocks are not pushed.
	byers := newTestPeer(t)
	tk, err := byers.Seed(ctx, writeRandomFile(t, t.TempDir(), "b.bin", 64<<10, 3), WithBlockSize(16<<10), WithByers(ByersParams{K: 4, N: 8}))
	if err != nil {
		t.Fatal(err)
	}
	if err := byers.Push(tk.Root, Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{self}}}); err == nil {
		t.Error("Push took a Byers seed's content")
	}
}

// TestPushRetried: a parent whose pushes are refused (the child has no
// place yet) tries again a repair time later with what it had queued, so
// the seed's place may be set first after all.
func TestPushRetried(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newPushSwarm(ctx, t, 512<<10, 1)
	a := w.peers[0]
	if err := w.seed.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{""}, Children: [][]lpeer.ID{{a.ID()}}, RepairAfter: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the first stream is refused meanwhile
	if err := a.Push(w.man.ID(), Stripes{Parents: []lpeer.ID{w.seed.ID()}, RepairAfter: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	s := w.fetchAll(ctx, t, Stripes{})[0]
	if s.Pushed != s.Blocks || s.Redundant != 0 {
		t.Errorf("%d of %d blocks pushed, %d twice; want all pushed once", s.Pushed, s.Blocks, s.Redundant)
	}
}

// TestPushShed: of the blocks queued for a child, all but the last
// stripes.Backlog that two or more of the parent's watchers hold are shed
// (the child fetches them from its own sources), in order, and no longer
// count as queued; a queue within stripes.Backlog is kept whole.
func TestPushShed(t *testing.T) {
	dir := t.TempDir()
	m := manifestOf(t, writeRandomFile(t, dir, "data.bin", 48*16<<10, 7)) // 48 blocks
	c := emptyContent(t, m, filepath.Join(dir, "out"))
	p := newTestPeer(t)
	tr := swarm.NewTrees(p.nd, c, Stripes{Parents: []lpeer.ID{"par"}}, time.Second)
	// Two watchers hold the even blocks, one the odd ones.
	var even, odd []int
	for i := range m.BlockCount() {
		if i%2 == 0 {
			even = append(even, i)
		} else {
			odd = append(odd, i)
		}
	}
	c.Tally.Set("w1", watchFilter(t, c.Tally.U, even))
	c.Tally.Set("w2", watchFilter(t, c.Tally.U, even))
	c.Tally.Set("w3", watchFilter(t, c.Tally.U, odd))
	for _, tc := range []struct {
		name       string
		q          []int
		kept, shed []int
	}{
		{"within the backlog", seq(0, stripes.Backlog), seq(0, stripes.Backlog), nil},
		{"over it", seq(0, stripes.Backlog+6), append([]int{1, 3, 5}, seq(6, stripes.Backlog+6)...), []int{0, 2, 4}},
	} {
		tr.Lock()
		tr.Tree().Queue(tc.q...)
		kept, shed := slices.Clone(tc.q), []int(nil)
		if len(tc.q) > stripes.Backlog {
			kept, shed = tr.Tree().Shed(kept)
		}
		left := 0
		for _, i := range shed {
			left += tr.Tree().Pending(i)
		}
		tr.Tree().Dequeue(kept...)
		tr.Unlock()
		if !slices.Equal(kept, tc.kept) || !slices.Equal(shed, tc.shed) || left != 0 {
			t.Errorf("%s: kept %v, shed %v (%d still queued); want %v, %v", tc.name, kept, shed, left, tc.kept, tc.shed)
		}
	}
}

// seq returns the integers from a up to b.
func seq(a, b int) []int {
	var s []int
	for i := a; i < b; i++ {
		s = append(s, i)
	}
	return s
}
