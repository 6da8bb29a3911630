package clock

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// TestScaled: a scaled clock's timers take s times their duration in real
// time, and its Now advances by the clock's duration meanwhile.
func TestScaled(t *testing.T) {
	c := Scaled(20)
	t0, r0 := c.Now(), time.Now()
	<-c.NewTimer(5 * time.Millisecond).Chan()
	real, virt := time.Since(r0), c.Since(t0)
	if real < 100*time.Millisecond {
		t.Fatalf("a 5 ms timer at scale 20 fired after %v of real time, want >= 100 ms", real)
	}
	if virt < 5*time.Millisecond || virt > real/10 {
		t.Fatalf("the clock advanced %v in %v of real time, want about 1/20 of it", virt, real)
	}
	if d := time.Until(Deadline(c, time.Second)); d < 19*time.Second || d > 21*time.Second {
		t.Fatalf("a deadline 1 s away on the clock is %v away in real time, want 20 s", d)
	}
	if Scaled(1) != Real() || Scaled(0) != Real() {
		t.Fatal("Scaled(1) and Scaled(0) should be the wall clock")
	}
}

// TestWithTimeoutFake: a context with a timeout on a fake clock ends when
// the clock is advanced past it, not before.
func TestWithTimeoutFake(t *testing.T) {
	fc := clockwork.NewFakeClock()
	ctx, cancel := WithTimeout(context.Background(), fc, time.Minute)
	defer cancel()
	fc.Advance(59 * time.Second)
	select {
	case <-ctx.Done():
		t.Fatal("ended before its timeout")
	default:
	}
	fc.Advance(time.Second)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not ended 5 s (real) after the clock passed its timeout")
	}
}

// TestWithTimeoutScaled: on a scaled clock the timeout takes s times longer
// in real time.
func TestWithTimeoutScaled(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), Scaled(1000), time.Millisecond)
	defer cancel()
	d, ok := ctx.Deadline()
	if !ok || time.Until(d) < 900*time.Millisecond {
		t.Fatalf("deadline %v away, want about 1 s", time.Until(d))
	}
}
