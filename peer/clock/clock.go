// Package clock is the one clock of package peer and its testnet: every
// timer, deadline, ticker and timestamp of the protocol comes from a Clock
// handed to the service (peer.WithClock), so that tests advance a fake clock
// instead of sleeping and the testnet runs its peers on a scaled clock.
//
// A Clock is github.com/jonboulle/clockwork's: Real is the wall clock, a
// clockwork.FakeClock moves only when a test advances it, and Scaled runs s
// times slower than the wall clock (the testnet's time scale: a timer of d
// fires after d·s of real time, and Now advances by d in that time).
//
// What stays on real time, whatever the clock:
//   - stream deadlines (network.Stream.SetDeadline takes a wall-clock
//     time): Deadline converts the clock's duration to one, stretched by a
//     Scaled clock, and on a fake clock it is the real duration from now;
//   - libp2p's own timers: yamux keepalives, QUIC idle timeouts, the DHT's
//     queries and refreshes, AutoRelay's and the hole puncher's backoffs,
//     the swarm's dial timeouts. No test needs to advance them, and a
//     Scaled clock does not scale them;
//   - measurements of work, not of the protocol's time: the seconds a
//     Byers decode takes (Real).
package clock

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
)

// Clock is the time source of a service: Now, Since, Until, Sleep, After,
// NewTimer, NewTicker and AfterFunc.
type Clock = clockwork.Clock

// Timer is a Clock's timer (its channel is Chan()).
type Timer = clockwork.Timer

// Ticker is a Clock's ticker (its channel is Chan()).
type Ticker = clockwork.Ticker

// wall is the wall clock.
var wall Clock = clockwork.NewRealClock()

// Real returns the wall clock: the default of every service, and the clock
// of what must stay on real time (see the package doc).
func Real() Clock { return wall }

// Scaled returns a clock that runs s times slower than the wall clock (s >
// 0): its timers of d fire after d·s of real time, and its Now advances by
// d in that time, from the wall clock's time when it was made. Scaled(1)
// is the wall clock.
func Scaled(s float64) Clock {
	if s == 1 || s <= 0 {
		return wall
	}
	return &scaled{s: s, origin: time.Now()}
}

// scaled is the clock of Scaled.
type scaled struct {
	s      float64
	origin time.Time
}

// real returns the real duration of d on this clock.
func (c *scaled) real(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return time.Duration(float64(d) * c.s)
}

// virtual returns the duration on this clock of the real duration d.
func (c *scaled) virtual(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.s)
}

func (c *scaled) Now() time.Time {
	return c.origin.Add(c.virtual(time.Since(c.origin)))
}

func (c *scaled) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *scaled) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }
func (c *scaled) Sleep(d time.Duration)           { time.Sleep(c.real(d)) }

func (c *scaled) After(d time.Duration) <-chan time.Time {
	return c.NewTimer(d).Chan()
}

func (c *scaled) NewTimer(d time.Duration) Timer {
	return &scaledTimer{c: c, t: time.NewTimer(c.real(d))}
}

func (c *scaled) AfterFunc(d time.Duration, f func()) Timer {
	return &scaledTimer{c: c, t: time.AfterFunc(c.real(d), f)}
}

func (c *scaled) NewTicker(d time.Duration) Ticker {
	return &scaledTicker{c: c, t: time.NewTicker(c.real(d))}
}

// scaledTimer is a timer of a scaled clock. The times its channel delivers
// are the wall clock's: callers of this package only wait on it.
type scaledTimer struct {
	c *scaled
	t *time.Timer
}

func (t *scaledTimer) Chan() <-chan time.Time     { return t.t.C }
func (t *scaledTimer) Reset(d time.Duration) bool { return t.t.Reset(t.c.real(d)) }
func (t *scaledTimer) Stop() bool                 { return t.t.Stop() }

// scaledTicker is a ticker of a scaled clock (its times are the wall
// clock's, as scaledTimer's).
type scaledTicker struct {
	c *scaled
	t *time.Ticker
}

func (t *scaledTicker) Chan() <-chan time.Time { return t.t.C }
func (t *scaledTicker) Reset(d time.Duration)  { t.t.Reset(t.c.real(d)) }
func (t *scaledTicker) Stop()                  { t.t.Stop() }

// WithTimeout is context.WithTimeout on clock c: on a fake clock the context
// ends when the clock is advanced past d, on a scaled one after d·s of real
// time.
func WithTimeout(ctx context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	switch c := c.(type) {
	case *scaled:
		return context.WithTimeout(ctx, c.real(d))
	case *clockwork.FakeClock:
		return clockwork.WithTimeout(ctx, c, d)
	}
	return context.WithTimeout(ctx, d)
}

// Deadline returns the wall-clock time at which d of clock c has passed
// from now, for a stream's SetDeadline (which only knows real time). On a
// fake clock it is d of real time from now.
func Deadline(c Clock, d time.Duration) time.Time {
	if s, ok := c.(*scaled); ok {
		d = s.real(d)
	}
	return time.Now().Add(d)
}

// WithTimeoutCause is context.WithTimeoutCause on clock c (see WithTimeout):
// the context ends with cause once d of the clock has passed.
func WithTimeoutCause(ctx context.Context, c Clock, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	switch c := c.(type) {
	case *scaled:
		return context.WithTimeoutCause(ctx, c.real(d), cause)
	case *clockwork.FakeClock:
		ctx, cancel := context.WithCancelCause(ctx)
		t := c.AfterFunc(d, func() { cancel(cause) })
		return ctx, func() {
			t.Stop()
			cancel(context.Canceled)
		}
	}
	return context.WithTimeoutCause(ctx, d, cause)
}

// Passed reports whether a wall-clock deadline made by Deadline has passed.
func Passed(deadline time.Time) bool { return time.Now().After(deadline) }
