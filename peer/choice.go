package peer

import "github.com/reconcile-p2p/reconcile/peer/sched"

// BlockChoice is how a fetch chooses, among the blocks a source offered,
// which to ask it for first (see package sched).
type BlockChoice = sched.BlockChoice

// The block choices of WithBlockChoice.
const (
	// BlockRarest asks first for the blocks the fewest sources offered.
	BlockRarest = sched.BlockRarest
	// BlockInOrder asks for the offered blocks in index order from a random start.
	BlockInOrder = sched.BlockInOrder
	// BlockRandom asks for the offered blocks in random order.
	BlockRandom = sched.BlockRandom
	// BlockRarestFilters asks first for the blocks the fewest neighbours
	// hold by the sum of the counting Bloom filters of this peer's watchers.
	BlockRarestFilters = sched.BlockRarestFilters
)
