package peer

import (
	"context"

	"github.com/reconcile-p2p/reconcile/peer/admit"
)

// units are what a content serves over one stream: the blocks of its store,
// or, when the stream's hello sets its Coded flag, the units the content
// serves beside them (altUnits). A stream chooses them once, from its hello.
type units interface {
	// plain reports whether the units are the blocks of the store, which
	// watches, super-seeding and the stripe trees deal in.
	plain() bool
	// count is the number of units; indices lie in [0, count).
	count() int
	// get reports whether unit i is held, with its bytes when they are kept
	// in memory (nil when they are read from the store).
	get(i int) (data []byte, ok bool)
	// held lists the units held.
	held() []int
	// responder is the reconciliation universe of the units, with the
	// filters of the held set.
	responder() *responder
	// header is the body of the answer to a manifest request: the manifest,
	// or what a fetch of the units needs beside it.
	header() ([]byte, error)
	// repeats counts the sends of every unit to every peer (Limits of
	// repeats, package admit).
	repeats() *admit.Repeats
}

// altUnits are units a content serves beside the blocks of its store, which
// a hello asks for with its Coded flag and a fetch downloads with a method
// of their own, decoding them into the store: the Byers baseline's coded
// blocks (byers.go).
type altUnits interface {
	units
	// newTarget returns a fetch of the units into c's store; ctx ends the
	// work it does beside the fetch (decodes).
	newTarget(ctx context.Context, c *content) (target, error)
}

// blockUnits are the blocks of a content's store.
type blockUnits struct{ c *content }

func (u blockUnits) plain() bool              { return true }
func (u blockUnits) count() int               { return u.c.man.BlockCount() }
func (u blockUnits) get(i int) ([]byte, bool) { return nil, u.c.store.Has(i) }
func (u blockUnits) held() []int              { return u.c.store.Held() }
func (u blockUnits) responder() *responder    { return u.c.recon }
func (u blockUnits) header() ([]byte, error)  { return u.c.man.MarshalBinary() }
func (u blockUnits) repeats() *admit.Repeats  { return u.c.sends }
