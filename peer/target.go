package peer

import (
	"errors"
	"fmt"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// target is what a fetch downloads: the blocks of a store (complete
// reconciliation) or the coded blocks of the Byers baseline, decoded into the
// store.
type target interface {
	// responder is the reconciliation universe of the units fetched, with
	// the filters of the held set (shared with the sessions this peer answers).
	responder() *responder
	// method is the reconciliation method.
	method() reconcile.Method
	// coded reports whether the units are coded blocks (the hello flag).
	coded() bool
	// count is the number of units; indices lie in [0, count).
	count() int
	// unitSize bounds the payload of one unit.
	unitSize() int
	// has reports whether unit i is held.
	has(i int) bool
	// held lists the units held.
	held() []int
	// put verifies and stores unit i; a payload that fails verification gives
	// an error wrapping ErrBadBlock, anything else is a local failure.
	put(i int, data []byte) error
	// complete reports whether the content is whole.
	complete() bool
}

// blockTarget fetches the blocks of a store with one of blockMethods.
type blockTarget struct {
	c *content
	m reconcile.Method
}

func (t blockTarget) responder() *responder    { return t.c.recon }
func (t blockTarget) method() reconcile.Method { return t.m }
func (t blockTarget) coded() bool              { return false }
func (t blockTarget) count() int               { return t.c.man.BlockCount() }
func (t blockTarget) unitSize() int            { return t.c.man.BlockSize() }
func (t blockTarget) has(i int) bool           { return t.c.store.Has(i) }
func (t blockTarget) held() []int              { return t.c.store.Held() }
func (t blockTarget) complete() bool           { return t.c.store.Complete() }

func (t blockTarget) put(i int, data []byte) error {
	err := t.c.store.PutBlock(i, data)
	if errors.Is(err, chunker.ErrBadBlock) {
		return fmt.Errorf("%w: %w", ErrBadBlock, err)
	}
	return err
}
