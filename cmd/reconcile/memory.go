package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

// memoryLimitFlag is the seed's --memory-limit.
func memoryLimitFlag() cli.Flag {
	return &cli.StringFlag{Name: "memory-limit", Value: "192MiB",
		Usage: "soft limit of the program's memory (Go's GOMEMLIMIT): the garbage collector works harder near it, so that a burst of requests (or an attack) does not leave the heap at twice its live size; 0 for none, and GOMEMLIMIT in the environment wins"}
}

// applyMemoryLimit sets the soft memory limit of --memory-limit, unless
// GOMEMLIMIT is set. It is soft: a seed that needs more (a large Byers set
// of coded blocks) gets it, at the cost of more garbage collection.
func applyMemoryLimit(c *cli.Context) error {
	n, err := cliutil.FlagSize(c, "memory-limit", 0, 0)
	if err != nil {
		return err
	}
	if n > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(n)
	}
	return nil
}

// returnMemory gives the heap memory the program no longer uses back to the
// operating system: every 2 s when more than 16 MiB of it is free, and every
// 16 s, when the heap holds more than 48 MiB of objects, after a collection
// (an idle program collects only every 2 minutes, so what the peer service
// dropped from its caches would stay). A long-running seed that answered a
// burst of large filters (or an attack) would otherwise keep its peak
// resident memory for minutes. It runs until ctx ends.
func returnMemory(ctx context.Context) {
	const every, slack, objects = 2 * time.Second, 16 << 20, 48 << 20
	samples := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(every)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(samples)
		free, objs := uint64(0), uint64(0)
		if samples[0].Value.Kind() == metrics.KindUint64 {
			free = samples[0].Value.Uint64()
		}
		if samples[1].Value.Kind() == metrics.KindUint64 {
			objs = samples[1].Value.Uint64()
		}
		if free > slack || (tick%8 == 0 && objs > objects) {
			debug.FreeOSMemory()
		}
	}
}
