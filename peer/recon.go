package peer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// blockMethods are the methods served for the blocks of a store; the units
// a content serves beside them (altUnits) have methods of their own.
var blockMethods = []reconcile.Method{reconcile.Complete, reconcile.CCBF, reconcile.Bitfield, reconcile.IBLT}

// isBlockMethod reports whether m reconciles the blocks of a store.
func isBlockMethod(m reconcile.Method) bool { return slices.Contains(blockMethods, m) }

// responder holds what a peer needs to run sessions about one content (or
// its altUnits): the universe (CBF(U) and block addresses cached per
// parameter set), the methods served, and the filters of the held set, kept
// while the set stays the same.
type responder struct {
	u       *reconcile.Universe
	methods []reconcile.Method

	mu      sync.Mutex
	set     *reconcile.Set     // the set filters was made for
	filters *reconcile.Filters // CBFs, Bloom filters and IBLT cells of set
	used    bool               // filters were used since the last trim
}

// trim gives back what the responder caches and no session used since the
// last trim: the universe's entries, and the filters of the held set.
func (r *responder) trim() {
	r.u.Trim()
	r.mu.Lock()
	if !r.used {
		r.set, r.filters = nil, nil
	}
	r.used = false
	r.mu.Unlock()
}

func newResponder(blocks int, methods ...reconcile.Method) (*responder, error) {
	u, err := reconcile.NewUniverse(blocks)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	return &responder{u: u, methods: methods}, nil
}

// serves reports whether sessions of method m are answered.
func (r *responder) serves(m reconcile.Method) bool { return slices.Contains(r.methods, m) }

// filtersFor returns the filters of held for Config.Filters: the cached ones
// while the held set is the one they were made for, new ones (built lazily,
// per parameter set, by the sessions that use them) once it has changed.
// Sessions answered, and this side's own pulls, share them, so a server that
// answers many fetchers builds CBF(S) or the first IBLT cells of S once per
// held-set version.
func (r *responder) filtersFor(held *reconcile.Set) (*reconcile.Filters, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.used = true
	if r.filters != nil && held.Universe() == r.set.Universe() && held.Len() == r.set.Len() && held.Difference(r.set) == 0 {
		return r.filters, nil
	}
	f, err := reconcile.NewFilters(r.u, held)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	r.set, r.filters = held.Clone(), f
	return f, nil
}

// reconcileLimits are the decoder limits of package reconcile for our limits.
func (p *server) reconcileLimits() reconcile.Limits {
	return reconcile.Limits{MaxMessage: p.cfg.limits.MaxFilterBytes + 64<<10, MaxFilterBytes: p.cfg.limits.MaxFilterBytes}
}

