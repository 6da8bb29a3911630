package peer

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// BenchmarkFetch fetches a file from one seed over loopback TCP, both peers in
// this process; it reports MB/s of content.
func BenchmarkFetch(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			src := writeRandomFile(b, dir, "data.bin", size, 3)
			seed := newTestPeer(b)
			tk, err := seed.Seed(ctx, src)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := range b.N {
				f := newTestPeer(b, benchOpts...)
				if _, err := f.Fetch(ctx, tk, filepath.Join(dir, fmt.Sprint("out", i))); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}

var benchOpts []Option

// benchSizes are the file sizes of BenchmarkFetch (kept small for CI).
var benchSizes = []int{16 << 20}

// BenchmarkFetchSeeds fetches a file from 1 full seed and from 4 seeds that
// each hold a quarter, all in this process over loopback TCP; the ratio of
// the two MB/s is the multi-seed figure of the issue.
func BenchmarkFetchSeeds(b *testing.B) {
	size := benchSizes[0]
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("seeds=%d", n), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			src := writeRandomFile(b, dir, "data.bin", size, 4)
			full := newTestPeer(b)
			tk, err := full.Seed(ctx, src)
			if err != nil {
				b.Fatal(err)
			}
			m := full.lib.Lookup(tk.Root[:]).Man
			var extra []ma.Multiaddr
			if n > 1 {
				full.Close()
				tk.Peers = nil
				for j := range n {
					part := filepath.Join(dir, fmt.Sprint("part", j))
					prefill(b, src, m, part, func(i int) bool { return i*n/m.BlockCount() == j })
					st, err := chunker.OpenStore(ctx, part)
					if err != nil {
						b.Fatal(err)
					}
					p := newTestPeer(b)
					if _, err := p.Serve(st); err != nil {
						b.Fatal(err)
					}
					if j == 0 {
						tk.Peers = []AddrInfo{p.AddrInfo()}
					} else {
						extra = append(extra, p.Addrs()...)
					}
				}
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := range b.N {
				f := newTestPeer(b, benchOpts...)
				if _, err := f.Fetch(ctx, tk, filepath.Join(dir, fmt.Sprint("out", i)), WithPeers(extra...)); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}

// BenchmarkFrameReader reads 256 KiB block frames from memory.
func BenchmarkFrameReader(b *testing.B) {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	block := make([]byte, 256<<10)
	for range 16 {
		wire.WriteFrame(bw, wire.AppendBlockHeader(nil, 7), block)
	}
	bw.Flush()
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	r := bytes.NewReader(in)
	for range b.N {
		r.Reset(in)
		fr := wire.NewReader(r)
		for range 16 {
			f, err := fr.Next(1 << 20)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, _, err := wire.DecodeBlock(f, 8); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDecodeWant decodes a want of 256 indices.
func BenchmarkDecodeWant(b *testing.B) {
	idx := make([]int, 256)
	for i := range idx {
		idx[i] = i * 1000
	}
	f := wire.AppendWant(nil, idx)
	b.ReportAllocs()
	var dst []int
	for range b.N {
		var err error
		if dst, err = wire.DecodeWant(dst, f, 256, 1<<30); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(f))/256, "bytes/index")
}

// BenchmarkLibp2pStream moves bytes over one libp2p stream between two hosts
// of this process on loopback TCP (TLS, yamux), without blocks, hashing or
// disk: the ceiling the encrypted transport puts on a fetch.
func BenchmarkLibp2pStream(b *testing.B) {
	a, c := newTestPeer(b), newTestPeer(b)
	got := make(chan int64)
	c.Host().SetStreamHandler("/bench/raw", func(s network.Stream) {
		n, _ := io.CopyBuffer(io.Discard, s, make([]byte, 256<<10))
		s.Close()
		got <- n
	})
	ctx := context.Background()
	if err := a.Host().Connect(ctx, c.AddrInfo()); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 256<<10)
	const chunks = 256
	b.SetBytes(chunks * int64(len(buf)))
	b.ResetTimer()
	for range b.N {
		s, err := a.Host().NewStream(ctx, c.ID(), "/bench/raw")
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

// BenchmarkMethods runs the demo's swarm with each block method: a seed of a
// 16 MiB file in 64 KiB blocks and 3 fetchers that fetch from the seed and
// each other, all in this process over loopback TCP. In layout "thirds" each
// fetcher starts with a different third of the blocks (the demo); in
// "lack32nd" each lacks a different 32nd (a small difference, as after a
// resume). It reports the reconciliation traffic of the 3 fetches as a share
// of the block bytes received (recon/block), the fetchers' own filters,
// bitfields or cells (sent-B/op), all reconciliation bytes (recon-B/op, with
// the peers' offers), the sessions and round trips.
//
//	go test -run '^$' -bench BenchmarkMethods -benchtime 3x ./peer
func BenchmarkMethods(b *testing.B) {
	const size, bs, nf = 16 << 20, 64 << 10, 3
	ctx := context.Background()
	dir := b.TempDir()
	src := writeRandomFile(b, dir, "data.bin", size, 6)
	seed := newTestPeer(b)
	tk, err := seed.Seed(ctx, src, WithBlockSize(bs))
	if err != nil {
		b.Fatal(err)
	}
	m := seed.lib.Lookup(tk.Root[:]).Man
	n := m.BlockCount()
	var runs atomic.Int64
	layouts := []struct {
		name string
		has  func(j, i int) bool // whether fetcher j starts with block i
	}{
		{"thirds", func(j, i int) bool { return i*nf/n == j }},
		{"lack32nd", func(j, i int) bool { return i*32/n != j }},
	}
	for _, lay := range layouts {
		for _, method := range serve.BlockMethods {
			b.Run(lay.name+"/"+method.String(), func(b *testing.B) {
				var recon, sent, received int64
				var rounds, trips int
				for range b.N {
					b.StopTimer()
					peers := make([]*Peer, nf)
					outs := make([]string, nf)
					for j := range peers {
						peers[j] = newTestPeer(b, benchOpts...)
						outs[j] = filepath.Join(dir, fmt.Sprint(method, "-", runs.Add(1)))
						prefill(b, src, m, outs[j], func(i int) bool { return lay.has(j, i) })
					}
					b.StartTimer()
					sums := make([]*Summary, nf)
					errs := make([]error, nf)
					var wg sync.WaitGroup
					for j, p := range peers {
						var others []ma.Multiaddr
						for k, q := range peers {
							if k != j {
								others = append(others, q.Addrs()...)
							}
						}
						wg.Add(1)
						go func() {
							defer wg.Done()
							sums[j], errs[j] = p.Fetch(ctx, tk, outs[j], WithPeers(others...), WithMethod(method))
						}()
					}
					wg.Wait()
					b.StopTimer()
					for j, s := range sums {
						if errs[j] != nil {
							b.Fatal(errs[j])
						}
						recon += s.FilterBytes
						sent += s.FilterSent
						received += s.Received
						for _, ps := range s.Peers {
							rounds += ps.Rounds
							trips += ps.RoundTrips
						}
					}
					for j, p := range peers {
						p.Close()
						os.RemoveAll(outs[j])
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(recon)/float64(received), "recon/block")
				b.ReportMetric(float64(sent)/float64(b.N), "sent-B/op")
				b.ReportMetric(float64(recon)/float64(b.N), "recon-B/op")
				b.ReportMetric(float64(rounds)/float64(b.N), "sessions/op")
				b.ReportMetric(float64(trips)/float64(b.N), "round-trips/op")
			})
		}
	}
}
