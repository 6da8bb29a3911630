// Command reconcile seeds and fetches files between peers with complete set
// reconciliation of counting Bloom filters, and runs the experiments of the paper
// behind it (filter algebra, reconciliation, a Transit-Stub/Chord simulation and a
// testnet of real peers).
//
// Every subcommand lives in its own file and registers itself in an init function,
// so the command tree is assembled here without one file that everyone edits.
//
// Exit status: 0 on success, 1 when a command fails, 2 for a mistake on the
// command line (an unknown command or flag, a value out of range), 130 when
// Ctrl-C (143 when SIGTERM) cut a command's work short. Commands that run until
// interrupted (seed, fetch --seed-after once the fetch is done) exit 0 then.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

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

// Exit codes of the command.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

func init() {
	// The version flag has no short alias: -v is --verbose.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version (module and VCS revision) and exit"}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintln(c.App.Writer, c.App.Version) }
}

func newApp() *cli.App {
	cmds := append([]*cli.Command(nil), commands...)
	if len(experiments) > 0 {
		exps := append([]*cli.Command(nil), experiments...)
		sort.Slice(exps, func(i, j int) bool { return exps[i].Name < exps[j].Name })
		cmds = append(cmds, &cli.Command{
			Name:  "experiment",
			Usage: "reproduce the paper's experiments on this machine",
			Description: "Each experiment is deterministic for a given --seed and prints a table;\n" +
				"--json prints one JSON document instead, --plot FILE.png (or .svg) draws a figure.\n\n" +
				"Example:\n   reconcile experiment table1 --trials 10",
			Subcommands: exps,
		})
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	st := &appState{}
	cmds = prepareCommands(cmds, "reconcile", st)
	app := &cli.App{
		Name:    "reconcile",
		Usage:   "P2P set reconciliation and file distribution with counting Bloom filter algebra",
		Version: versionString(),
		Description: "Peers cut files into blocks and exchange counting Bloom filters (CBFs);\n" +
			"CBF subtraction finds every block the other side lacks (complete reconciliation).\n" +
			"Flags may come before or after a command's arguments. Sizes count in powers of\n" +
			"1024 everywhere (IEC units: 64KiB, 16MiB, 1GiB; K, M and G mean the same), in flags\n" +
			"and in output. -v (--verbose) shows the full error chain and libp2p's own logs.\n\n" +
			"Examples:\n" +
			"   reconcile demo                                    seed, reconcile and fetch on this machine\n" +
			"   reconcile seed movie.mkv --ticket-file t          serve a file, print its ticket\n" +
			"   reconcile fetch --ticket-file t --out big.iso     fetch it on another host (resumable)\n" +
			"   reconcile chunk movie.mkv --json                  a file's manifest summary\n" +
			"   reconcile verify dl                               held, missing and corrupt blocks of a store\n" +
			"   reconcile cbf build --m 1024 --k 4 -o a.cbf < items.txt\n" +
			"   reconcile experiment table1 --trials 10           paper Table 1 (also table2, table3, methods)\n" +
			"   reconcile sim table4                              paper Table 4 on a simulated Transit-Stub network\n" +
			"   reconcile testnet --nodes 200                     200 real peers in one process\n" +
			"   reconcile bench --size 1GiB                       fetch speed against a plain TCP copy\n\n" +
			"Run \"reconcile COMMAND --help\" for a command's flags and more examples.\n" +
			"Exit status: 0 done, 1 failed, 2 bad command line, 130 interrupted (Ctrl-C).",
		Commands:             cmds,
		Flags:                []cli.Flag{VerboseFlag()},
		EnableBashCompletion: true,
		HideHelpCommand:      false,
		Metadata:             map[string]any{stateKey: st},
		// Errors are reported by runMain, which picks the exit code; urfave/cli
		// must not exit on its own.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   usageErrorHandler("reconcile", nil),
		Before: func(c *cli.Context) error {
			st.noteVerbose(c)
			return nil
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return unknownCommand("reconcile", c.Args().First(), cmds)
			}
			return cli.ShowAppHelp(c)
		},
	}
	return app
}

// runMain runs the command line args (args[0] is the program name) with the
// given standard output and error, and returns the exit code: every error is
// reported on stderr as one line (the whole wrapped chain with --verbose).
func runMain(args []string, stdout, stderr io.Writer) int {
	app := newApp()
	app.Writer, app.ErrWriter = stdout, stderr
	err := app.Run(PermuteArgs(app, args))
	return reportError(stderr, err, stateOf(app).verbose)
}

// PermuteArgs moves every flag (and its value) in front of the positional
// arguments of the command it belongs to, so that "reconcile fetch TICKET --out
// DIR" works: urfave/cli v2 stops parsing flags at the first positional
// argument. Command names are recognised only before any positional argument,
// and everything after "--" is left as it is.
func PermuteArgs(app *cli.App, args []string) []string {
	if len(args) == 0 {
		return args
	}
	out := []string{args[0]}
	cmds, flags := app.Commands, app.Flags
	var pending, positional []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			pending = append(pending, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && flagTakesValue(flags, name) {
				if i+1 == len(args) {
					// No value: the parser is to report this flag, so it goes
					// last (the positional arguments no longer matter).
					return append(out, pending...)
				}
				i++
				pending = append(pending, args[i])
			}
		case len(positional) == 0 && findCommand(cmds, a) != nil:
			sub := findCommand(cmds, a)
			out = append(append(out, pending...), a)
			pending = nil
			cmds, flags = sub.Subcommands, sub.Flags
		default:
			positional = append(positional, a)
		}
	}
	return append(append(out, pending...), positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// flagTakesValue reports whether the flag called name is defined in flags and
// takes a value (bool flags do not; unknown flags are assumed not to).
func flagTakesValue(flags []cli.Flag, name string) bool {
	if f := FindFlag(flags, name); f != nil {
		tv, ok := f.(interface{ TakesValue() bool })
		return ok && tv.TakesValue()
	}
	return false
}

// FindFlag returns the flag called name (or with that alias), or nil.
func FindFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func main() {
	SetLibp2pLogging(os.Stderr)
	stop := StartEnvProfiles() // profile.go
	code := runMain(os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
