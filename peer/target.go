package peer

import (
	"errors"
	"fmt"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// target is what a fetch downloads: the blocks of a store, or other units
// decoded into the store (altUnits).
type target interface {
	// responder is the reconciliation universe of the units fetched, with
	// the filters of the held set (shared with the sessions this peer answers).
	responder() *responder
	// method is the reconciliation method.
	method() reconcile.Method
	// plain reports whether the units are the blocks of the store, which
	// watches and the stripe trees deal in (otherwise a hello asks for them
	// with its Coded flag).
	plain() bool
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
	// finish adds to sum what the target measured beside the transfer and
	// returns the first error it met outside put (a failed decode).
	finish(sum *Summary) error
}

// newTarget returns the target of a fetch of c with method m: the blocks of
// its store with a block method, the content's other units otherwise.
func (p *client) newTarget(c *content, m reconcile.Method) (target, error) {
	if isBlockMethod(m) {
		return blockTarget{c, m}, nil
	}
	alt := c.altSet()
	if alt == nil || !alt.responder().serves(m) {
		return nil, fmt.Errorf("peer: content %s is not served with method %v: %w", c.man.ID(), m, reconcile.ErrMethod)
	}
	return alt.newTarget(p.ctx, c)
}

// blockTarget fetches the blocks of a store with one of blockMethods.
type blockTarget struct {
	c *content
	m reconcile.Method
}

func (t blockTarget) responder() *responder    { return t.c.recon }
func (t blockTarget) method() reconcile.Method { return t.m }
func (t blockTarget) plain() bool              { return true }
func (t blockTarget) count() int               { return t.c.man.BlockCount() }
func (t blockTarget) unitSize() int            { return t.c.man.BlockSize() }
func (t blockTarget) has(i int) bool           { return t.c.store.Has(i) }
func (t blockTarget) held() []int              { return t.c.store.Held() }
func (t blockTarget) complete() bool           { return t.c.store.Complete() }
func (t blockTarget) finish(*Summary) error    { return nil }

func (t blockTarget) put(i int, data []byte) error {
	err := t.c.store.PutBlock(i, data)
	if errors.Is(err, chunker.ErrBadBlock) {
		return fmt.Errorf("%w: %w", ErrBadBlock, err)
	}
	return err
}
