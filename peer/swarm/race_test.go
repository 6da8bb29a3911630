//go:build race

package swarm

// raceEnabled: the race detector makes sync.Pool drop items at random.
const raceEnabled = true
