package peer

import (
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

// blockMethods are the methods served for the blocks of a store; the coded
// blocks of the Byers baseline are served with reconcile.Byers only.
var blockMethods = []reconcile.Method{reconcile.Complete, reconcile.CCBF, reconcile.Bitfield, reconcile.IBLT}

// isBlockMethod reports whether m reconciles the blocks of a store.
func isBlockMethod(m reconcile.Method) bool { return slices.Contains(blockMethods, m) }

// responder holds what a peer needs to run sessions about one content (or
// its coded blocks): the universe (CBF(U) and block addresses cached per
// parameter set), the methods served, and the filters of the held set, kept
// while the set stays the same.
type responder struct {
	u       *reconcile.Universe
	methods []reconcile.Method

	mu      sync.Mutex
	set     *reconcile.Set     // the set filters was made for
	filters *reconcile.Filters // CBFs, Bloom filters and IBLT cells of set
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
func (p *Service) reconcileLimits() reconcile.Limits {
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

// violation reports whether a session error of package reconcile means the
// peer broke the protocol (a malformed, out-of-order or wrong-method message,
// an index outside the file, cells that do not decode, or a peer describing
// another file), rather than a disagreement of configurations or a reject.
func violation(err error) bool {
	for _, e := range []error{reconcile.ErrMessage, reconcile.ErrLimit, reconcile.ErrVersion,
		reconcile.ErrMethod, reconcile.ErrState, reconcile.ErrIndex, reconcile.ErrUniverse,
		reconcile.ErrDecode, cbfalgebra.ErrCorrupt, cbfalgebra.ErrTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// methodNames lists methods by name for messages.
func methodNames(ms []reconcile.Method) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.String()
	}
	return strings.Join(names, ", ")
}

// answerSession runs the responder side of one session on ss, with the
// method the first message names, and returns that method and the units
// the answer offered. held lists the blocks (or coded blocks) offered. A
// method r does not serve is refused with a reject (errNotServed); a peer
// that breaks the protocol gets an error wrapping ErrMalformed, which resets
// the stream.
func (p *Service) answerSession(ss *serverStream, r *responder, held []int) (reconcile.Method, []int, error) {
	lim := p.reconcileLimits()
	var s *reconcile.Session
	var method reconcile.Method
	var offered []int
	var out []byte
	send := func(msgs ...reconcile.Message) error {
		for _, msg := range msgs {
			if msg.Type == reconcile.MsgOffer || msg.Type == reconcile.MsgBlocks {
				offered = offered[:0]
				for _, i := range msg.Indices {
					offered = append(offered, int(i))
				}
			}
			var err error
			out, err = msg.AppendBinary(out[:0])
			if err != nil {
				return err
			}
			if err := ss.send([]byte{wire.TypePayload}, out); err != nil {
				return err
			}
		}
		return ss.flush()
	}
	for {
		f, err := ss.next(1 + p.cfg.limits.MaxFilterBytes + 64<<10)
		if err != nil {
			return method, nil, err
		}
		body, err := wire.DecodeTyped(f, wire.TypePayload)
		if err != nil {
			return method, nil, err
		}
		m, err := reconcile.Decode(body, lim)
		if err != nil {
			return method, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if s == nil {
			if m.Type != reconcile.MsgFilter {
				return method, nil, fmt.Errorf("%w: session opens with a %v message, not a filter", ErrMalformed, m.Type)
			}
			method = m.Filter.Method
			if !r.serves(method) {
				reason := fmt.Sprintf("peer: method %v is not served for this content (served: %s)", method, methodNames(r.methods))
				if err := send(reconcile.Message{Type: reconcile.MsgReject, Session: m.Session, Reason: reason}); err != nil {
					return method, nil, err
				}
				return method, nil, fmt.Errorf("%w: %v", errNotServed, method)
			}
			set := heldSet(r.u.Blocks(), held)
			filters, err := r.filtersFor(set)
			if err != nil {
				return method, nil, err
			}
			s, err = reconcile.NewSession(m.Session, reconcile.Config{Method: method, Limits: lim, Filters: filters}, r.u, set, nil)
			if err != nil {
				return method, nil, err
			}
		}
		stepErr := s.Step(m)
		if err := send(s.Ready()...); err != nil {
			return method, nil, err
		}
		if stepErr != nil {
			// The reject is sent; a peer that broke the protocol has its
			// stream reset.
			if violation(stepErr) {
				return method, nil, fmt.Errorf("%w: %w", ErrMalformed, stepErr)
			}
			return method, nil, errRejected
		}
		if s.Done() {
			return method, offered, nil
		}
	}
}

// errRejected ends a session this side rejected for a disagreement of
// configurations (not a violation): the reject is sent, the stream closed.
var errRejected = errors.New("peer: session rejected")

// pullSession runs the initiator side of a one-way session of method over
// cs: it sends the filter of held (the first cells, for IBLT, and more as the
// server asks) and returns the session, whose Wanted lists the offered blocks
// this side lacks, and the number of round trips it took.
func (p *Service) pullSession(cs *clientStream, r *responder, method reconcile.Method, held []int) (s *reconcile.Session, trips int, err error) {
	lim := p.reconcileLimits()
	set := heldSet(r.u.Blocks(), held)
	filters, err := r.filtersFor(set)
	if err != nil {
		return nil, 0, err
	}
	s, err = reconcile.NewSession(rand.Uint64(), reconcile.Config{Method: method, OneWay: true, Limits: lim, Filters: filters}, r.u, set, nil)
	if err != nil {
		return nil, 0, err
	}
	if err := s.Start(); err != nil {
		return nil, 0, err
	}
	var out []byte
	for {
		for _, msg := range s.Ready() {
			out, err = msg.AppendBinary(out[:0])
			if err != nil {
				return s, trips, err
			}
			if err := cs.send([]byte{wire.TypePayload}, out); err != nil {
				return s, trips, err
			}
		}
		if err := cs.flush(); err != nil {
			return s, trips, err
		}
		if s.Done() {
			return s, trips, s.Err()
		}
		f, err := cs.next(1 + p.cfg.limits.MaxFilterBytes + 64<<10)
		if err != nil {
			return s, trips, err
		}
		trips++
		body, err := wire.DecodeTyped(f, wire.TypePayload)
		if err != nil {
			return s, trips, err
		}
		m, err := reconcile.Decode(body, lim)
		if err != nil {
			return s, trips, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if err := s.Step(m); err != nil {
			if violation(err) {
				// Send the reject before the caller resets the stream.
				for _, msg := range s.Ready() {
					if out, e := msg.AppendBinary(out[:0]); e == nil {
						cs.send([]byte{wire.TypePayload}, out)
					}
				}
				cs.flush()
				return s, trips, fmt.Errorf("%w: %w", ErrMalformed, err)
			}
			return s, trips, fmt.Errorf("%w: %w", ErrRemote, err)
		}
	}
}
