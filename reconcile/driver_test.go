package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// chanConn is one end of an in-memory message connection for tests.
type chanConn struct {
	in, out chan []byte
	sent    []Message // what this end sent, in order
}

func chanPipe() (*chanConn, *chanConn) {
	x, y := make(chan []byte, 64), make(chan []byte, 64)
	return &chanConn{in: x, out: y}, &chanConn{in: y, out: x}
}

func (c *chanConn) Send(m *Message, encoded []byte) error {
	c.sent = append(c.sent, *m)
	c.out <- bytes.Clone(encoded)
	return nil
}

func (c *chanConn) Flush() error { return nil }

func (c *chanConn) Recv() ([]byte, error) {
	b, ok := <-c.in
	if !ok {
		return nil, io.EOF
	}
	return b, nil
}

func TestIsViolation(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{ErrMessage, true},
		{fmt.Errorf("x: %w", ErrState), true},
		{fmt.Errorf("reconcile: peer's message: %w", ErrLimit), true},
		{ErrVersion, true},
		{ErrMethod, true},
		{ErrIndex, true},
		{ErrUniverse, true},
		{ErrDecode, true},
		{cbfalgebra.ErrCorrupt, true},
		{cbfalgebra.ErrTooLarge, true},
		{fmt.Errorf("%w: m=1", cbfalgebra.ErrNotHomologous), false},
		{fmt.Errorf("%w: no", ErrRejected), false},
		{&ConnError{Op: "recv", Err: io.EOF}, false},
		{&ConnError{Op: "recv", Err: ErrMessage}, false},
		{fmt.Errorf("peer: %w", &ConnError{Op: "send", Err: ErrLimit}), false},
		{context.Canceled, false},
	} {
		if got := IsViolation(tc.err); got != tc.want {
			t.Errorf("IsViolation(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestDriveMatchesRun: every method, one- and two-way, driven over a
// connection by Drive on both sides gives the figures Run gives.
func TestDriveMatchesRun(t *testing.T) {
	const u = 700
	uv, _ := NewUniverse(u)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range AllMethods {
		for _, oneWay := range []bool{true, false} {
			if m == Byers {
				continue // needs a code; TestDriveByers
			}
			t.Run(fmt.Sprint(m, oneWay), func(t *testing.T) {
				a, b := splitSets(rng, u, 400, 350, 200)
				cfg := Config{Method: m, OneWay: oneWay}
				ra, _ := NewSession(3, cfg, uv, a, nil)
				rb, _ := NewSession(3, cfg, uv, b, nil)
				if err := Run(ra, rb, Limits{}); err != nil {
					t.Fatal(err)
				}
				da, _ := NewSession(3, cfg, uv, a, nil)
				db, _ := NewSession(3, cfg, uv, b, nil)
				ca, cb := chanPipe()
				errB := make(chan error, 1)
				go func() { errB <- Drive(context.Background(), db, cb, Limits{}) }()
				if err := da.Start(); err != nil {
					t.Fatal(err)
				}
				if err := Drive(context.Background(), da, ca, Limits{}); err != nil {
					t.Fatal(err)
				}
				if err := <-errB; err != nil {
					t.Fatal(err)
				}
				for _, p := range [][2]*Session{{ra, da}, {rb, db}} {
					x, y := p[0].Outcome(), p[1].Outcome()
					if x.Sent != y.Sent || x.Received != y.Received || x.Redundant != y.Redundant ||
						x.WireBytes() != y.WireBytes() || x.Cells != y.Cells || oneWay && x.Flights != y.Flights {
						t.Errorf("Run %+v\nDrive %+v", x, y)
					}
				}
				if ra.Held().Len() != da.Held().Len() || rb.Held().Len() != db.Held().Len() {
					t.Errorf("held: Run %d %d, Drive %d %d", ra.Held().Len(), rb.Held().Len(), da.Held().Len(), db.Held().Len())
				}
			})
		}
	}
}

// TestDriveErrors: what Drive returns, and sends, when the peer misbehaves or
// the connection fails.
func TestDriveErrors(t *testing.T) {
	const u = 300
	uv, _ := NewUniverse(u)
	a, b := splitSets(rand.New(rand.NewPCG(3, 4)), u, 200, 200, 100)
	filter := func() []byte { // A's first message
		s, _ := NewSession(1, Config{}, uv, a, nil)
		s.Start()
		w, _ := s.Ready()[0].MarshalBinary()
		return w
	}()
	offer, _ := (&Message{Type: MsgOffer, Session: 1, Indices: []uint32{1, 2}}).MarshalBinary()
	reject, _ := (&Message{Type: MsgReject, Session: 1, Reason: "no"}).MarshalBinary()
	for _, tc := range []struct {
		name      string
		cfg       Config
		in        [][]byte // what the peer sends; then the connection closes
		violation bool
		conn      bool // a ConnError
		is        error
		rejects   bool // the responder sent a MsgReject
	}{
		{"garbage", Config{}, [][]byte{{0x93, 1, 2}}, true, false, ErrMessage, false},
		{"offer first", Config{}, [][]byte{offer}, true, false, ErrState, true},
		{"other method", Config{Method: Bitfield}, [][]byte{filter}, true, false, ErrMethod, true},
		{"not homologous", Config{Seed: 5}, [][]byte{filter}, false, false, cbfalgebra.ErrNotHomologous, true},
		{"reject", Config{}, [][]byte{reject}, false, false, ErrRejected, false},
		{"closed", Config{}, nil, false, true, io.EOF, false},
		{"two filters", Config{}, [][]byte{filter, filter}, true, false, ErrState, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := NewSession(1, tc.cfg, uv, b, nil)
			ours, theirs := chanPipe()
			for _, m := range tc.in {
				theirs.out <- m
			}
			close(theirs.out)
			err := Drive(context.Background(), s, ours, Limits{})
			if err == nil || IsViolation(err) != tc.violation || !errors.Is(err, tc.is) {
				t.Fatalf("Drive: %v (violation %v), want %v (violation %v)", err, IsViolation(err), tc.is, tc.violation)
			}
			if _, ok := errors.AsType[*ConnError](err); ok != tc.conn {
				t.Errorf("ConnError %v, want %v", ok, tc.conn)
			}
			last := len(ours.sent) > 0 && ours.sent[len(ours.sent)-1].Type == MsgReject
			if last != tc.rejects {
				t.Errorf("sent %d messages, ending in a reject: %v, want %v", len(ours.sent), last, tc.rejects)
			}
		})
	}
}

// TestDriveAfterStep: a responder that stepped the first message in itself
// (to choose its method) and then drives counts that flight too.
func TestDriveAfterStep(t *testing.T) {
	const u = 300
	uv, _ := NewUniverse(u)
	a, b := splitSets(rand.New(rand.NewPCG(5, 6)), u, 200, 200, 100)
	A, _ := NewSession(9, Config{Method: IBLT, OneWay: true}, uv, a, nil)
	ca, cb := chanPipe()
	errB, flightsB := make(chan error, 1), make(chan int, 1)
	go func() {
		m, err := Decode(<-cb.in, Limits{})
		if err != nil {
			errB <- err
			return
		}
		B, _ := NewSession(m.Session, Config{Method: m.Filter.Method}, uv, b, nil)
		B.Step(m)
		err = Drive(context.Background(), B, cb, Limits{})
		flightsB <- B.Outcome().Flights
		errB <- err
	}()
	A.Start()
	if err := Drive(context.Background(), A, ca, Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := <-errB; err != nil {
		t.Fatal(err)
	}
	if fb, fa := <-flightsB, A.Outcome().Flights; fb != fa || fa < 4 {
		t.Errorf("responder counted %d flights, initiator %d (want the same, at least 4)", fb, fa)
	}
	if got, want := len(A.Wanted()), b.Difference(a); got != want {
		t.Errorf("offered %d blocks, want %d", got, want)
	}
}

// BenchmarkDriver prices one one-way Complete exchange (4000 blocks, each
// side holding half) moved by Drivers: in memory (Run) and by Drive on both
// sides of an in-memory connection (two goroutines).
func BenchmarkDriver(b *testing.B) {
	const u = 4000
	uv, _ := NewUniverse(u)
	sa, sb := splitSets(rand.New(rand.NewPCG(7, 8)), u, 2000, 2000, 1000)
	cfg := Config{OneWay: true}
	b.Run("Run", func(b *testing.B) {
		for b.Loop() {
			A, _ := NewSession(1, cfg, uv, sa, nil)
			B, _ := NewSession(1, cfg, uv, sb, nil)
			if err := Run(A, B, Limits{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Drive", func(b *testing.B) {
		for b.Loop() {
			A, _ := NewSession(1, cfg, uv, sa, nil)
			B, _ := NewSession(1, cfg, uv, sb, nil)
			ca, cb := chanPipe()
			errB := make(chan error, 1)
			go func() { errB <- Drive(context.Background(), B, cb, Limits{}) }()
			A.Start()
			if err := Drive(context.Background(), A, ca, Limits{}); err != nil {
				b.Fatal(err)
			}
			if err := <-errB; err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzDriverReceive: whatever arrives, a responder's Driver never panics, and
// an error is a violation, a reject, a disagreement of configurations or
// nothing the peer did wrong (never a ConnError: the Sender does not fail).
func FuzzDriverReceive(f *testing.F) {
	uv, _ := NewUniverse(64)
	a := NewSet(64)
	for i := range 30 {
		a.Add(i)
	}
	for _, m := range AllMethods {
		s, _ := NewSession(1, Config{Method: m}, uv, a, nil)
		if m == Byers || s.Start() != nil {
			continue
		}
		for _, msg := range s.Ready() {
			w, _ := msg.MarshalBinary()
			f.Add(w)
		}
	}
	f.Add([]byte{0x93, 1, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, _ := NewSession(1, Config{}, uv, a, nil)
		var q memQueue
		err := NewDriver(s, &q, Limits{MaxFilterBytes: 1 << 16}).Receive(b)
		if _, ok := errors.AsType[*ConnError](err); ok {
			t.Fatalf("ConnError from a Sender that does not fail: %v", err)
		}
		if err != nil && !IsViolation(err) && !errors.Is(err, ErrRejected) &&
			!errors.Is(err, cbfalgebra.ErrNotHomologous) && !errors.Is(err, cbfalgebra.ErrInvalidParams) {
			t.Fatalf("unclassified error: %v", err)
		}
	})
}
