package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// returnMemory gives the heap memory the program no longer uses back to the
// operating system, every few seconds, when more than 32 MiB of it is held:
// a long-running seed that answered a burst of large filters (or an attack)
// would otherwise keep its peak resident memory for minutes, until the
// runtime's own scavenger catches up. It runs until ctx ends.
func returnMemory(ctx context.Context) {
	const every, slack = 5 * time.Second, 32 << 20
	sample := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > slack {
			debug.FreeOSMemory()
		}
	}
}
