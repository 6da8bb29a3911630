package serve

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// The reconciliation protocol carries the messages of package reconcile, one
// per payload frame. The fetcher starts a one-way session (it pulls) with the
// method of its fetch; the server takes the method from that first filter
// message, and answers with the indices of the blocks the fetcher lacks (an
// offer), after as many round trips as the method needs (IBLT asks for more
// cells until it decodes). The fetcher then moves the bytes over the blocks
// protocol. Each side pulls for itself, so two fetchers that serve each other
// run one session in each direction.

// BlockMethods are the methods served for the blocks of a store; the units
// a content serves beside them (altUnits) have methods of their own.
var BlockMethods = []reconcile.Method{reconcile.Complete, reconcile.CCBF, reconcile.Bitfield, reconcile.IBLT}

// IsBlockMethod reports whether m reconciles the blocks of a store.
func IsBlockMethod(m reconcile.Method) bool { return slices.Contains(BlockMethods, m) }

// Responder holds what a peer needs to run sessions about one content (or
// its altUnits): the universe (CBF(U) and block addresses cached per
// parameter set), the methods served, and the filters of the held set, kept
// while the set stays the same.
type Responder struct {
	U       *reconcile.Universe
	methods []reconcile.Method

	mu      sync.Mutex
	set     *reconcile.Set     // the set filters was made for
	filters *reconcile.Filters // CBFs, Bloom filters and IBLT cells of set
	used    bool               // filters were used since the last trim
}

// Trim gives back what the responder caches and no session used since the
// last Trim: the universe's entries, and the filters of the held set.
func (r *Responder) Trim() {
	r.U.Trim()
	r.mu.Lock()
	if !r.used {
		r.set, r.filters = nil, nil
	}
	r.used = false
	r.mu.Unlock()
}

// NewResponder returns the responder of a universe of blocks units that
// answers sessions of methods.
func NewResponder(blocks int, methods ...reconcile.Method) (*Responder, error) {
	u, err := reconcile.NewUniverse(blocks)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	return &Responder{U: u, methods: methods}, nil
}

// Serves reports whether sessions of method m are answered.
func (r *Responder) Serves(m reconcile.Method) bool { return slices.Contains(r.methods, m) }

// FiltersFor returns the filters of held for Config.Filters: the cached ones
// while the held set is the one they were made for, new ones (built lazily,
// per parameter set, by the sessions that use them) once it has changed.
// Sessions answered, and this side's own pulls, share them, so a server that
// answers many fetchers builds CBF(S) or the first IBLT cells of S once per
// held-set version.
func (r *Responder) FiltersFor(held *reconcile.Set) (*reconcile.Filters, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.used = true
	if r.filters != nil && held.Universe() == r.set.Universe() && held.Len() == r.set.Len() && held.Difference(r.set) == 0 {
		return r.filters, nil
	}
	f, err := reconcile.NewFilters(r.U, held)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	r.set, r.filters = held.Clone(), f
	return f, nil
}

// ReconcileLimits are the decoder limits of package reconcile for our limits.
func (p *Server) ReconcileLimits() reconcile.Limits {
	return reconcile.Limits{MaxMessage: p.cfg.Limits.MaxFilterBytes + 64<<10, MaxFilterBytes: p.cfg.Limits.MaxFilterBytes}
}

// HeldSet returns the set of held indices in a universe of n.
func HeldSet(n int, held []int) *reconcile.Set {
	s := reconcile.NewSet(n)
	for _, i := range held {
		if i >= 0 && i < n {
			s.Add(i)
		}
	}
	return s
}

// errNotServed ends a session whose method this peer does not serve for the
// content asked about: the reject is sent and the stream closed politely.
var errNotServed = errors.New("peer: method not served")

// methodNames lists methods by name for messages.
func methodNames(ms []reconcile.Method) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.String()
	}
	return strings.Join(names, ", ")
}

// ReconConn carries the messages of one session of package reconcile in
// payload frames of a stream (a reconcile.Conn for reconcile.Drive). When
// offered is set, the indices of the offers sent are recorded in it.
type ReconConn struct {
	SendFrame   func(parts ...[]byte) error
	FlushFrames func() error
	NextFrame   func(max int) ([]byte, error)
	Max         int
	offered     *[]int
	// found, if set, records the indices of the offers the session found,
	// before trim.
	found *[]int
	// trim, if set, chooses the blocks an offer names out of those the
	// session found (a super-seed's choice).
	trim func([]uint32) []uint32
}

// Send writes message m, encoded, as one payload frame (recording the
// offers it names, and trimming them, as the conn says).
func (c *ReconConn) Send(m *reconcile.Message, encoded []byte) error {
	if c.found != nil && (m.Type == reconcile.MsgOffer || m.Type == reconcile.MsgBlocks) {
		*c.found = appendInts((*c.found)[:0], m.Indices)
	}
	if c.trim != nil && m.Type == reconcile.MsgOffer {
		t := *m
		t.Indices = c.trim(m.Indices)
		if len(t.Indices) != len(m.Indices) {
			var err error
			if encoded, err = t.AppendBinary(nil); err != nil {
				return err
			}
			m = &t
		}
	}
	if c.offered != nil && (m.Type == reconcile.MsgOffer || m.Type == reconcile.MsgBlocks) {
		*c.offered = appendInts((*c.offered)[:0], m.Indices)
	}
	return c.SendFrame([]byte{wire.TypePayload}, encoded)
}

