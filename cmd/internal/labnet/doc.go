// Package labnet holds the lab commands that measure how a file spreads
// through a swarm: reconcile sim (a Transit-Stub topology with a Chord
// overlay and an event-driven model of reconciliation and of the swarm) and
// reconcile testnet (hundreds of real peers in one process, on links with
// the simulator's latencies). Both take the same network flags and report
// completion times against the same bound, T*.
package labnet

import "github.com/urfave/cli/v2"

// Commands returns the commands of this package: sim and testnet.
func Commands() []*cli.Command {
	return []*cli.Command{simCommand(), testnetCommand()}
}
