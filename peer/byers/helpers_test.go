package byers_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// memStore is a content's store in memory: a byers.BlockReader of data and a
// byers.Store that verifies blocks against the manifest, as chunker.Store
// does.
type memStore struct {
	m *chunker.Manifest

	mu     sync.Mutex
	blocks map[int][]byte
}

// newContent returns the manifest of size random bytes cut into blocks of bs
// bytes, and a store that holds them all.
func newContent(tb testing.TB, size, bs int, seed uint64) (*chunker.Manifest, *memStore) {
	tb.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	m, err := chunker.ChunkReader(context.Background(), "f", 0o644, bytes.NewReader(data), bs)
	if err != nil {
		tb.Fatal(err)
	}
	s := emptyStore(m)
	for i := range m.BlockCount() {
		off, n := m.BlockSpan(i)
		s.blocks[i] = data[off : off+int64(n)]
	}
	return m, s
}

func emptyStore(m *chunker.Manifest) *memStore {
	return &memStore{m: m, blocks: make(map[int][]byte)}
}

func (s *memStore) ReadBlock(i int, buf []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blocks[i]
	if !ok {
		return nil, fmt.Errorf("block %d: %w", i, chunker.ErrNotHeld)
	}
	return append(buf[:0], b...), nil
}

func (s *memStore) Has(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.blocks[i]
	return ok
}

func (s *memStore) PutBlock(i int, data []byte) error {
	if err := chunker.VerifyBlock(s.m, i, data); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocks[i] = bytes.Clone(data)
	return nil
}

func (s *memStore) complete() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.blocks) == s.m.BlockCount()
}
