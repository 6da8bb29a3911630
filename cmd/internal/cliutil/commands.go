package cliutil

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"
)

// appState is what one run of the app learns while parsing flags that
// Run needs afterwards.
type appState struct {
	verbose bool
}

const stateKey = "reconcile.state"

// stateOf returns the state NewApp stored in app's metadata.
func stateOf(app *cli.App) *appState {
	if st, ok := app.Metadata[stateKey].(*appState); ok {
		return st
	}
	return &appState{}
}

// noteVerbose records --verbose given to c's command or any command above it.
func (st *appState) noteVerbose(c *cli.Context) {
	for _, x := range c.Lineage() {
		if x.Bool("verbose") {
			st.verbose = true
		}
	}
	if st.verbose {
		libp2pLevel.Set(verboseLibp2pLevel)
	}
}

// VerboseFlag is --verbose, -v; every command has it, so it works before or
// after the command's name.
func VerboseFlag() cli.Flag {
	return &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "on error print the whole wrapped error chain; show libp2p's own logs"}
}

// prepareCommands returns copies of the commands of the tree below parent
// with the shared behaviour: --verbose, one-line usage errors with a hint, a
// refusal of unexpected arguments and unknown subcommands, and errors that
// carry the command's name (see reportError). The given commands are
// copied, not changed, so every NewApp starts from the same tree.
func prepareCommands(cmds []*cli.Command, parent string, st *appState) []*cli.Command {
	out := make([]*cli.Command, 0, len(cmds))
	for _, orig := range cmds {
		cmd := new(cli.Command)
		*cmd = *orig
		path := parent + " " + cmd.Name
		// Required flags are checked here, not by urfave/cli, which prints
		// the whole help page for a missing one.
		var required []string
		cmd.Flags = make([]cli.Flag, 0, len(orig.Flags)+1)
		for _, f := range orig.Flags {
			if sf, ok := f.(*cli.StringFlag); ok && sf.Required {
				nf := *sf
				nf.Required = false
				f = &nf
				required = append(required, sf.Name)
			}
			cmd.Flags = append(cmd.Flags, f)
		}
		if FindFlag(cmd.Flags, "verbose") == nil {
			cmd.Flags = append(cmd.Flags, VerboseFlag())
		}
		cmd.OnUsageError = usageErrorHandler(path, cmd)
		before := orig.Before
		cmd.Before = func(c *cli.Context) error {
			st.noteVerbose(c)
			if before != nil {
				return before(c)
			}
			return nil
		}
		cmd.Subcommands = nil
		if len(orig.Subcommands) > 0 {
			cmd.Subcommands = prepareCommands(orig.Subcommands, path, st)
		}
		action, subs, takesArgs := orig.Action, cmd.Subcommands, cmd.ArgsUsage != ""
		cmd.Action = func(c *cli.Context) error {
			if c.NArg() > 0 && !takesArgs {
				if len(subs) > 0 {
					return unknownCommand(path, c.Args().First(), subs)
				}
				return &usageError{cmd: path, msg: fmt.Sprintf("unexpected argument %q: every setting is a flag", c.Args().First())}
			}
			for _, name := range required {
				if !c.IsSet(name) {
					return &usageError{cmd: path, msg: fmt.Sprintf("--%s is required", name)}
				}
			}
			if action == nil {
				return cli.ShowSubcommandHelp(c)
			}
			if err := action(c); err != nil {
				var ue *usageError
				if errors.As(err, &ue) {
					if ue.cmd == "" {
						ue.cmd = path
					}
					return err
				}
				return &commandError{cmd: path, err: err}
			}
			return nil
		}
		out = append(out, cmd)
	}
	return out
}

// Verbose reports whether --verbose was given to the running command or any
// command above it (app is made by NewApp).
func Verbose(app *cli.App) bool { return stateOf(app).verbose }
