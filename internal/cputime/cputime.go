// Package cputime reads the CPU time this process has used, on every platform
// the project builds for: getrusage(2) on Unix (Linux, macOS, the BSDs),
// GetProcessTimes on Windows. Benchmarks, the testnet and the lab commands use
// it to report CPU per operation on a shared, loaded machine.
package cputime

import "time"

// Self returns the user and system CPU time this process has used so far, and
// whether the platform could tell. Where it cannot (js/wasm, wasip1, plan9) it
// returns 0 and false; callers then report no CPU figure rather than a wrong one.
func Self() (time.Duration, bool) { return self() }