// appendInts appends the indices idx to dst as ints.
func appendInts(dst []int, idx []uint32) []int {
	for _, i := range idx {
		dst = append(dst, int(i))
	}
	return dst
}

// Flush sends what Send buffered.
func (c *ReconConn) Flush() error { return c.FlushFrames() }

// Recv returns the body of the next payload frame; an error frame is the
// remote's error, any other frame wire.ErrMalformed.
func (c *ReconConn) Recv() ([]byte, error) {
	f, err := c.NextFrame(c.Max)
	if err != nil {
		return nil, err
	}
	return wire.DecodeTyped(f, wire.TypePayload)
}

// FrameMax bounds a reconciliation frame: a message of package reconcile
// within the filter limit, and its type byte.
func (p *Server) FrameMax() int { return 1 + p.cfg.Limits.MaxFilterBytes + 64<<10 }

// answerSession runs the responder side of one session on ss, with the
// method the first message names, and returns that method, the units the
// answer offered and those the session found the fetcher lacks (more than
// offered when trim, if set, chose fewer: a super-seed's choice), and, when
// keep is set, the CBF the fetcher sent (Complete and CCBF; nil
// otherwise). slot's held lists the units served. A method r does not serve
// is refused with a reject (errNotServed); a disagreement of configurations
// is rejected (errRejected); a peer that breaks the protocol gets an error
// wrapping wire.ErrMalformed, which resets the stream.
func (p *Server) answerSession(ss *Stream, r *Responder, slot func() (held []int, release func(), err error), trim func([]uint32) []uint32, keep bool) (method reconcile.Method, offered, found []int, theirs *cbfalgebra.CBF, err error) {
	lim := p.ReconcileLimits()
	conn := &ReconConn{SendFrame: ss.Send, FlushFrames: ss.Flush, NextFrame: ss.Next, Max: p.FrameMax(), offered: &offered, found: &found, trim: trim}
	body, err := conn.Recv()
	if err != nil {
		return 0, nil, nil, nil, err
	}
	m, err := reconcile.Decode(body, lim)
	if err != nil {
		return 0, nil, nil, nil, fmt.Errorf("%w: %w", wire.ErrMalformed, err)
	}
	if m.Type != reconcile.MsgFilter {
		return 0, nil, nil, nil, fmt.Errorf("%w: session opens with a %v message, not a filter", wire.ErrMalformed, m.Type)
	}
	method = m.Filter.Method
	if !r.Serves(method) {
		reason := fmt.Sprintf("peer: method %v is not served for this content (served: %s)", method, methodNames(r.methods))
		rej := reconcile.Message{Type: reconcile.MsgReject, Session: m.Session, Reason: reason}
		out, err := rej.AppendBinary(nil)
		if err != nil {
			return method, nil, nil, nil, err
		}
		if err := conn.Send(&rej, out); err != nil {
			return method, nil, nil, nil, err
		}
		if err := conn.Flush(); err != nil {
			return method, nil, nil, nil, err
		}
		return method, nil, nil, nil, fmt.Errorf("%w: %v", errNotServed, method)
	}
	theirs, err = p.answerOnce(ss, r, m, method, conn, slot, keep)
	switch {
	case err == nil:
		return method, offered, found, theirs, nil
	case IsConnError(err):
		return method, nil, nil, nil, err
	case reconcile.IsViolation(err):
		// The reject is sent; the stream is reset.
		return method, nil, nil, nil, fmt.Errorf("%w: %w", wire.ErrMalformed, err)
	default:
		return method, nil, nil, nil, fmt.Errorf("%w: %w", errRejected, err)
	}
}

// answerOnce runs the session that answers the first message m, with the
// held set slot returns, over conn, and returns the fetcher's CBF if keep
// is set (see answerSession).
func (p *Server) answerOnce(ss *Stream, r *Responder, m reconcile.Message, method reconcile.Method, conn *ReconConn, slot func() ([]int, func(), error), keep bool) (*cbfalgebra.CBF, error) {
	held, release, err := slot()
	if err != nil {
		return nil, err
	}
	defer release()
	lim := p.ReconcileLimits()
	set := HeldSet(r.U.Blocks(), held)
	filters, err := r.FiltersFor(set)
	if err != nil {
		return nil, err
	}
	s, err := reconcile.NewSession(m.Session, reconcile.Config{Method: method, Limits: lim, Filters: filters, KeepPeerFilter: keep}, r.U, set, nil)
	if err != nil {
		return nil, err
	}
	stepErr := s.Step(m)
	err = reconcile.Drive(p.ctx, s, conn, lim)
	if stepErr != nil && (err == nil || errors.Is(err, stepErr)) {
		err = stepErr
	}
	return s.PeerFilter(), err
}

// IsConnError reports whether err is the failure of a stream under a
// session (reconcile.ConnError), not the session's.
func IsConnError(err error) bool {
	_, ok := errors.AsType[*reconcile.ConnError](err)
	return ok
}

// errRejected ends a session this side rejected for a disagreement of
// configurations (not a violation): the reject is sent, the stream closed.
var errRejected = errors.New("peer: session rejected")
