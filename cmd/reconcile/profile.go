package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/urfave/cli/v2"
)

// cpuProfileFlag is the hidden flag of seed and fetch that writes a CPU
// profile of the process (reconcile bench --profile passes it).
func cpuProfileFlag() cli.Flag {
	return &cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile of the whole run to this file (go tool pprof)"}
}

// startCPUProfile starts the CPU profile --cpuprofile asks for, if any; stop
// ends it and closes the file. stop is never nil.
func startCPUProfile(c *cli.Context) (stop func(), err error) {
	path := c.String("cpuprofile")
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
