package reconcile

// Blocks gives a session the payloads of blocks. With a Blocks store a session
// answers with [MsgBlocks] messages that carry the bytes and stores the blocks it
// receives; without one (nil) it answers with [MsgOffer] indices and the caller moves
// the bytes (see [Session.Wanted]).
type Blocks interface {
	// BlockSize is the size of every block in bytes.
	BlockSize() int
	// Block returns the payload of block i, or nil when it is not held.
	Block(i int) []byte
	// Put stores the payload of block i. The session hands over a private copy,
	// which the store may keep.
	Put(i int, data []byte)
}

// MemBlocks is an in-memory [Blocks] store over a universe of block indices.
type MemBlocks struct {
	size int
	data [][]byte
}

// NewMemBlocks returns an empty store for blocks [0, universe) of size bytes each.
func NewMemBlocks(universe, size int) *MemBlocks {
	return &MemBlocks{size: size, data: make([][]byte, max(universe, 0))}
}

// BlockSize is the size of every block in bytes.
func (b *MemBlocks) BlockSize() int { return b.size }

// Block returns the payload of block i, or nil when it is not held.
func (b *MemBlocks) Block(i int) []byte {
	if i < 0 || i >= len(b.data) {
		return nil
	}
	return b.data[i]
}

// Put stores data (without copying) as block i; indices outside the universe are
// ignored.
func (b *MemBlocks) Put(i int, data []byte) {
	if i >= 0 && i < len(b.data) {
		b.data[i] = data
	}
}
