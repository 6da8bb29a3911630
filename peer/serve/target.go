package serve

import (
	"errors"
	"fmt"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// Target is what a fetch downloads: the blocks of a store, or other units
// decoded into the store (altUnits).
type Target interface {
	// Responder is the reconciliation universe of the units fetched, with
	// the filters of the held set (shared with the sessions this peer answers).
	Responder() *Responder
	// Method is the reconciliation Method.
	Method() reconcile.Method
	// Plain reports whether the units are the blocks of the store, which
	// watches and the stripe trees deal in (otherwise a hello asks for them
	// with its Coded flag).
	Plain() bool
	// Count is the number of units; indices lie in [0, Count).
	Count() int
	// UnitSize bounds the payload of one unit.
	UnitSize() int
	// Has reports whether unit i is held.
	Has(i int) bool
	// Held lists the units Held.
	Held() []int
	// Put verifies and stores unit i; a payload that fails verification gives
	// an error wrapping wire.ErrBadBlock, anything else is a local failure.
	Put(i int, data []byte) error
	// Complete reports whether the content is whole.
	Complete() bool
	// Finish returns the time the target spent decoding beside the
	// transfer (zero for plain blocks) and
	// returns the first error it met outside put (a failed decode).
	Finish() (decode time.Duration, err error)
}

// BlockTarget fetches the blocks of a store with one of blockMethods.
type BlockTarget struct {
	c *Content
	m reconcile.Method
}

// Responder is the reconciliation universe of the blocks, with the filters
// of the held set.
func (t BlockTarget) Responder() *Responder { return t.c.Recon }

// Method is the reconciliation method.
func (t BlockTarget) Method() reconcile.Method { return t.m }

// Plain reports whether the units are the blocks of a store.
func (t BlockTarget) Plain() bool { return true }

// Count is the number of units.
func (t BlockTarget) Count() int { return t.c.Man.BlockCount() }

// UnitSize bounds the payload of one unit.
func (t BlockTarget) UnitSize() int { return t.c.Man.BlockSize() }

// Has reports whether unit i is held.
func (t BlockTarget) Has(i int) bool { return t.c.Store.Has(i) }

// Held lists the units held.
func (t BlockTarget) Held() []int { return t.c.Store.Held() }

// Complete reports whether the content is whole.
func (t BlockTarget) Complete() bool { return t.c.Store.Complete() }

// Finish returns the decode time and the first error met outside Put.
func (t BlockTarget) Finish() (time.Duration, error) { return 0, nil }

// Put verifies and stores unit i.
func (t BlockTarget) Put(i int, data []byte) error {
	err := t.c.Store.PutBlock(i, data)
	if errors.Is(err, chunker.ErrBadBlock) {
		return fmt.Errorf("%w: %w", wire.ErrBadBlock, err)
	}
	return err
}

// NewBlockTarget returns the target of a fetch of c's blocks with m, one of
// the block methods (IsBlockMethod).
func NewBlockTarget(c *Content, m reconcile.Method) BlockTarget { return BlockTarget{c, m} }
