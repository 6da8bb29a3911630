//go:build unix

package labbench

import (
	"os"
	"runtime"
	"syscall"
)

// peakRSSMiB returns the peak resident set size of an ended child process in
// MiB, from its rusage: ru_maxrss counts KiB on Linux and the BSDs, bytes on
// macOS.
func peakRSSMiB(ps *os.ProcessState) float64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return float64(ru.Maxrss) / (1 << 20)
	}
	return float64(ru.Maxrss) / 1024
}
