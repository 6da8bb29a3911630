package tracestats_test

import (
	"log"
	"os"
	"strings"

	"github.com/reconcile-p2p/reconcile/testnet/tracestats"
)

// A run's trace (testnet.Config.Trace) read back: a seed (node 0) and two fetchers
// in one stripe tree, at time scale 10.
func ExampleRead() {
	trace := `start complete 0 10 0.5000
parent 0 1 0
parent 0 2 1
pushed 1 0 1 0
pushed 2 1 2 0
pushed 3 0 1 1
pushed 4 1 2 1
sent 4.5 0 2 1
done 4 1
done 5 2
`
	runs, err := tracestats.Read(strings.NewReader(trace))
	if err != nil {
		log.Fatal(err)
	}
	if err := runs[0].WriteText(os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// complete: seed node 0, time scale 10, T* 0.50 s; 0 liars, 0 left mid-fetch, 0 joined late; times at the described rates
	//   2 peers that never left: done at 0.40 s (0.80x T*) (median), 0.50 s (1.00x T*) (the last)
	//   units honest peers received from honest peers:
	//     until the seed had sent every unit once, 0.30 s (0.60x T*): 3 pushed (0.0% had it already), 0 fetched
	//     after: 1 pushed (0.0% had it already), 1 fetched (100.0% had it already)
	//   the seed pushed 2 units and sent 1 on request, 0 of those while 10 or more honest peers held the unit
	//   stripes, slowest first: when the peers that never left got the stripe's last unit (median, the last); inner nodes that left or lied
	//     stripe 0: 0.30 s (0.60x T*), 0.40 s (0.80x T*)
}
