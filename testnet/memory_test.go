package testnet

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// BenchmarkMemoryPerPeer runs a small testnet of the shape of the trees run
// in docs/testnet.md (16 KiB blocks, stripe trees, access links, the paper's
// latencies) and reports what each peer holds at the run's peak: its share
// of the live heap (live-B/peer), of the goroutine stacks (stacks-B/peer),
// of the goroutines (goroutines/peer), and of the memory the runtime held
// from the system (held-B/peer, about the resident size). Figures per peer
// grow with the peers' neighbours and with the bytes in flight; the 200 and
// 1,000-peer figures of docs/testnet.md come from reconcile testnet.
//
//	go test ./testnet -run '^$' -bench MemoryPerPeer -benchtime 1x
func BenchmarkMemoryPerPeer(b *testing.B) {
	const nodes = 50
	for b.Loop() {
		cfg := Config{Nodes: nodes, Size: 4 << 20, BlockSize: 16 << 10, Up: 2.5e6, Down: 12.5e6, Trees: 8,
			Method: reconcile.Complete, Topology: topology.Paper(), Dir: b.TempDir(), Seed: 1, Timeout: 5 * time.Minute}
		runtime.GC()
		stop := samplePeaks()
		res, err := Run(context.Background(), cfg)
		peak := stop()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(peak.live)/nodes, "live-B/peer")
		b.ReportMetric(float64(peak.stacks)/nodes, "stacks-B/peer")
		b.ReportMetric(float64(peak.goroutines)/nodes, "goroutines/peer")
		b.ReportMetric(res.PeakMemMiB*(1<<20)/nodes, "held-B/peer")
		b.ReportMetric(res.MedianTStar, "median-xT*")
		b.ReportMetric(res.MaxTStar, "max-xT*")
	}
}

// peaks are the largest runtime figures samplePeaks saw.
type peaks struct {
	live, stacks, goroutines uint64
}

// samplePeaks samples the live heap, the goroutine stacks and the
// goroutines every 50 ms until the returned function is called, which
// returns the peaks of each.
func samplePeaks() (stop func() peaks) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var p peaks
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}, {Name: "/sched/goroutines:goroutines"}}
	read := func() {
		metrics.Read(s)
		p.live = max(p.live, s[0].Value.Uint64())
		p.stacks = max(p.stacks, s[1].Value.Uint64())
		p.goroutines = max(p.goroutines, s[2].Value.Uint64())
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() peaks {
		close(done)
		wg.Wait()
		read()
		return p
	}
}
