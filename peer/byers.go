package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/admit"
	"github.com/reconcile-p2p/reconcile/peer/byers"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// The Byers baseline lives in package peer/byers; this file is its place in
// the service: the options that make a content serve its coded blocks, and
// the coded blocks as the content's altUnits (the units a hello with the
// Coded flag asks for) and as a fetch's target.

// ByersParams sets the Reed–Solomon code of the Byers baseline: the file is cut
// into generations of K source blocks, each coded into N coded blocks (the
// first K are the source blocks themselves). It is byers.Params.
type ByersParams = byers.Params

// MaxByersBytes bounds the content served or fetched with the Byers method:
// its coded blocks are kept in memory (N/K times the content).
const MaxByersBytes = byers.MaxBytes

// A CodedSet is the Reed–Solomon coded blocks of one content that a peer
// serves for the Byers baseline (a seed made with WithByers), with the hash
// of every coded block; it is byers.Set. WithCoded hands parts of it to other
// services of the same process, which then keep one copy of every coded block
// between them (as a testnet of hundreds of peers needs) and bound their
// concurrent decodes together to GOMAXPROCS.
type CodedSet = byers.Set

// WithByers makes Seed also serve the Reed–Solomon coded blocks of the Byers
// baseline, so fetchers may use the byers method. Default: off.
func WithByers(bp ByersParams) SeedOption {
	return func(c *seedConfig) error {
		c.alt = func(ctx context.Context, s *chunker.Store) (altUnits, error) {
			set, err := byers.Encode(ctx, s.Manifest(), s, bp)
			if err != nil {
				return nil, fmt.Errorf("peer: %w", err)
			}
			return newCodedUnits(set)
		}
		return nil
	}
}

// WithCoded makes Serve also serve the coded blocks held of the Byers
// baseline's coded set cs (of the same content), shared with cs rather than
// copied; a later FetchServed with WithMethod(reconcile.Byers) fetches the
// rest of them and decodes the store's blocks from them. Default: no coded
// blocks (a Byers fetch of the content then gets the coded header from its
// sources).
func WithCoded(cs *CodedSet, held []int) ServeOption {
	return func(c *serveConfig) error {
		if cs == nil {
			return errors.New("peer: WithCoded: nil coded set")
		}
		c.alt = func(_ context.Context, s *chunker.Store) (altUnits, error) {
			if !cs.Fits(s.Manifest()) {
				return nil, errors.New("peer: WithCoded: the coded set is not of this content")
			}
			set, err := cs.Share(held)
			if err != nil {
				return nil, fmt.Errorf("peer: %w", err)
			}
			return newCodedUnits(set)
		}
		return nil
	}
}

// CodedSet returns the coded blocks the service serves for root, or ok
// false if it serves none.
func (p *Service) CodedSet(root chunker.ID) (cs *CodedSet, ok bool) {
	c := p.lib.lookup(root[:])
	if c == nil {
		return nil, false
	}
	u, ok := c.altSet().(*codedUnits)
	if !ok {
		return nil, false
	}
	return u.set, true
}

// fetchAlt gets the units a fetch with method downloads instead of the
// store's blocks, from the first of srcs that serves them, checked against
// the manifest m: the coded header of the Byers baseline.
func (p *client) fetchAlt(ctx context.Context, method reconcile.Method, root chunker.ID, srcs []lpeer.ID, m *chunker.Manifest) (altUnits, error) {
	if method != reconcile.Byers {
		return nil, fmt.Errorf("peer: method %v: %w", method, reconcile.ErrMethod)
	}
	var errs []error
	for _, id := range srcs {
		body, err := p.askManifest(ctx, root, id, true, byers.MaxHeaderLen(m))
		if err == nil {
			var set *byers.Set
			if set, err = byers.DecodeHeader(body, m); err == nil {
				return newCodedUnits(set)
			}
			err = byersErr(err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", id, err))
	}
	return nil, fmt.Errorf("%w: no peer serves coded blocks (seed with byers on): %w", ErrNoPeers, errors.Join(errs...))
}

// byersErr wraps the errors of package byers in this package's sentinels.
func byersErr(err error) error {
	switch {
	case errors.Is(err, byers.ErrBadBlock):
		return fmt.Errorf("%w: %w", ErrBadBlock, err)
	case errors.Is(err, byers.ErrMalformed):
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	case errors.Is(err, byers.ErrMismatch):
		return fmt.Errorf("%w: %w", ErrManifestMismatch, err)
	}
	return err
}

// codedUnits are the coded blocks of a content as it serves them (altUnits):
// the set, the responder of their reconciliations and the repeat counts of
// their sends.
type codedUnits struct {
	set   *byers.Set
	recon *responder

	mu    sync.Mutex
	sends *admit.Repeats // made on first use
}

func newCodedUnits(set *byers.Set) (*codedUnits, error) {
	r, err := newResponder(set.Count(), reconcile.Byers)
	if err != nil {
		return nil, err
	}
	return &codedUnits{set: set, recon: r}, nil
}

func (u *codedUnits) plain() bool              { return false }
func (u *codedUnits) count() int               { return u.set.Count() }
func (u *codedUnits) get(i int) ([]byte, bool) { return u.set.Get(i) }
func (u *codedUnits) held() []int              { return u.set.Held() }
func (u *codedUnits) responder() *responder    { return u.recon }
func (u *codedUnits) header() ([]byte, error)  { return u.set.Header(), nil }

func (u *codedUnits) repeats() *admit.Repeats {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sends == nil {
		u.sends = admit.NewRepeats(u.set.Count(), maxSwarm)
	}
	return u.sends
}

func (u *codedUnits) newTarget(ctx context.Context, c *content) (target, error) {
	t, err := byers.NewTarget(ctx, u.set, c.man, c.store)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", byersErr(err))
	}
	return codedTarget{t: t, u: u, c: c}, nil
}

// codedTarget fetches the coded blocks of a content and decodes them into its
// store (byers.Target).
type codedTarget struct {
	t *byers.Target
	u *codedUnits
	c *content
}

func (t codedTarget) responder() *responder    { return t.u.recon }
func (t codedTarget) method() reconcile.Method { return reconcile.Byers }
func (t codedTarget) plain() bool              { return false }
func (t codedTarget) count() int               { return t.t.Count() }
func (t codedTarget) unitSize() int            { return t.t.BlockSize() }
func (t codedTarget) has(i int) bool           { return t.t.Has(i) }
func (t codedTarget) held() []int              { return t.t.Held() }
func (t codedTarget) complete() bool           { return t.c.store.Complete() }
func (t codedTarget) put(i int, data []byte) error {
	return byersErr(t.t.Put(i, data))
}

func (t codedTarget) finish(sum *Summary) error {
	sum.DecodeSeconds = t.t.DecodeTime().Seconds()
	return byersErr(t.t.Err())
}
