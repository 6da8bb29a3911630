// Command reconcile seeds and fetches files between peers with complete set
// reconciliation of counting Bloom filters, and runs the experiments of the paper
// behind it (filter algebra, reconciliation, a Transit-Stub/Chord simulation and a
// testnet of real peers).
//
// Every subcommand lives in its own file and registers itself in an init function,
// so the command tree is assembled here without one file that everyone edits.
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/urfave/cli/v2"
)

// commands holds the top-level commands registered by the files of this package.
var commands []*cli.Command

// experiments holds the subcommands of "reconcile experiment".
var experiments []*cli.Command

// register adds a top-level command. It is called from init functions.
func register(c *cli.Command) { commands = append(commands, c) }

// registerExperiment adds a subcommand of "reconcile experiment".
func registerExperiment(c *cli.Command) { experiments = append(experiments, c) }

func newApp() *cli.App {
	cmds := append([]*cli.Command(nil), commands...)
	if len(experiments) > 0 {
		exps := append([]*cli.Command(nil), experiments...)
		sort.Slice(exps, func(i, j int) bool { return exps[i].Name < exps[j].Name })
		cmds = append(cmds, &cli.Command{
			Name:  "experiment",
			Usage: "reproduce the paper's experiments on this machine",
			Description: "Each experiment is deterministic for a given --seed and prints a table;\n" +
				"--json prints one JSON document instead, --plot FILE.png draws a figure.\n\n" +
				"Example:\n   reconcile experiment table1 --trials 10",
			Subcommands: exps,
		})
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return &cli.App{
		Name:  "reconcile",
		Usage: "P2P set reconciliation and file distribution with counting Bloom filter algebra",
		Description: "Peers cut files into blocks and exchange counting Bloom filters (CBFs);\n" +
			"CBF subtraction finds every block the other side lacks (complete reconciliation).\n\n" +
			"Examples:\n" +
			"   reconcile experiment table1 --trials 10   reproduce the paper's Table 1\n" +
			"   reconcile cbf build --m 1024 --k 4 -o a.cbf < items.txt",
		Commands:             cmds,
		EnableBashCompletion: true,
		HideHelpCommand:      false,
	}
}

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "reconcile: "+err.Error())
		os.Exit(1)
	}
}
