package peer

import (
	"context"
	"errors"
	"fmt"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/byers"
	"github.com/reconcile-p2p/reconcile/peer/serve"
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
		c.alt = func(ctx context.Context, s *chunker.Store) (serve.AltUnits, error) {
			set, err := byers.Encode(ctx, s.Manifest(), s, bp)
			if err != nil {
				return nil, fmt.Errorf("peer: %w", err)
			}
			return serve.NewCodedUnits(set)
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
		c.alt = func(_ context.Context, s *chunker.Store) (serve.AltUnits, error) {
			if !cs.Fits(s.Manifest()) {
				return nil, errors.New("peer: WithCoded: the coded set is not of this content")
			}
			set, err := cs.Share(held)
			if err != nil {
				return nil, fmt.Errorf("peer: %w", err)
			}
			return serve.NewCodedUnits(set)
		}
		return nil
	}
}

// CodedSet returns the coded blocks the service serves for root, or ok
// false if it serves none.
func (p *Service) CodedSet(root chunker.ID) (cs *CodedSet, ok bool) {
	c := p.lib.Lookup(root[:])
	if c == nil {
		return nil, false
	}
	u, ok := c.AltSet().(*serve.CodedUnits)
	if !ok {
		return nil, false
	}
	return u.Set, true
}

// fetchAlt gets the units a fetch with method downloads instead of the
// store's blocks, from the first of srcs that serves them, checked against
// the manifest m: the coded header of the Byers baseline.
func (p *client) fetchAlt(ctx context.Context, method reconcile.Method, root chunker.ID, srcs []lpeer.ID, m *chunker.Manifest) (serve.AltUnits, error) {
	if method != reconcile.Byers {
		return nil, fmt.Errorf("peer: method %v: %w", method, reconcile.ErrMethod)
	}
	if m.ContentDefined() {
		return nil, fmt.Errorf("peer: method byers: %w (fetch it with complete)", byers.ErrContentDefined)
	}
	var errs []error
	for _, id := range srcs {
		body, err := p.nd.AskManifest(ctx, root, id, true, byers.MaxHeaderLen(m))
		if err == nil {
			var set *byers.Set
			if set, err = byers.DecodeHeader(body, m); err == nil {
				return serve.NewCodedUnits(set)
			}
			err = serve.ByersErr(err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", id, err))
	}
	return nil, fmt.Errorf("%w: no peer serves coded blocks (seed with byers on): %w", ErrNoPeers, errors.Join(errs...))
}
