//go:build race

package sizepool

// raceEnabled: the race detector makes sync.Pool drop items at random.
const raceEnabled = true
