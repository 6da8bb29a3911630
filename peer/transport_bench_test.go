package peer

import (
	"context"
	"io"
	"testing"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
)

// BenchmarkTransports moves 64 MiB over one stream between two hosts of this
// process on loopback, for each transport stack a peer could run: the
// ceiling each puts on a fetch.
//
//	go test -run '^$' -bench BenchmarkTransports -benchtime 5x ./peer
func BenchmarkTransports(b *testing.B) {
	big := *yamux.DefaultTransport
	big.MaxMessageSize = 256 << 10
	stacks := []struct {
		name string
		opts []libp2p.Option
	}{
		{"tcp-tls-yamux", []libp2p.Option{libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.Transport(tcp.NewTCPTransport),
			libp2p.Security(libp2ptls.ID, libp2ptls.New), libp2p.Muxer(yamux.ID, yamux.DefaultTransport)}},
		{"tcp-noise-yamux", []libp2p.Option{libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.Transport(tcp.NewTCPTransport),
			libp2p.Security(noise.ID, noise.New), libp2p.Muxer(yamux.ID, yamux.DefaultTransport)}},
		{"tcp-tls-yamux256k", []libp2p.Option{libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.Transport(tcp.NewTCPTransport),
			libp2p.Security(libp2ptls.ID, libp2ptls.New), libp2p.Muxer(yamux.ID, &big)}},
		{"tcp-noise-yamux256k", []libp2p.Option{libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.Transport(tcp.NewTCPTransport),
			libp2p.Security(noise.ID, noise.New), libp2p.Muxer(yamux.ID, &big)}},
		{"quic", []libp2p.Option{libp2p.ListenAddrStrings("/ip4/127.0.0.1/udp/0/quic-v1"), libp2p.Transport(quic.NewTransport)}},
	}
	for _, st := range stacks {
		b.Run(st.name, func(b *testing.B) {
			mk := func() host.Host {
				h, err := libp2p.New(append(st.opts, libp2p.DisableMetrics(), libp2p.DisableRelay())...)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { h.Close() })
				return h
			}
			a, c := mk(), mk()
			benchStream(b, a, c)
		})
	}
}

// benchStream moves 64 MiB from a to c over one stream per iteration, in
// writes of 256 KiB (one block each).
func benchStream(b *testing.B, a, c host.Host) {
	got := make(chan int64)
	c.SetStreamHandler("/bench/raw", func(s network.Stream) {
		n, _ := io.CopyBuffer(io.Discard, s, make([]byte, 256<<10))
		s.Close()
		got <- n
	})
	ctx := context.Background()
	if err := a.Connect(ctx, c.Peerstore().PeerInfo(c.ID())); err != nil {
		if err := a.Connect(ctx, hostInfo(c)); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 256<<10)
	const chunks = 256
	b.SetBytes(chunks * int64(len(buf)))
	b.ResetTimer()
	for range b.N {
		s, err := a.NewStream(ctx, c.ID(), "/bench/raw")
		if err != nil {
			b.Fatal(err)
		}
		for range chunks {
			if _, err := s.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		s.CloseWrite()
		if n := <-got; n != chunks*int64(len(buf)) {
			b.Fatalf("got %d bytes", n)
		}
		s.Close()
	}
}

func hostInfo(h host.Host) AddrInfo { return AddrInfo{ID: h.ID(), Addrs: h.Addrs()} }

// BenchmarkDialRanker fetches 32 MiB from a seed, both peers listening on TCP
// and QUIC on loopback, with libp2p's default dial ranking (QUIC first) and
// with this package's (TCP first), in one run.
//
//	go test -run '^$' -bench BenchmarkDialRanker -benchtime 3x ./peer
func BenchmarkDialRanker(b *testing.B) {
	const size = 32 << 20
	ctx := context.Background()
	dir := b.TempDir()
	src := writeRandomFile(b, dir, "data.bin", size, 8)
	for _, rk := range []struct {
		name   string
		ranker network.DialRanker
	}{{"libp2p-default", swarm.DefaultDialRanker}, {"tcp-first", hostkit.TCPFirst}} {
		b.Run(rk.name, func(b *testing.B) {
			opts := []Option{WithListenAddrs("/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"),
				func(c *config) error { c.dialRanker = rk.ranker; return nil }}
			seed := newTestPeer(b, opts...)
			tk, err := seed.Seed(ctx, src)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				f := newTestPeer(b, opts...)
				if _, err := f.Fetch(ctx, tk, b.TempDir()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				conns := f.Host().Network().ConnsToPeer(seed.ID())
				if len(conns) == 0 {
					b.Fatal("no connection to the seed")
				}
				b.ReportMetric(boolMetric(isQUIC(conns[0].RemoteMultiaddr())), "quic")
				f.Close()
				b.StartTimer()
			}
		})
	}
}

func boolMetric(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

func isQUIC(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_QUIC_V1)
	return err == nil
}
