package serve

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// writeCounter is a stream that records its writes.
type writeCounter struct {
	network.Stream
	writes [][]byte
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), b...))
	return len(b), nil
}
func (w *writeCounter) SetWriteDeadline(time.Time) error { return nil }
func (w *writeCounter) Conn() network.Conn               { return remoteConn{} }

type remoteConn struct{ network.Conn }

func (remoteConn) RemotePeer() lpeer.ID          { return "remote" }
func (remoteConn) RemoteMultiaddr() ma.Multiaddr { return nil }

// TestServedBlockOneWrite: a served block frame goes out in one write (on
// the mock network every write costs a latency), and decodes to the block.
func TestServedBlockOneWrite(t *testing.T) {
	c := seededContent(t, 100<<10, 16<<10)
	srv := NewServer(context.Background(), nil, Config{Log: slog.New(slog.DiscardHandler), Clock: clock.Real(), Limits: DefaultLimits, StreamIdle: time.Second}, NewLibrary(), nil, nil)
	w := &writeCounter{}
	ss := NewStream(w, c, time.Second, clock.Real())
	for _, i := range []int{0, 6, 3} { // 6 is the short last block
		w.writes = nil
		if err := srv.sendStored(ss, nil, i); err != nil {
			t.Fatal(err)
		}
		if len(w.writes) != 1 {
			t.Fatalf("block %d went out in %d writes", i, len(w.writes))
		}
		f, err := wire.NewReader(bytes.NewReader(w.writes[0])).Next(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		j, data, ok, err := wire.DecodeBlock(f, c.Man.BlockCount())
		want, _ := c.Store.ReadBlock(i, nil)
		if err != nil || !ok || j != i || !bytes.Equal(data, want) {
			t.Fatalf("block %d: got %d, %d bytes, %v, %v", i, j, len(data), ok, err)
		}
	}
}

// seededContent returns the content of a random file of size bytes cut
// into blocks of blockSize, served in place.
func seededContent(t *testing.T, size, blockSize int) *Content {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.bin")
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{1}).Read(data)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := chunker.ChunkPath(ctx, path, blockSize)
	if err != nil {
		t.Fatal(err)
	}
	st, err := chunker.SeedStore(ctx, path, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := NewContent(m, st)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
