// Package labbench holds the lab commands that measure this build of
// reconcile on loopback, running its seed and fetch commands as processes
// of their own: reconcile bench (fetch speed against plain TCP and TLS
// copies, one seed against several), reconcile bench update (the bytes and
// time to update an older copy, against rsync), reconcile bench swarm (one
// seed and N fetchers, each with an upload cap, against the fluid bound of
// those caps) and reconcile flood (a seed under attack by a hostile swarm,
// or beside a source that stalls, and whether it stays available and at
// what cost in CPU).
package labbench

import "github.com/urfave/cli/v2"

// Commands returns the commands of this package: bench and flood.
func Commands() []*cli.Command {
	return []*cli.Command{benchCommand(), floodCommand()}
}
