package peer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// TestMethods: a fetch with each block method between in-process hosts ends
// byte-identical with no block missed, and re-reconciles as its source gains
// blocks. A hidden seed S serves the file slowly to A only; A starts with the
// first third and fetches from S; B starts with the second third and knows
// only A, so the last third reaches B through A, after A got it from S: B must
// reconcile with A again (and A's cached filters must follow its held set).
func TestMethods(t *testing.T) {
	for _, method := range serve.BlockMethods {
		t.Run(method.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dir := t.TempDir()
			const size, bs = 1<<20 + 777, 16 << 10
			seed, tk, src := seedFile(t, dir, size, bs, WithServeRate(4<<20))
			m := seed.lib.Lookup(tk.Root[:]).Man
			n := m.BlockCount()
			a, b := newTestPeer(t), newTestPeer(t)
			outA, outB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			prefill(t, src, m, outA, func(i int) bool { return i < n/3 })
			prefill(t, src, m, outB, func(i int) bool { return i >= n/3 && i < 2*n/3 })
			stA, err := chunker.OpenStore(ctx, outA)
			if err != nil {
				t.Fatal(err)
			}
			// A serves its third from the start, and fetches the rest from S
			// once B has reconciled with it.
			if _, err := a.Serve(stA); err != nil {
				t.Fatal(err)
			}
			onlyA := tk
			onlyA.Peers = []AddrInfo{a.AddrInfo()}
			started := make(chan struct{})
			type result struct {
				sum *Summary
				err error
			}
			resB := make(chan result, 1)
			go func() {
				var once bool
				s, err := b.Fetch(ctx, onlyA, outB, WithMethod(method), WithProgress(func(Progress) {
					if !once {
						once = true
						close(started)
					}
				}))
				resB <- result{s, err}
			}()
			select {
			case <-started:
			case r := <-resB:
				t.Fatalf("B ended before its first block: %v", r.err)
			}
			if err := a.Host().Connect(ctx, seed.AddrInfo()); err != nil {
				t.Fatal(err)
			}
			sumA, err := a.FetchServed(ctx, tk.Root, WithSources(seed.ID()), WithMethod(method))
			if err != nil {
				t.Fatalf("A: %v", err)
			}
			r := <-resB
			if r.err != nil {
				t.Fatalf("B: %v", r.err)
			}
			sumB := r.sum
			sameFile(t, src, filepath.Join(outA, "data.bin"))
			sameFile(t, src, filepath.Join(outB, "data.bin"))
			for name, sum := range map[string]*Summary{"A": sumA, "B": sumB} {
				if sum.Method != method.String() {
					t.Errorf("%s ran %s, want %s", name, sum.Method, method)
				}
				if sum.Fetched != sum.Blocks-sum.Resumed || sum.Rejected != 0 || sum.FilterBytes == 0 {
					t.Errorf("%s: summary %+v", name, sum)
				}
				if method.Exact() && sum.FalseOffers != 0 {
					t.Errorf("%s: %d false offers with the exact %s", name, sum.FalseOffers, method)
				}
				if (sum.Cells > 0) != (method == reconcile.IBLT) {
					t.Errorf("%s: %d IBLT cells with %s", name, sum.Cells, method)
				}
			}
			// Everything B lacked came from A, the last third only after A
			// had it: B heard of those over its watch of A (one-round
			// methods) or in more sessions (IBLT).
			if len(sumB.Peers) != 1 || sumB.Peers[0].Peer != a.ID().String() {
				t.Fatalf("B's peers: %+v", sumB.Peers)
			}
			ps := sumB.Peers[0]
			later := ps.Rounds >= 2
			if method != reconcile.IBLT {
				later = ps.Haves > 0
			}
			if !later || ps.RoundTrips < ps.Rounds || ps.Blocks != n-(2*n/3-n/3) {
				t.Errorf("B from A: %+v", ps)
			}
			t.Logf("B: %d rounds, %d round trips, %d filter bytes, %d cells; A: %d rounds", sumB.Peers[0].Rounds, sumB.Peers[0].RoundTrips, sumB.FilterBytes, sumB.Cells, len(sumA.Peers))
		})
	}
}

