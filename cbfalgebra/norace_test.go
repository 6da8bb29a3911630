//go:build !race

package cbfalgebra

// raceEnabled: the race detector makes sync.Pool drop items at random.
const raceEnabled = false
