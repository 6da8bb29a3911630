package admit_test

import (
	"fmt"
	"time"

	"github.com/reconcile-p2p/reconcile/peer/admit"
)

// A peer that keeps sending malformed frames is banned on its third, and
// its ban runs out with time.
func ExampleScores() {
	scores := admit.NewScores[string]()
	deny := admit.NewDenyList[string]()
	now := time.Unix(0, 0)
	for i := 1; i <= 3; i++ {
		if scores.Strike("mallory", admit.StrikeMalformed, now) {
			deny.Ban("mallory", now.Add(10*time.Minute), now)
			fmt.Println("banned after frame", i)
		}
		now = now.Add(time.Second)
	}
	fmt.Println("banned now:", deny.Banned("mallory", now))
	fmt.Println("banned in an hour:", deny.Banned("mallory", now.Add(time.Hour)))
	// Output:
	// banned after frame 3
	// banned now: true
	// banned in an hour: false
}
