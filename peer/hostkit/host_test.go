package hostkit

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
)

// newTestHost builds a host on loopback TCP, closed when the test ends, and
// starts its discovery (announcing nothing).
func newTestHost(t testing.TB, cfg Config) *Host {
	t.Helper()
	if cfg.Listen == nil {
		cfg.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	}
	h, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if err := h.StartDiscovery(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestNewRefuses(t *testing.T) {
	if _, err := New(context.Background(), Config{Reach: Reach{HolePunch: true}}); err == nil {
		t.Error("hole punching without the relay client: no error")
	}
	if _, err := New(context.Background(), Config{Discovery: Discovery{Reannounce: -time.Second}}); err == nil {
		t.Error("negative re-announce period: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(ctx, Config{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled start: %v, want context.Canceled", err)
	}
}

// A host without discovery has no DHT and finds nobody; starting twice a
// discovery that runs is refused.
func TestDiscoveryOff(t *testing.T) {
	h := newTestHost(t, Config{})
	if h.Discovers() || h.DHT() != nil || len(h.LANPeers()) != 0 {
		t.Fatalf("discovery off: Discovers %v, DHT %v, LAN peers %v", h.Discovers(), h.DHT(), h.LANPeers())
	}
	h.Providers(context.Background(), [32]byte{}, func(lpeer.AddrInfo) { t.Error("a provider without a DHT") })

	d := newTestHost(t, Config{Discovery: Discovery{DHT: DHTServer}})
	if !d.Discovers() || d.DHT() == nil {
		t.Fatal("DHT server: no DHT")
	}
	if err := d.StartDiscovery(context.Background(), nil); err == nil {
		t.Fatal("discovery started twice: no error")
	}
}

// The resource manager refuses the inbound streams of the peers the ban
// check names, and keeps their connection.
func TestSetBanned(t *testing.T) {
	const proto = "/hostkit-test/echo/1"
	a, b := newTestHost(t, Config{}), newTestHost(t, Config{})
	a.SetStreamHandler(proto, func(s network.Stream) {
		defer s.Close()
		io.Copy(s, s)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Connect(ctx, lpeer.AddrInfo{ID: a.ID(), Addrs: a.Addrs()}); err != nil {
		t.Fatal(err)
	}
	echo := func() error {
		s, err := b.NewStream(ctx, a.ID(), proto)
		if err != nil {
			return err
		}
		defer s.Close()
		if _, err := s.Write([]byte("hi")); err != nil {
			return err
		}
		s.CloseWrite()
		got, err := io.ReadAll(s)
		if err == nil && string(got) != "hi" {
			err = errors.New("echoed " + string(got))
		}
		return err
	}
	if err := echo(); err != nil {
		t.Fatalf("before the ban: %v", err)
	}
	var asked atomic.Int32
	a.SetBanned(func(id lpeer.ID) bool { asked.Add(1); return id == b.ID() })
	if err := echo(); err == nil {
		t.Fatal("a banned peer's stream was answered")
	}
	if asked.Load() == 0 {
		t.Error("the ban check was never asked")
	}
	if len(a.Network().ConnsToPeer(b.ID())) == 0 {
		t.Error("the banned peer's connection was closed")
	}
	if got := b.Path(a.ID()); got != PathDirect {
		t.Errorf("Path = %q, want %q", got, PathDirect)
	}
	a.SetBanned(nil)
	if err := echo(); err != nil {
		t.Fatalf("after the ban: %v", err)
	}
}
