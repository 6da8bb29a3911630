package cbfalgebra

import (
	"time"

	"github.com/reconcile-p2p/reconcile/internal/cputime"
)

// cpuTime returns the CPU time (user + system) the process has used, so that
// benchmarks can report per-core throughput on a shared, loaded machine; 0
// where the platform cannot tell.
func cpuTime() time.Duration {
	d, _ := cputime.Self()
	return d
}
