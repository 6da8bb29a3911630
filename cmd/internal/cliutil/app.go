package cliutil

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// Exit codes of the command.
const (
	// ExitOK is the exit code of a command that did its work.
	ExitOK = 0
	// ExitFailure is the exit code of a command that failed.
	ExitFailure = 1
	// ExitUsage is the exit code of a mistake on the command line.
	ExitUsage = 2
)

// NewApp returns the app called name that runs cmds (sorted by name) with
// the behaviour every command shares: --verbose (-v) before or after any
// command, one-line usage errors with a hint to the command's help, a
// refusal of unexpected arguments and unknown commands, and errors that
// carry the command's name. The commands are copied, not changed, so every
// NewApp starts from the same tree. The caller adds the app's usage,
// description and version, and runs it with Run.
func NewApp(name string, cmds []*cli.Command) *cli.App {
	// The version flag has no short alias: -v is --verbose.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version (module and VCS revision) and exit"}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintln(c.App.Writer, c.App.Version) }
	cli.HelpPrinter = printHelp
	cli.FlagStringer = flagString
	cli.CommandHelpTemplate, cli.SubcommandHelpTemplate = commandHelpTemplate, subcommandHelpTemplate
	cmds = append([]*cli.Command(nil), cmds...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	st := &appState{}
	cmds = prepareCommands(cmds, name, st)
	return &cli.App{
		Name:                 name,
		Commands:             cmds,
		Flags:                []cli.Flag{VerboseFlag()},
		EnableBashCompletion: true,
		Metadata:             map[string]any{stateKey: st},
		// Errors are reported by Run, which picks the exit code; urfave/cli
		// must not exit on its own.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   usageErrorHandler(name, nil),
		Before: func(c *cli.Context) error {
			st.noteVerbose(c)
			return nil
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return unknownCommand(name, c.Args().First(), cmds)
			}
			return cli.ShowAppHelp(c)
		},
	}
}

// Run runs the command line args (args[0] is the program name) of an app
// made by NewApp with the given standard output and error, and returns the
// exit code: every error is reported on stderr as one line (the whole
// wrapped chain with --verbose).
func Run(app *cli.App, args []string, stdout, stderr io.Writer) int {
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
