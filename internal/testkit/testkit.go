// Package testkit holds the helpers that the tests of several packages
// share: random files, peer ids and the filters a peer sends. Only tests
// import it.
package testkit

import (
	"context"
	cryptorand "crypto/rand"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// WriteRandomFile writes size pseudo-random bytes, the same for the same
// seed, to dir/name and returns its path.
func WriteRandomFile(t testing.TB, dir, name string, size int, seed uint64) string {
	t.Helper()
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// NewKeyID returns the peer id of a new Ed25519 key.
func NewKeyID(t testing.TB) lpeer.ID {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(cryptorand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := lpeer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// HeldFilter returns the CBF of the blocks idx of u, of parameters cfg
// (its counters and hash count; when unset, sized for idx), as package
// reconcile builds it, cloned so that a tally may change it.
func HeldFilter(t testing.TB, u *reconcile.Universe, cfg reconcile.Config, idx []int) *cbfalgebra.CBF {
	t.Helper()
	p, err := cfg.Params(max(1, len(idx)))
	if err != nil {
		t.Fatal(err)
	}
	set, err := reconcile.SetOf(u.Blocks(), idx...)
	if err != nil {
		t.Fatal(err)
	}
	f, err := reconcile.NewFilters(u, set)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.CBF(p)
	if err != nil {
		t.Fatal(err)
	}
	return c.Clone()
}

// ManifestOf chunks the file at path into blocks of 16 KiB.
func ManifestOf(t testing.TB, path string) *chunker.Manifest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := chunker.ChunkReader(context.Background(), filepath.Base(path), 0o644, f, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
