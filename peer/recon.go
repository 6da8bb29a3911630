package peer

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// The reconciliation protocol carries the messages of package reconcile, one
// per payload frame. The fetcher starts a one-way session (it pulls); the
// server answers with the indices of the blocks the subtraction of filters
// says the fetcher lacks (an offer), and the fetcher then moves the bytes over
// the blocks protocol. Each side pulls for itself, so two fetchers that serve
// each other run one session in each direction.

// responder holds what a server needs to answer sessions about one content:
// the universe (CBF(U) and block addresses cached per parameter set).
type responder struct {
	u *reconcile.Universe
}

func newResponder(blocks int) (*responder, error) {
	u, err := reconcile.NewUniverse(blocks)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	return &responder{u: u}, nil
}

// reconcileLimits are the decoder limits of package reconcile for our limits.
func (p *Peer) reconcileLimits() reconcile.Limits {
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

// answerSession runs the responder side of one session on ss. held lists the
// blocks (or coded blocks) offered.
func (p *Peer) answerSession(ss *serverStream, r *responder, method reconcile.Method, held []int) (*reconcile.Session, error) {
	lim := p.reconcileLimits()
	var s *reconcile.Session
	var out []byte
	for {
		f, err := ss.next(1 + p.cfg.limits.MaxFilterBytes + 64<<10)
		if err != nil {
			return s, err
		}
		body, err := decodeTyped(f, msgPayload)
		if err != nil {
			return s, err
		}
		m, err := reconcile.Decode(body, lim)
		if err != nil {
			return s, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if s == nil {
			s, err = reconcile.NewSession(m.Session, reconcile.Config{Method: method, Limits: lim}, r.u, heldSet(r.u.Blocks(), held), nil)
			if err != nil {
				return nil, err
			}
		}
		stepErr := s.Step(m)
		for _, msg := range s.Ready() {
			out, err = msg.AppendBinary(out[:0])
			if err != nil {
				return s, err
			}
			if err := ss.send([]byte{msgPayload}, out); err != nil {
				return s, err
			}
		}
		if err := ss.flush(); err != nil {
			return s, err
		}
		if stepErr != nil {
			// The reject is sent; a filter that could not be read at all is
			// a protocol violation.
			if errors.Is(stepErr, reconcile.ErrMessage) || errors.Is(stepErr, reconcile.ErrLimit) {
				return s, fmt.Errorf("%w: %w", ErrMalformed, stepErr)
			}
			return s, nil
		}
		if s.Done() {
			return s, nil
		}
	}
}

// pullSession runs the initiator side of a one-way session over cs: it sends
// the filter of held and returns the session, whose Wanted lists the offered
// blocks this side lacks.
func (p *Peer) pullSession(cs *clientStream, u *reconcile.Universe, method reconcile.Method, held []int) (*reconcile.Session, error) {
	lim := p.reconcileLimits()
	s, err := reconcile.NewSession(rand.Uint64(), reconcile.Config{Method: method, OneWay: true, Limits: lim}, u, heldSet(u.Blocks(), held), nil)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	var out []byte
	for {
		for _, msg := range s.Ready() {
			out, err = msg.AppendBinary(out[:0])
			if err != nil {
				return s, err
			}
			if err := cs.send([]byte{msgPayload}, out); err != nil {
				return s, err
			}
		}
		if err := cs.flush(); err != nil {
			return s, err
		}
		if s.Done() {
			return s, s.Err()
		}
		f, err := cs.next(1 + p.cfg.limits.MaxFilterBytes + 64<<10)
		if err != nil {
			return s, err
		}
		body, err := decodeTyped(f, msgPayload)
		if err != nil {
			return s, err
		}
		m, err := reconcile.Decode(body, lim)
		if err != nil {
			return s, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if err := s.Step(m); err != nil {
			if errors.Is(err, reconcile.ErrIndex) || errors.Is(err, reconcile.ErrMessage) || errors.Is(err, reconcile.ErrState) {
				return s, fmt.Errorf("%w: %w", ErrMalformed, err)
			}
			return s, fmt.Errorf("%w: %w", ErrRemote, err)
		}
	}
}