// heldSet returns the set of held indices in a universe of n.
func heldSet(n int, held []int) *reconcile.Set {
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

// reconConn carries the messages of one session of package reconcile in
// payload frames of a stream (a reconcile.Conn for reconcile.Drive). When
// offered is set, the indices of the offers sent are recorded in it.
type reconConn struct {
	send    func(parts ...[]byte) error
	flush   func() error
	next    func(max int) ([]byte, error)
	max     int
	offered *[]int
	// found, if set, records the indices of the offers the session found,
	// before trim.
	found *[]int
	// trim, if set, chooses the blocks an offer names out of those the
	// session found (a super-seed's choice).
	trim func([]uint32) []uint32
}

func (c *reconConn) Send(m *reconcile.Message, encoded []byte) error {
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
	return c.send([]byte{wire.TypePayload}, encoded)
}

// appendInts appends the indices idx to dst as ints.
func appendInts(dst []int, idx []uint32) []int {
	for _, i := range idx {
		dst = append(dst, int(i))
	}
	return dst
}

func (c *reconConn) Flush() error { return c.flush() }

// Recv returns the body of the next payload frame; an error frame is the
// remote's error, any other frame ErrMalformed.
func (c *reconConn) Recv() ([]byte, error) {
	f, err := c.next(c.max)
	if err != nil {
		return nil, err
	}
	return wire.DecodeTyped(f, wire.TypePayload)
}

// frameMax bounds a reconciliation frame: a message of package reconcile
// within the filter limit, and its type byte.
func (p *server) frameMax() int { return 1 + p.cfg.limits.MaxFilterBytes + 64<<10 }

// answerSession runs the responder side of one session on ss, with the
// method the first message names, and returns that method, the units the
// answer offered and those the session found the fetcher lacks (more than
// offered when trim, if set, chose fewer: a super-seed's choice), and, when
// keep is set, the CBF the fetcher sent (Complete and CCBF; nil
// otherwise). slot's held lists the units served. A method r does not serve
// is refused with a reject (errNotServed); a disagreement of configurations
// is rejected (errRejected); a peer that breaks the protocol gets an error
// wrapping ErrMalformed, which resets the stream.
func (p *server) answerSession(ss *serverStream, r *responder, slot func() (held []int, release func(), err error), trim func([]uint32) []uint32, keep bool) (method reconcile.Method, offered, found []int, theirs *cbfalgebra.CBF, err error) {
	lim := p.reconcileLimits()
	conn := &reconConn{send: ss.send, flush: ss.flush, next: ss.next, max: p.frameMax(), offered: &offered, found: &found, trim: trim}
	body, err := conn.Recv()
	if err != nil {
		return 0, nil, nil, nil, err
	}
	m, err := reconcile.Decode(body, lim)
	if err != nil {
		return 0, nil, nil, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if m.Type != reconcile.MsgFilter {
		return 0, nil, nil, nil, fmt.Errorf("%w: session opens with a %v message, not a filter", ErrMalformed, m.Type)
	}
	method = m.Filter.Method
	if !r.serves(method) {
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
	case isConnError(err):
		return method, nil, nil, nil, err
	case reconcile.IsViolation(err):
		// The reject is sent; the stream is reset.
		return method, nil, nil, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	default:
		return method, nil, nil, nil, fmt.Errorf("%w: %w", errRejected, err)
	}
}

// answerOnce runs the session that answers the first message m, with the
// held set slot returns, over conn, and returns the fetcher's CBF if keep
// is set (see answerSession).
func (p *server) answerOnce(ss *serverStream, r *responder, m reconcile.Message, method reconcile.Method, conn *reconConn, slot func() ([]int, func(), error), keep bool) (*cbfalgebra.CBF, error) {
	held, release, err := slot()
	if err != nil {
		return nil, err
	}
	defer release()
	lim := p.reconcileLimits()
	set := heldSet(r.u.Blocks(), held)
	filters, err := r.filtersFor(set)
	if err != nil {
		return nil, err
	}
	s, err := reconcile.NewSession(m.Session, reconcile.Config{Method: method, Limits: lim, Filters: filters, KeepPeerFilter: keep}, r.u, set, nil)
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

// isConnError reports whether err is the failure of a stream under a
// session (reconcile.ConnError), not the session's.
func isConnError(err error) bool {
	_, ok := errors.AsType[*reconcile.ConnError](err)
	return ok
}

// errRejected ends a session this side rejected for a disagreement of
// configurations (not a violation): the reject is sent, the stream closed.
var errRejected = errors.New("peer: session rejected")

// pullSession runs the initiator side of a one-way session of method over
// cs: it sends the filter of held (the first cells, for IBLT, and more as the
// server asks) and returns the session, whose Wanted lists the offered blocks
// this side lacks, and the number of round trips it took. With whole set,
// a CBF is sized for the whole universe rather than for held (see
// watchParams).
func (p *client) pullSession(ctx context.Context, cs *clientStream, r *responder, method reconcile.Method, held []int, whole bool) (s *reconcile.Session, trips int, err error) {
	lim := p.srv.reconcileLimits()
	set := heldSet(r.u.Blocks(), held)
	filters, err := r.filtersFor(set)
	if err != nil {
		return nil, 0, err
	}
	cfg := reconcile.Config{Method: method, OneWay: true, Limits: lim, Filters: filters}
	if whole {
		cfg.M, cfg.K = watchParams(method, r.u.Blocks())
	}
	s, err = reconcile.NewSession(rand.Uint64(), cfg, r.u, set, nil)
	if err != nil {
		return nil, 0, err
	}
	if err := s.Start(); err != nil {
		return nil, 0, err
	}
	err = reconcile.Drive(ctx, s, &reconConn{send: cs.send, flush: cs.flush, next: cs.next, max: p.srv.frameMax()}, lim)
	trips = s.Outcome().Flights / 2
	switch {
	case err == nil, isConnError(err):
	case reconcile.IsViolation(err):
		// The reject went out first; the caller resets the stream.
		err = fmt.Errorf("%w: %w", ErrMalformed, err)
	default:
		err = fmt.Errorf("%w: %w", ErrRemote, err)
	}
	return s, trips, err
}

// watchFilterMax bounds the CBF of a watch's reconciliation (see
// watchParams).
const watchFilterMax = 1 << 20

// watchParams returns the counters and hash count of the CBF that starts a
// watch of content of u blocks: sized for all u blocks, not for the ones
// held, when that CBF is at most watchFilterMax bytes (0, 0 otherwise: sized
// for the set). Every watcher then sends filters of the same parameters,
// at their optimal load once they hold the file, so the server's tally of
// its watchers' filters sums them in one group and counts holders closely
// (BlockRarestFilters); and CBF(U) is not saturated, so the answer offers
// few blocks the watcher holds. It costs about 5 bytes a block of the
// content once per watch.
func watchParams(method reconcile.Method, u int) (m, k int) {
	if method != reconcile.Complete && method != reconcile.CCBF {
		return 0, 0
	}
	p, err := reconcile.Config{Method: method}.Params(u)
	if err != nil || p.M*p.R/8 > watchFilterMax {
		return 0, 0
	}
	return p.M, p.K
}
