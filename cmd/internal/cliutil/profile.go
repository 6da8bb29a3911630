package cliutil

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/urfave/cli/v2"
)

// Environment variables that have any command profile its own run, for
// measuring the hot paths of a seed, a fetch or a testnet:
//
//	RECONCILE_CPUPROFILE=FILE   a CPU profile (go tool pprof)
//	RECONCILE_EXECTRACE=FILE    a Go execution trace (go tool trace)
const (
	profileEnv   = "RECONCILE_CPUPROFILE"
	execTraceEnv = "RECONCILE_EXECTRACE"
)

// CPUProfileFlag is the hidden flag of seed and fetch that writes a CPU
// profile of the process (reconcile bench --profile passes it).
func CPUProfileFlag() cli.Flag {
	return &cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile of the whole run to this file (go tool pprof)"}
}

// StartCPUProfile starts the CPU profile --cpuprofile asks for, if any; stop
// ends it and closes the file. stop is never nil.
func StartCPUProfile(c *cli.Context) (stop func(), err error) {
	path := c.String("cpuprofile")
	if path == "" {
		return func() {}, nil
	}
	stop, err = startFileProfile(path, pprof.StartCPUProfile, pprof.StopCPUProfile)
	if err != nil {
		return func() {}, fmt.Errorf("--cpuprofile: %w", err)
	}
	return stop, nil
}

// StartEnvProfiles starts the profiles the environment asks for (profileEnv,
// execTraceEnv) and returns the function that ends them; a profile that
// cannot start is reported on stderr and skipped.
func StartEnvProfiles() func() {
	var stops []func()
	for _, p := range []struct {
		env   string
		start func(w io.Writer) error
		stop  func()
	}{{profileEnv, pprof.StartCPUProfile, pprof.StopCPUProfile}, {execTraceEnv, trace.Start, trace.Stop}} {
		path := os.Getenv(p.env)
		if path == "" {
			continue
		}
		stop, err := startFileProfile(path, p.start, p.stop)
		if err != nil {
			fmt.Fprintf(os.Stderr, "reconcile: %s: %v\n", p.env, err)
			continue
		}
		stops = append(stops, stop)
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// startFileProfile creates path and starts a profile writing to it; the
// returned function stops the profile and closes the file.
func startFileProfile(path string, start func(io.Writer) error, stop func()) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		stop()
		f.Close()
	}, nil
}