// rawRecon is a hand-driven reconcile stream, for tests that play the fetcher.
type rawRecon struct {
	t  *testing.T
	s  network.Stream
	fr *wire.Reader
}

// openRecon opens a reconcile stream from p to q about root and sends the hello.
func openRecon(ctx context.Context, t *testing.T, p, q *Peer, root chunker.ID, coded bool) *rawRecon {
	t.Helper()
	s, err := p.Host().NewStream(ctx, q.ID(), ProtoReconcile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Reset() })
	s.SetDeadline(time.Now().Add(10 * time.Second))
	r := &rawRecon{t: t, s: s, fr: wire.NewReader(s)}
	r.write(wire.Hello{Root: root[:], Coded: coded}.Append(nil))
	return r
}

func (r *rawRecon) write(body []byte) {
	r.t.Helper()
	b := binary.AppendUvarint(nil, uint64(len(body)))
	if _, err := r.s.Write(append(b, body...)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawRecon) send(m reconcile.Message) {
	r.t.Helper()
	b, err := m.MarshalBinary()
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(append([]byte{wire.TypePayload}, b...))
}

func (r *rawRecon) recv() (reconcile.Message, error) {
	f, err := r.fr.Next(16 << 20)
	if err != nil {
		return reconcile.Message{}, err
	}
	body, err := wire.DecodeTyped(f, wire.TypePayload)
	if err != nil {
		return reconcile.Message{}, err
	}
	return reconcile.Decode(body, reconcile.DefaultLimits)
}

// end reads what is left of the stream: nil if the server closed it
// politely, network.ErrReset if it reset it.
func (r *rawRecon) end() error {
	_, err := io.ReadAll(r.s)
	r.s.Reset() // free the stream slot at once
	return err
}

// pull runs a one-way initiator session of cfg.Method over r and returns it.
func (r *rawRecon) pull(cfg reconcile.Config, u *reconcile.Universe, held *reconcile.Set) *reconcile.Session {
	r.t.Helper()
	cfg.OneWay = true
	s, err := reconcile.NewSession(7, cfg, u, held, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		r.t.Fatal(err)
	}
	for {
		for _, m := range s.Ready() {
			r.send(m)
		}
		if s.Done() {
			return s
		}
		m, err := r.recv()
		if err != nil {
			r.t.Fatalf("%v session: %v", cfg.Method, err)
		}
		s.Step(m)
	}
}

// TestServeMethods: a server answers a session of every block method with the
// blocks the fetcher lacks (exactly, for bitfield and iblt), the same method
// twice with its cached filters, and refuses byers for uncoded content with a
// reject that says so.
func TestServeMethods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	src := writeRandomFile(t, dir, "data.bin", 200*1024, 11)
	m, err := chunker.ChunkPath(ctx, src, 1024)
	if err != nil {
		t.Fatal(err)
	}
	n := m.BlockCount()
	out := filepath.Join(dir, "part")
	serverHas := func(i int) bool { return i%3 != 0 }
	prefill(t, src, m, out, serverHas)
	st, err := chunker.OpenStore(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	server, client := newTestPeer(t), newTestPeer(t)
	tk, err := server.Serve(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Host().Connect(ctx, server.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	u, err := reconcile.NewUniverse(n)
	if err != nil {
		t.Fatal(err)
	}
	held := reconcile.NewSet(n)
	var lacking []int // what the server holds and the client does not
	for i := range n {
		if i < n/2 {
			held.Add(i)
		} else if serverHas(i) {
			lacking = append(lacking, i)
		}
	}
	for _, method := range append(serve.BlockMethods, serve.BlockMethods...) {
		r := openRecon(ctx, t, client, server, tk.Root, false)
		s := r.pull(reconcile.Config{Method: method}, u, held)
		if s.Err() != nil {
			t.Fatalf("%v: %v", method, s.Err())
		}
		got := s.Wanted()
		if method.Exact() && fmt.Sprint(got) != fmt.Sprint(lacking) {
			t.Errorf("%v offered %v, want %v", method, got, lacking)
		}
		gotSet := serve.HeldSet(n, got)
		for _, i := range lacking {
			if !gotSet.Has(i) {
				t.Errorf("%v did not offer block %d", method, i)
			}
		}
		if err := r.end(); err != nil {
			t.Errorf("%v: stream ended with %v", method, err)
		}
		o := s.Outcome()
		t.Logf("%-8v %d offered (%d lacking), %d bytes, %d cells", method, len(got), len(lacking), o.WireBytes(), o.Cells)
	}
	// Byers is served for coded content only: a clear reject, a polite close.
	r := openRecon(ctx, t, client, server, tk.Root, false)
	bs, err := reconcile.NewSession(9, reconcile.Config{Method: reconcile.Byers, OneWay: true}, u, held, nil)
	if err != nil {
		t.Fatal(err)
	}
	bs.Start()
	for _, msg := range bs.Ready() {
		r.send(msg)
	}
	msg, err := r.recv()
	if err != nil || msg.Type != reconcile.MsgReject || !strings.Contains(msg.Reason, "byers is not served") {
		t.Errorf("byers on uncoded content: %+v, %v", msg, err)
	}
	if err := r.end(); err != nil {
		t.Errorf("byers on uncoded content: stream ended with %v, want a polite close", err)
	}
}

// TestHostileRecon: a fetcher that breaks the reconcile protocol (a message of
// another method mid-session, malformed or out-of-order IBLT cells, a session
// that does not open with a filter) gets its stream reset; the server goes on
// serving.
func TestHostileRecon(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	seed, tk, src := seedFile(t, dir, 256<<10, 4<<10)
	n := seed.lib.Lookup(tk.Root[:]).Man.BlockCount()
	u, err := reconcile.NewUniverse(n)
	if err != nil {
		t.Fatal(err)
	}
	empty := reconcile.NewSet(n)
	// first returns the opening message of a one-way session of method
	// holding nothing: for IBLT, 32 cells of a difference of n > 32, which
	// do not decode, so the server asks for more.
	first := func(method reconcile.Method) reconcile.Message {
		s, err := reconcile.NewSession(5, reconcile.Config{Method: method, OneWay: true}, u, empty, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		return s.Ready()[0]
	}
	cells := first(reconcile.IBLT)
	expectMore := func(r *rawRecon) {
		t.Helper()
		if m, err := r.recv(); err != nil || m.Type != reconcile.MsgMore {
			t.Fatalf("after the first cells: %+v, %v, want a request for more", m, err)
		}
	}
	garbage := cells
	garbage.Filter.Data = []byte{0, 200, 1, 2, 3}
	cases := []struct {
		name string
		play func(r *rawRecon)
	}{
		{"another method mid-session", func(r *rawRecon) {
			r.send(cells)
			expectMore(r)
			r.send(first(reconcile.Complete))
		}},
		{"malformed IBLT cells", func(r *rawRecon) { r.send(garbage) }},
		{"malformed IBLT cells mid-session", func(r *rawRecon) {
			r.send(cells)
			expectMore(r)
			g := garbage
			g.Filter.Data = []byte{32, 5, 9}
			r.send(g)
		}},
		{"IBLT cells again from the start", func(r *rawRecon) {
			r.send(cells)
			expectMore(r)
			r.send(cells)
		}},
		{"IBLT set size changes", func(r *rawRecon) {
			r.send(cells)
			expectMore(r)
			s, _ := reconcile.NewSession(5, reconcile.Config{Method: reconcile.IBLT, OneWay: true, IBLTCells: 64}, u, empty, nil)
			s.Start()
			c := s.Ready()[0]
			c.Filter.Data = c.Filter.Data[:0]
			c.Filter.Data = append(c.Filter.Data, cells.Filter.Data...)
			c.Filter.SetSize = 3
			r.send(c)
		}},
		{"opens with an offer", func(r *rawRecon) {
			r.send(reconcile.Message{Type: reconcile.MsgOffer, Session: 5, Indices: []uint32{1, 2}})
		}},
		{"opens with a request for more", func(r *rawRecon) {
			r.send(reconcile.Message{Type: reconcile.MsgMore, Session: 5, Cells: 1 << 20})
		}},
		{"filter for another universe", func(r *rawRecon) {
			c := cells
			c.Filter.Universe = n + 1
			r.send(c)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A peer is banned after a few malformed messages
			// (TestMalformedBanned): each case is a new peer.
			evil := connectedPeer(ctx, t, seed)
			r := openRecon(ctx, t, evil, seed, tk.Root, false)
			tc.play(r)
			if err := r.end(); !errors.Is(err, network.ErrReset) {
				t.Fatalf("stream ended with %v, want a reset", err)
			}
		})
	}
	// The seed still serves, with the IBLT.
	out := filepath.Join(dir, "out")
	if _, err := newTestPeer(t).Fetch(ctx, tk, out, WithMethod(reconcile.IBLT)); err != nil {
		t.Fatal(err)
	}
	sameFile(t, src, filepath.Join(out, "data.bin"))
}

// TestFiltersFor: a responder keeps one Filters while the held set is the
// same, and makes new ones once it changes (a fetcher gaining blocks).
func TestFiltersFor(t *testing.T) {
	r, err := serve.NewResponder(1000, serve.BlockMethods...)
	if err != nil {
		t.Fatal(err)
	}
	held := []int{1, 5, 999}
	f1, err := r.FiltersFor(serve.HeldSet(1000, held))
	if err != nil {
		t.Fatal(err)
	}
	f2, _ := r.FiltersFor(serve.HeldSet(1000, append([]int(nil), held...)))
	if f1 != f2 {
		t.Error("the same held set got new filters")
	}
	for _, next := range [][]int{{1, 5, 998}, {1, 5, 998, 999}, {}} {
		f3, err := r.FiltersFor(serve.HeldSet(1000, next))
		if err != nil {
			t.Fatal(err)
		}
		if f3 == f2 {
			t.Errorf("held %v kept the filters of %v", next, held)
		}
		// The filters fit the set: a session accepts them.
		if _, err := reconcile.NewSession(1, reconcile.Config{Filters: f3}, r.U, serve.HeldSet(1000, next), nil); err != nil {
			t.Errorf("held %v: %v", next, err)
		}
		f2, held = f3, next
	}
	if _, err := r.FiltersFor(serve.HeldSet(10, nil)); err == nil {
		t.Error("a set of another universe got filters")
	}
}

// TestReconcileTimeLimit: a fetcher that trickles IBLT cells one at a time,
// each within the idle deadline, loses its session after 4 idle periods
// instead of holding a reconcile slot for thousands of round trips.
func TestReconcileTimeLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	const idle = 300 * time.Millisecond
	seed, tk, _ := seedFile(t, dir, 256<<10, 1<<10, WithStreamIdle(idle))
	n := seed.lib.Lookup(tk.Root[:]).Man.BlockCount()
	evil := connectedPeer(ctx, t, seed)
	u, err := reconcile.NewUniverse(n)
	if err != nil {
		t.Fatal(err)
	}
	s, err := reconcile.NewSession(3, reconcile.Config{Method: reconcile.IBLT, OneWay: true}, u, reconcile.NewSet(n), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	r := openRecon(ctx, t, evil, seed, tk.Root, false)
	start := time.Now()
	var err2 error
	for range 100 {
		for _, m := range s.Ready() {
			b, _ := m.MarshalBinary()
			body := append([]byte{wire.TypePayload}, b...)
			if _, err2 = r.s.Write(append(binary.AppendUvarint(nil, uint64(len(body))), body...)); err2 != nil {
				break
			}
		}
		if err2 != nil {
			break
		}
		if _, err2 = r.recv(); err2 != nil {
			break
		}
		time.Sleep(idle / 3)
		// Ask our own side for one more cell, whatever the server asked.
		if err := s.Step(reconcile.Message{Type: reconcile.MsgMore, Session: 3, Cells: 1}); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	if !errors.Is(err2, network.ErrReset) {
		t.Fatalf("after %v the stream ended with %v, want a reset", took, err2)
	}
	if took > 8*idle {
		t.Errorf("the trickling session lasted %v, want about %v", took, 4*idle)
	}
	t.Logf("reset after %v", took)
}
