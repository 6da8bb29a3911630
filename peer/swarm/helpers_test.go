package swarm

import (
	"context"
	cryptorand "crypto/rand"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/libp2p/go-libp2p"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/serve"
)

// testConfig is a node's configuration with package peer's defaults.
func testConfig() Config {
	return Config{
		Config: serve.Config{
			Log:        slog.New(slog.DiscardHandler),
			Limits:     serve.DefaultLimits,
			StreamIdle: 30 * time.Second,
			Clock:      clock.Real(),
		},
		StallTimeout: 10 * time.Second,
		Window:       16,
		MaxSources:   32,
	}
}

// newTestNode returns a node on a new loopback host, closed when the test
// ends; it serves nothing (no handlers are registered).
func newTestNode(t testing.TB) *Node {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); h.Close() })
	cfg := testConfig()
	lib, guard := serve.NewLibrary(), serve.NewGuard(h, cfg.Config)
	goroutine := func(fn func()) bool { go fn(); return true }
	srv := serve.NewServer(ctx, h, cfg.Config, lib, guard, goroutine)
	return NewNode(ctx, h, cfg, lib, guard, srv, nil, goroutine)
}

// writeRandomFile writes size random bytes (from seed) to dir/name and
// returns its path.
func writeRandomFile(t testing.TB, dir, name string, size int, seed uint64) string {
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

// manifestOf chunks the file at path into 16 KiB blocks.
func manifestOf(t testing.TB, path string) *chunker.Manifest {
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

// emptyContent returns a content of m over a new empty store in dir,
// closed when the test ends.
func emptyContent(t testing.TB, m *chunker.Manifest, dir string) *serve.Content {
	t.Helper()
	st, err := chunker.CreateStore(context.Background(), dir, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := serve.NewContent(m, st)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newKeyID returns the peer id of a new key.
func newKeyID(t testing.TB) lpeer.ID {
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
