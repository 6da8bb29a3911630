//go:build unix

package cbfalgebra

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used, so that
// benchmarks can report per-core throughput on a shared, loaded machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
