package cliutil

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// signalNumber is the first SIGINT or SIGTERM a SignalContext caught (0: none).
var signalNumber atomic.Int32

// caughtSignal returns the number of the interrupting signal, or 0.
func caughtSignal() int { return int(signalNumber.Load()) }

// SignalContext is cancelled on SIGINT or SIGTERM, which it records for the
// exit code (128 + the signal). After the first signal the default handling
// is back, so a second Ctrl-C ends the process at once.
func SignalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			if n, ok := s.(syscall.Signal); ok {
				signalNumber.CompareAndSwap(0, int32(n))
			}
			signal.Stop(ch)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel()
	}
}
