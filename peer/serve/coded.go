package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/admit"
	"github.com/reconcile-p2p/reconcile/peer/byers"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// ByersErr wraps the errors of package byers in this package's sentinels.
func ByersErr(err error) error {
	switch {
	case errors.Is(err, byers.ErrBadBlock):
		return fmt.Errorf("%w: %w", wire.ErrBadBlock, err)
	case errors.Is(err, byers.ErrMalformed):
		return fmt.Errorf("%w: %w", wire.ErrMalformed, err)
	case errors.Is(err, byers.ErrMismatch):
		return fmt.Errorf("%w: %w", wire.ErrManifestMismatch, err)
	}
	return err
}

// CodedUnits are the coded blocks of a content as it serves them (altUnits):
// the set, the responder of their reconciliations and the repeat counts of
// their sends.
type CodedUnits struct {
	Set   *byers.Set
	recon *Responder

	mu    sync.Mutex
	sends *admit.Repeats // made on first use
}

// NewCodedUnits returns the units of the coded set set, as a content serves
// them beside its blocks.
func NewCodedUnits(set *byers.Set) (*CodedUnits, error) {
	r, err := NewResponder(set.Count(), reconcile.Byers)
	if err != nil {
		return nil, err
	}
	return &CodedUnits{Set: set, recon: r}, nil
}

// Plain reports whether the units are the blocks of a store: no.
func (u *CodedUnits) Plain() bool { return false }

// Count is the number of units.
func (u *CodedUnits) Count() int { return u.Set.Count() }

// Get reports whether unit i is held, with its bytes when kept in memory.
func (u *CodedUnits) Get(i int) ([]byte, bool) { return u.Set.Get(i) }

// Held lists the units held.
func (u *CodedUnits) Held() []int { return u.Set.Held() }

// Responder is the reconciliation universe of the units, with the filters
// of the held set.
func (u *CodedUnits) Responder() *Responder { return u.recon }

// Header is the body of the answer to a manifest request.
func (u *CodedUnits) Header() ([]byte, error) { return u.Set.Header(), nil }

// Repeats counts the sends of every unit to every peer.
func (u *CodedUnits) Repeats() *admit.Repeats {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sends == nil {
		u.sends = admit.NewRepeats(u.Set.Count(), maxSwarm)
	}
	return u.sends
}

// NewTarget returns a fetch of the units into c's store.
func (u *CodedUnits) NewTarget(ctx context.Context, c *Content) (Target, error) {
	t, err := byers.NewTarget(ctx, u.Set, c.Man, c.Store)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", ByersErr(err))
	}
	return codedTarget{t: t, u: u, c: c}, nil
}

// codedTarget fetches the coded blocks of a content and decodes them into its
// store (byers.Target).
type codedTarget struct {
	t *byers.Target
	u *CodedUnits
	c *Content
}

func (t codedTarget) Responder() *Responder    { return t.u.recon }
func (t codedTarget) Method() reconcile.Method { return reconcile.Byers }
func (t codedTarget) Plain() bool              { return false }
func (t codedTarget) Count() int               { return t.t.Count() }
func (t codedTarget) UnitSize() int            { return t.t.BlockSize() }
func (t codedTarget) Has(i int) bool           { return t.t.Has(i) }
func (t codedTarget) Held() []int              { return t.t.Held() }
func (t codedTarget) Complete() bool           { return t.c.Store.Complete() }
func (t codedTarget) Put(i int, data []byte) error {
	return ByersErr(t.t.Put(i, data))
}

func (t codedTarget) Finish() (time.Duration, error) {
	return t.t.DecodeTime(), ByersErr(t.t.Err())
}
