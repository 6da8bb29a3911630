package labpaper

import "github.com/urfave/cli/v2"

// experimentCommand is reconcile experiment: the paper's experiments, one
// subcommand each.
func experimentCommand() *cli.Command {
	return &cli.Command{
		Name:  "experiment",
		Usage: "reproduce the paper's experiments on this machine",
		Description: "Each experiment is deterministic for a given --seed and prints a table;\n" +
			"--json prints one JSON document instead, --plot FILE.png (or .svg) draws a figure.\n\n" +
			"Example:\n   reconcile experiment table1 --trials 10",
		Subcommands: []*cli.Command{methodsCommand(), table1Command(), table2Command(), table3Command()},
	}
}
