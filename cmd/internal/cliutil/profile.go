package cliutil

import (
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
)

// Environment variables that have any command profile its own run, for
// measuring the hot paths of a seed, a fetch or a testnet:
//
//	RECONCILE_CPUPROFILE=FILE   a CPU profile (go tool pprof)
//	RECONCILE_EXECTRACE=FILE    a Go execution trace (go tool trace)
//	RECONCILE_HEAPPROFILE=FILE  a heap profile taken at the peak of the live
//	                            heap (go tool pprof -sample_index=inuse_space;
//	                            alloc_space for all the run allocated), and
//	                            FILE.goroutine, the goroutines at that moment,
//	                            and FILE.metrics, the runtime's memory
//	                            classes and goroutine count then
const (
	profileEnv     = "RECONCILE_CPUPROFILE"
	execTraceEnv   = "RECONCILE_EXECTRACE"
	heapProfileEnv = "RECONCILE_HEAPPROFILE"
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
// execTraceEnv, heapProfileEnv) and returns the function that ends them; a profile that
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
	if path := os.Getenv(heapProfileEnv); path != "" {
		stops = append(stops, startPeakHeapProfile(path, 500*time.Millisecond))
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

// startPeakHeapProfile samples the live heap every period and, each time it
// passes its peak so far by 2 %, writes a heap profile to path (and the
// goroutines to path.goroutine, the runtime's memory figures to
// path.metrics), so that the files left hold the peak's. A
// profile that cannot be written is reported on stderr once. The returned
// function stops the sampling.
func startPeakHeapProfile(path string, period time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				continue
			}
			live := sample[0].Value.Uint64()
			if live <= peak+peak/50 {
				continue
			}
			peak = live
			for name, file := range map[string]string{"heap": path, "goroutine": path + ".goroutine"} {
				if err := writeProfile(name, file); err != nil {
					fmt.Fprintf(os.Stderr, "reconcile: %s: %v\n", heapProfileEnv, err)
					return
				}
			}
			if err := writeMemMetrics(path + ".metrics"); err != nil {
				fmt.Fprintf(os.Stderr, "reconcile: %s: %v\n", heapProfileEnv, err)
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// writeProfile writes the named runtime profile to path.
func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeMemMetrics writes the runtime's memory classes and goroutine count
// to path, a "name value" line each.
func writeMemMetrics(path string) error {
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if d.Kind == metrics.KindUint64 && (strings.HasPrefix(d.Name, "/memory/classes/") || strings.HasPrefix(d.Name, "/gc/heap/") || d.Name == "/sched/goroutines:goroutines") {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	var b strings.Builder
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			fmt.Fprintf(&b, "%s %d\n", s.Name, s.Value.Uint64())
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
