package serve

import (
	"context"

	"github.com/reconcile-p2p/reconcile/peer/admit"
)

// Units are what a content serves over one stream: the blocks of its store,
// or, when the stream's hello sets its Coded flag, the Units the content
// serves beside them (altUnits). A stream chooses them once, from its hello.
type Units interface {
	// Plain reports whether the units are the blocks of the store, which
	// watches, super-seeding and the stripe trees deal in.
	Plain() bool
	// Count is the number of units; indices lie in [0, Count).
	Count() int
	// Get reports whether unit i is held, with its bytes when they are kept
	// in memory (nil when they are read from the store).
	Get(i int) (data []byte, ok bool)
	// Held lists the units Held.
	Held() []int
	// Responder is the reconciliation universe of the units, with the
	// filters of the held set.
	Responder() *Responder
	// Header is the body of the answer to a manifest request: the manifest,
	// or what a fetch of the units needs beside it.
	Header() ([]byte, error)
	// Repeats counts the sends of every unit to every peer (Limits of
	// Repeats, package admit).
	Repeats() *admit.Repeats
}

// AltUnits are units a content serves beside the blocks of its store, which
// a hello asks for with its Coded flag and a fetch downloads with a method
// of their own, decoding them into the store: the Byers baseline's coded
// blocks (byers.go).
type AltUnits interface {
	Units
	// NewTarget returns a fetch of the units into c's store; ctx ends the
	// work it does beside the fetch (decodes).
	NewTarget(ctx context.Context, c *Content) (Target, error)
}

// blockUnits are the blocks of a content's store.
type blockUnits struct{ c *Content }

func (u blockUnits) Plain() bool              { return true }
func (u blockUnits) Count() int               { return u.c.Man.BlockCount() }
func (u blockUnits) Get(i int) ([]byte, bool) { return nil, u.c.Store.Has(i) }
func (u blockUnits) Held() []int              { return u.c.Store.Held() }
func (u blockUnits) Responder() *Responder    { return u.c.Recon }
func (u blockUnits) Header() ([]byte, error)  { return u.c.Man.MarshalBinary() }
func (u blockUnits) Repeats() *admit.Repeats  { return u.c.Sends }
