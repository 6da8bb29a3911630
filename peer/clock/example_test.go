package clock_test

import (
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/reconcile-p2p/reconcile/peer/clock"
)

// A test hands a service a fake clock and advances it instead of sleeping:
// a timer of ten minutes fires as soon as the clock has moved ten minutes.
func Example() {
	fc := clockwork.NewFakeClock()
	var c clock.Clock = fc
	t := c.NewTimer(10 * time.Minute)
	fc.Advance(9 * time.Minute)
	select {
	case <-t.Chan():
		fmt.Println("fired early")
	default:
		fmt.Println("not yet")
	}
	fc.Advance(time.Minute)
	<-t.Chan()
	fmt.Println("fired after", c.Since(fc.Now().Add(-10*time.Minute)))
	// Output:
	// not yet
	// fired after 10m0s
}
