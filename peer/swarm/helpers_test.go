package swarm

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/internal/testkit"
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

// writeRandomFile is testkit.WriteRandomFile.
var writeRandomFile = testkit.WriteRandomFile

// manifestOf is testkit.ManifestOf.
var manifestOf = testkit.ManifestOf

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

// newKeyID is testkit.NewKeyID.
var newKeyID = testkit.NewKeyID
