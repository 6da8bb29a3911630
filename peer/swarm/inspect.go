package swarm

import (
	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer/stripes"
)

// Lock holds the trees' lock, so that Tree may be read (tests and
// diagnostics); Unlock lets it go.
func (t *Trees) Lock() { t.mu.Lock() }

// Unlock lets go of the lock Lock took.
func (t *Trees) Unlock() { t.mu.Unlock() }

// Tree is the trees' policy (package stripes): who is whose parent, child
// and adoptee. Read it with the lock held (Lock).
func (t *Trees) Tree() *stripes.Tree[lpeer.ID] { return t.tree }

// Sources returns the number of sources the fetch downloads from now.
func (f *fetch) Sources() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sources)
}
