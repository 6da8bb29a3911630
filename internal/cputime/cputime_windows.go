//go:build windows

package cputime

import (
	"syscall"
	"time"
)

func self() (time.Duration, bool) {
	h, err := syscall.GetCurrentProcess() // a pseudo handle: nothing to close
	if err != nil {
		return 0, false
	}
	var creation, exit, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user); err != nil {
		return 0, false
	}
	// Kernel and user times are durations in 100 ns units (not instants:
	// Filetime.Nanoseconds would subtract the 1601 epoch).
	return filetimeDuration(kernel) + filetimeDuration(user), true
}

func filetimeDuration(ft syscall.Filetime) time.Duration {
	return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
}
