// Package labpaper holds the lab commands that reproduce the paper behind
// reconcile on this machine, without a network: reconcile experiment (the
// paper's Tables 1 to 3 and a comparison of every reconciliation method, run
// by packages paperexp, table3 and methods) and reconcile cbf (counting
// Bloom filter files built, combined and queried by hand).
package labpaper

import "github.com/urfave/cli/v2"

// Commands returns the commands of this package: experiment and cbf.
func Commands() []*cli.Command {
	return []*cli.Command{experimentCommand(), cbfCommand()}
}
