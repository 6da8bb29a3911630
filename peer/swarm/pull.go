package swarm

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// PullSession runs the initiator side of a one-way session of method over
// cs: it sends the filter of held (the first cells, for IBLT, and more as the
// server asks) and returns the session, whose Wanted lists the offered blocks
// this side lacks, and the number of round trips it took. With whole set,
// a CBF is sized for the whole universe rather than for held (see
// watchParams).
func (p *Node) PullSession(ctx context.Context, cs *ClientStream, r *serve.Responder, method reconcile.Method, held []int, whole bool) (s *reconcile.Session, trips int, err error) {
	lim := p.srv.ReconcileLimits()
	set := serve.HeldSet(r.U.Blocks(), held)
	filters, err := r.FiltersFor(set)
	if err != nil {
		return nil, 0, err
	}
	cfg := reconcile.Config{Method: method, OneWay: true, Limits: lim, Filters: filters}
	if whole {
		cfg.M, cfg.K = WatchParams(method, r.U.Blocks())
	}
	s, err = reconcile.NewSession(rand.Uint64(), cfg, r.U, set, nil)
	if err != nil {
		return nil, 0, err
	}
	if err := s.Start(); err != nil {
		return nil, 0, err
	}
	err = reconcile.Drive(ctx, s, &serve.ReconConn{SendFrame: cs.Send, FlushFrames: cs.Flush, NextFrame: cs.Next, Max: p.srv.FrameMax()}, lim)
	trips = s.Outcome().Flights / 2
	switch {
	case err == nil, serve.IsConnError(err):
	case reconcile.IsViolation(err):
		// The reject went out first; the caller resets the stream.
		err = fmt.Errorf("%w: %w", wire.ErrMalformed, err)
	default:
		err = fmt.Errorf("%w: %w", wire.ErrRemote, err)
	}
	return s, trips, err
}

// watchFilterMax bounds the CBF of a watch's reconciliation (see
// watchParams).
const watchFilterMax = 1 << 20

// WatchParams returns the counters and hash count of the CBF that starts a
// watch of content of u blocks: sized for all u blocks, not for the ones
// held, when that CBF is at most watchFilterMax bytes (0, 0 otherwise: sized
// for the set). Every watcher then sends filters of the same parameters,
// at their optimal load once they hold the file, so the server's tally of
// its watchers' filters sums them in one group and counts holders closely
// (sched.BlockRarestFilters); and CBF(U) is not saturated, so the answer offers
// few blocks the watcher holds. It costs about 5 bytes a block of the
// content once per watch.
func WatchParams(method reconcile.Method, u int) (m, k int) {
	if method != reconcile.Complete && method != reconcile.CCBF {
		return 0, 0
	}
	p, err := reconcile.Config{Method: method}.Params(u)
	if err != nil || p.M*p.R/8 > watchFilterMax {
		return 0, 0
	}
	return p.M, p.K
}
