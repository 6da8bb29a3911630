package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// profileEnv names the environment variable that, when set to a file name,
// has any command write a CPU profile of its run there (read it with go
// tool pprof); for measuring the hot paths of a seed, a fetch or a testnet.
const profileEnv = "RECONCILE_CPUPROFILE"

// startProfile starts the CPU profile asked for by profileEnv, if any, and
// returns the function that ends it.
func startProfile() func() {
	path := os.Getenv(profileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "reconcile: %s: %v\n", profileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "reconcile: %s: %v\n", profileEnv, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// execTraceEnv names the environment variable that, when set to a file
// name, has any command write a Go execution trace of its run there (read it
// with go tool trace).
const execTraceEnv = "RECONCILE_EXECTRACE"

// startExecTrace starts the execution trace asked for by execTraceEnv, if
// any, and returns the function that ends it.
func startExecTrace() func() {
	path := os.Getenv(execTraceEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "reconcile: %s: %v\n", execTraceEnv, err)
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintf(os.Stderr, "reconcile: %s: %v\n", execTraceEnv, err)
		f.Close()
		return func() {}
	}
	return func() {
		trace.Stop()
		f.Close()
	}
}
