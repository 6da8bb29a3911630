package testnet

import (
	"math"
	"math/rand/v2"

	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// Access links: every node's upload and download capacity, and the
// classes and rates of Config as written on the command line.

// okRate reports whether r is a rate: not negative and finite.
func okRate(r float64) bool { return r >= 0 && !math.IsInf(r, 0) }

// accessRates returns every node's upload and download capacity (bytes per
// second, 0: no cap): Up and Down, or a class drawn from rng for each node;
// the seed (seedNode >= 0) uploads at SeedUp when that is set.
func (c Config) accessRates(seedNode int, rng *rand.Rand) (up, down []float64) {
	up, down = make([]float64, c.Nodes), make([]float64, c.Nodes)
	var class []int
	if len(c.Classes) > 0 {
		class = ts.AssignClasses(c.Classes, c.Nodes, rng)
	}
	for i := range up {
		up[i], down[i] = c.Up, c.Down
		if class != nil {
			up[i], down[i] = c.Classes[class[i]].Up, c.Classes[class[i]].Down
		}
	}
	if seedNode >= 0 && c.SeedUp > 0 {
		up[seedNode] = c.SeedUp
	}
	return up, down
}

// hasAccess says whether any access link is capped.
func (c Config) hasAccess() bool { return c.Up > 0 || c.Down > 0 || len(c.Classes) > 0 || c.SeedUp > 0 }
